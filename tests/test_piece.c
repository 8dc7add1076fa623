/* test_piece.c - sort-last without MPI: random grids split into 1..7 pieces (piece.h),
 * each piece cut or read from a .npy / sparse .npz, rendered as a partial image with the
 * CPU renderer and composited front to back in the plan's order; the result must equal the
 * single-process image (cameras outside and inside the volume, jitter, sparse storage,
 * shaded scalar volumes, mlp features seeing the reflected direction), and with skipping and early termination off the pieces must take
 * exactly the single-process samples between them (every sample owned once). */
#include "vx_test.h"

#include <math.h>

#include "backend.h"
#include "mlp.h"
#include "npy.h"
#include "piece.h"
#include "sparse_grid.h"

/* tests/gpu/test_piece_cuda.c includes this file with VX_PIECE_CUDA 1: the same checks on
 * the CUDA renderer (pieces and reference both on the device). */
#ifndef VX_PIECE_CUDA
#define VX_PIECE_CUDA 0
#endif

/* One frame of s with options o through the backend under test; *w2i gets the volume's map. */
static void render(const vx_scene *s, const vx_render_opts *o, const vx_camera *cam, vx_frame *f, float w2i[12]) {
    vx_renderer *r;
    if (vx_renderer_create(&r, s, o, VX_PIECE_CUDA ? VX_BACKEND_CUDA : VX_BACKEND_CPU)) fail_msg("%s", vx_errmsg());
    assert_int_equal(vx_frame_alloc(f, cam->width, cam->height, o->want_depth), 0);
    if (vx_renderer_render(r, cam, f)) fail_msg("%s", vx_errmsg());
    if (w2i) memcpy(w2i, vx_renderer_volume(r)->mp.w2i, 12 * sizeof(float));
    vx_renderer_destroy(r);
}

/* A random lattice with blobs of density in empty space: rgba (nc 4), scalar (nc 1), or
 * mlp features (nc 16) whose network sees the reflected direction, alone or beside the view
 * direction (mlp_mode; six probes a sample, half a voxel behind a piece's low faces too, as
 * the scalar shading's). */
static int mlp_mode = VX_MLP_DIR_REFLECTED;
static void make_scene(vx_scene *s, int nc) {
    memset(s, 0, sizeof *s);
    int n[3];
    for (int a = 0; a < 3; a++) n[a] = 9 + (int)(vx_test_rand() * 32);
    assert_int_equal(vx_grid_alloc(&s->grid, n[0], n[1], n[2], nc, "random"), 0);
    double c[4][3], r[4];
    for (int b = 0; b < 4; b++) {
        for (int a = 0; a < 3; a++) c[b][a] = vx_test_uniform(0, n[a]);
        r[b] = vx_test_uniform(2, 8);
    }
    for (int z = 0; z < n[2]; z++)
        for (int y = 0; y < n[1]; y++)
            for (int x = 0; x < n[0]; x++) {
                float *v = s->grid.data + (((size_t)z * n[1] + y) * n[0] + x) * nc;
                double d = 0;
                for (int b = 0; b < 4; b++) {
                    double q = ((x - c[b][0]) * (x - c[b][0]) + (y - c[b][1]) * (y - c[b][1]) + (z - c[b][2]) * (z - c[b][2])) / (r[b] * r[b]);
                    d += q < 1 ? (1 - q) * vx_test_uniform(0.5, 1.5) : 0;
                }
                v[0] = (float)(d * (nc == 1 ? 1.0 : 3.0));
                for (int k = 1; k < nc; k++) v[k] = (float)vx_test_rand();
            }
    double lo[3] = {-1, -0.8, -1.2}, hi[3] = {1.1, 0.9, 1};
    vx_grid_set_bbox(&s->grid, lo, hi, vx_test_rand() < 0.5);
    s->step = (float)vx_test_uniform(0.3, 0.9);
    s->background[0] = 0.9f; s->background[1] = 0.3f; s->background[2] = 0.6f;
    if (nc == 1) {
        assert_int_equal(vx_scalar_decoder_init(&s->dec, &s->grid, NULL), 0);
        s->dec.shade = 1;
    } else if (nc == VX_MLP_CHANNELS) {
        int layers = 1 + (vx_test_rand() < 0.5);
        s->mlp = malloc(VX_MLP_MAX_WEIGHTS * sizeof(float));
        assert_non_null(s->mlp);
        vx_mlp_init(layers, (unsigned)(vx_test_rand() * 1e9), s->mlp);
        for (int i = 0; i < vx_mlp_weight_count(layers); i++) s->mlp[i] *= 3.0f; /* colours across [0, 1] */
        s->dec.type = VX_DEC_MLP;
        s->dec.density_scale = 1.0f;
        s->dec.color_act = VX_CACT_SIGMOID;
        vx_decoder_set_mlp(&s->dec, layers, s->mlp);
        s->dec.shade = mlp_mode; /* vx_decoder_mlp_reflect */
    } else {
        s->dec.type = VX_DEC_RGBA;
        s->dec.density_scale = 1.0f;
        s->dec.color_act = VX_CACT_CLAMP;
    }
}

static void copy_grid(const vx_grid *g, vx_grid *out, int sparse) {
    if (sparse) { assert_int_equal(vx_sparse_from_dense(g, NULL, 0.0f, out), 0); return; }
    assert_int_equal(vx_grid_alloc(out, g->nx, g->ny, g->nz, g->nc, g->source), 0);
    memcpy(out->data, g->data, vx_grid_count(g) * sizeof(float));
    memcpy(out->i2w, g->i2w, sizeof g->i2w);
    out->align_corners = g->align_corners;
}

/* A camera outside (orbit) or inside the volume (eye in the box, random direction). */
static void make_camera(const vx_scene *s, int inside, vx_camera *cam) {
    double lo[3], hi[3], eye[3], target[3], up[3] = {0, 1, 0};
    vx_grid_world_bounds(&s->grid, lo, hi);
    for (int a = 0; a < 3; a++) {
        double c = 0.5 * (lo[a] + hi[a]), h = 0.5 * (hi[a] - lo[a]);
        eye[a] = inside ? c + vx_test_uniform(-0.7, 0.7) * h : c + vx_test_uniform(-1, 1) * 3.0;
        target[a] = inside ? eye[a] + vx_test_uniform(-1, 1) : c + vx_test_uniform(-0.2, 0.2) * h;
    }
    if (!inside) eye[2] += eye[2] >= 0.5 * (lo[2] + hi[2]) ? 3.0 : -3.0;
    assert_int_equal(vx_camera_look_at(cam, eye, target, up, inside ? 90.0 : 40.0, 23, 19), 0);
}

typedef struct {
    float max_err;
    long long samples;
} result;

/* Render s split into `count` pieces (from = 0: cut from a copy of the grid; 1: read from
 * a .npy; 2: from a sparse .npz) and compare with ref. */
static result split_render(const vx_scene *s, const vx_camera *cam, const vx_render_opts *o, int count, int sparse,
                           int from, const vx_frame *ref) {
    int stride = 5, lo_margin = vx_decoder_probes(&s->dec);
    size_t npix = (size_t)cam->width * cam->height;
    float **parts = calloc((size_t)count, sizeof *parts), *out = malloc(npix * stride * sizeof(float));
    int *order = malloc((size_t)count * sizeof *order);
    assert_true(parts && out && order);
    char path[512];
    if (from) {
        snprintf(path, sizeof path, "%s/grid.%s", vx_test_tmpdir(), from == 1 ? "npy" : "npz");
        vx_grid sp = {0};
        if (from == 1) assert_int_equal(vx_npy_write_grid(path, &s->grid, 0), 0);
        else {
            copy_grid(&s->grid, &sp, 1);
            assert_int_equal(vx_sparse_write(path, &sp, 0, vx_test_rand() < 0.5 ? VX_SPARSE_STORE : VX_SPARSE_DEFLATE), 0);
            vx_grid_free(&sp);
        }
    }
    result r = {0, 0};
    vx_piece_plan plan = {0};
    for (int i = 0; i < count; i++) {
        vx_scene ps = *s;
        memset(&ps.grid, 0, sizeof ps.grid);
        int blo[3], bhi[3];
        if (from) {
            vx_piece_req req = {.count = count, .index = i, .lo_margin = lo_margin}; /* as vx_scene_load sets it */
            int rc = from == 1 ? vx_piece_load_npy(path, &req, &ps.grid) : vx_sparse_load_piece(path, &req, &ps.grid);
            assert_int_equal(rc, 0);
            assert_int_equal(req.done, 1);
            memcpy(ps.grid.i2w, s->grid.i2w, sizeof s->grid.i2w);
            ps.grid.align_corners = s->grid.align_corners;
            if (i == 0) plan = req.plan;
            else vx_piece_plan_free(&req.plan);
        } else {
            copy_grid(&s->grid, &ps.grid, sparse);
            if (i == 0) {
                uint32_t *w;
                assert_int_equal(vx_piece_weights(&ps.grid, &w), 0);
                int n[3] = {s->grid.nx, s->grid.ny, s->grid.nz};
                assert_int_equal(vx_piece_plan_make(&plan, n, count, w), 0);
                free(w);
            }
            vx_piece_store_box(&plan, i, lo_margin, blo, bhi);
            assert_int_equal(vx_piece_cut(&ps.grid, blo, bhi), 0);
        }
        vx_render_opts po = *o;
        po.own = 1;
        vx_piece_own_box(&plan, i, po.own_lo, po.own_hi);
        po.has_background = 1;
        po.background[0] = po.background[1] = po.background[2] = 0.0f;
        po.want_depth = 1;
        vx_frame f;
        float w2i[12];
        render(&ps, &po, cam, &f, w2i);
        r.samples += f.samples;
        parts[i] = malloc(npix * stride * sizeof(float));
        assert_non_null(parts[i]);
        vx_piece_pack(&f, stride, parts[i]);
        if (i == 0) {
            vx_vec3 o3 = vx_affine_point(w2i, vx_v3(cam->c2w[3], cam->c2w[7], cam->c2w[11]));
            float eye[3] = {o3.x, o3.y, o3.z};
            vx_piece_order(&plan, eye, order);
        }
        vx_frame_free(&f);
        vx_grid_free(&ps.grid);
    }
    /* every piece appears once in the order */
    for (int i = 0; i < count; i++) {
        int seen = 0;
        for (int k = 0; k < count; k++) seen += order[k] == i;
        assert_int_equal(seen, 1);
    }
    vx_piece_composite((const float *const *)parts, order, count, npix, stride, out);
    vx_frame f;
    assert_int_equal(vx_frame_alloc(&f, cam->width, cam->height, 1), 0);
    float bg[3];
    for (int k = 0; k < 3; k++) bg[k] = o->has_background ? o->background[k] : s->background[k];
    vx_piece_unpack(out, stride, bg, &f, 0, cam->height);
    for (size_t p = 0; p < npix; p++) {
        for (int k = 0; k < 3; k++) r.max_err = fmaxf(r.max_err, fabsf(f.rgb[3 * p + k] - ref->rgb[3 * p + k]));
        r.max_err = fmaxf(r.max_err, fabsf(f.alpha[p] - ref->alpha[p]));
        r.max_err = fmaxf(r.max_err, fabsf(f.depth[p] - ref->depth[p]) / 10.0f);
    }
    vx_frame_free(&f);
    for (int i = 0; i < count; i++) free(parts[i]);
    free(parts);
    free(out);
    free(order);
    vx_piece_plan_free(&plan);
    return r;
}

static void run_case(int nc, int sparse, int from, int inside, int exact) {
    vx_scene s;
    make_scene(&s, nc);
    vx_camera cam;
    make_camera(&s, inside, &cam);
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.want_depth = 1;
    o.threads = 2;
    if (exact) { o.stop = 0.0f; o.no_skip = 1; }
    if (vx_test_rand() < 0.3) o.jitter = 1 + (unsigned)(vx_test_rand() * 1000);
    vx_frame ref;
    render(&s, &o, &cam, &ref, NULL);
    static const int counts[] = {1, 2, 3, 4, 5, 7};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
        result r = split_render(&s, &cam, &o, counts[k], sparse, from, &ref);
        if (r.max_err > 2e-4f || (exact && r.samples != ref.samples))
            fail_msg("%dx%dx%d nc %d sparse %d from %d inside %d, %d pieces: max error %g, samples %lld vs %lld",
                     s.grid.nx, s.grid.ny, s.grid.nz, nc, sparse, from, inside, counts[k], r.max_err, r.samples,
                     ref.samples);
    }
    vx_frame_free(&ref);
    vx_scene_free(&s);
}

static void test_plan_partitions(void **state) {
    (void)state;
    for (int t = 0; t < 20; t++) {
        int n[3] = {1 + (int)(vx_test_rand() * 90), 1 + (int)(vx_test_rand() * 90), 1 + (int)(vx_test_rand() * 90)};
        int count = 1 + (int)(vx_test_rand() * 12);
        vx_piece_plan p;
        assert_int_equal(vx_piece_plan_make(&p, n, count, NULL), 0);
        /* the pieces' brick boxes tile the table; random points have exactly one owner */
        size_t bricks = 0, total = (size_t)p.bn[0] * p.bn[1] * p.bn[2];
        for (int i = 0; i < count; i++) {
            size_t k = 1;
            for (int a = 0; a < 3; a++) k *= (size_t)(p.box[i][2 * a + 1] - p.box[i][2 * a]);
            bricks += k;
        }
        assert_int_equal(bricks, total);
        for (int q = 0; q < 200; q++) {
            float pt[3];
            for (int a = 0; a < 3; a++) pt[a] = (float)vx_test_uniform(-5, n[a] + 5);
            if (q % 3 == 0) pt[q % 3 == 0 ? (q / 3) % 3 : 0] = (float)(8 * (int)(vx_test_rand() * (p.bn[q % 2] + 1))); /* on a plane */
            int owners = 0;
            for (int i = 0; i < count; i++) { /* through the march's own test */
                vx_march_params m;
                memset(&m, 0, sizeof m);
                m.own = 1;
                vx_piece_own_box(&p, i, m.own_lo, m.own_hi);
                owners += vx_march_owns(&m, vx_v3(pt[0], pt[1], pt[2]));
            }
            assert_int_equal(owners, 1);
        }
        vx_piece_plan_free(&p);
    }
}

static void test_balance(void **state) {
    (void)state;
    /* weight only in one corner: the split follows the stored voxels, not the volume */
    int n[3] = {128, 64, 64}, bn[3] = {16, 8, 8};
    uint32_t *w = calloc(16 * 8 * 8, sizeof *w);
    for (int z = 0; z < 8; z++)
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 4; x++) w[(z * bn[1] + y) * bn[0] + x] = 512;
    vx_piece_plan p;
    assert_int_equal(vx_piece_plan_make(&p, n, 4, w), 0);
    for (int i = 0; i < 4; i++) assert_int_equal(p.weight[i], 4 * 8 * 8 * 512 / 4);
    vx_piece_plan_free(&p);
    free(w);
}

static void test_outside_rgba(void **state) { (void)state; for (int t = 0; t < 3; t++) run_case(4, 0, 0, 0, t == 0); }
static void test_inside_rgba(void **state) { (void)state; for (int t = 0; t < 3; t++) run_case(4, 0, 0, 1, t == 0); }
static void test_sparse(void **state) { (void)state; run_case(4, 1, 0, 0, 1); run_case(4, 1, 0, 1, 0); }
static void test_scalar_shaded(void **state) { (void)state; run_case(1, 0, 0, 0, 1); run_case(1, 1, 0, 1, 0); }
static void test_from_npy(void **state) { (void)state; run_case(4, 0, 1, 0, 1); run_case(4, 0, 1, 1, 0); }
static void test_from_npz(void **state) { (void)state; run_case(4, 1, 2, 0, 1); run_case(4, 1, 2, 1, 0); }
static void test_mlp_reflected(void **state) {
    (void)state;
    for (mlp_mode = VX_MLP_DIR_REFLECTED; mlp_mode <= VX_MLP_DIR_BOTH; mlp_mode++) {
        run_case(VX_MLP_CHANNELS, 0, 0, 0, 1);
        run_case(VX_MLP_CHANNELS, 1, 0, 1, 0);
        run_case(VX_MLP_CHANNELS, 0, 1, 0, 1);
        run_case(VX_MLP_CHANNELS, 1, 2, 0, 0);
    }
    mlp_mode = VX_MLP_DIR_REFLECTED;
}

/* The CUDA build of this file: a usable device or the whole group fails with why. */
static int device_setup(void **state) {
    (void)state;
    vx_backend_kind got;
    char info[256];
    if (vx_backend_resolve(VX_BACKEND_CUDA, "", &got, info, sizeof info)) {
        print_error("%s\n", vx_errmsg());
        return -1;
    }
    print_message("device: %s\n", info);
    return 0;
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_partitions), cmocka_unit_test(test_balance),
        cmocka_unit_test(test_outside_rgba),    cmocka_unit_test(test_inside_rgba),
        cmocka_unit_test(test_sparse),          cmocka_unit_test(test_scalar_shaded),
        cmocka_unit_test(test_from_npy),        cmocka_unit_test(test_from_npz),
        cmocka_unit_test(test_mlp_reflected),
    };
    return cmocka_run_group_tests(tests, VX_PIECE_CUDA ? device_setup : NULL, NULL);
}
