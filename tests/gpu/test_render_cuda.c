/* test_render_cuda.c - the fused CUDA renderer against the CPU reference (march.h's
 * vx_march per pixel): analytic box cases, fresh random grids for every decoder in
 * float32 and float16, the GPU occupancy grid against vx_occupancy_build_cpu, sparse
 * storage (apron blocks on the device) against dense bit for bit, and the sample scenes
 * named in $VX_TEST_SCENES. Needs a GPU: run by `make test-gpu`. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "backend.h"
#include "vx_common.h"
#include "cuda_render.h"
#include "gpu_test.h"
#include "mlp.h"
#include "sparse_grid.h"

/* Camera at eye looking at target, +Y up, horizontal fov in degrees (built here so the
 * test depends only on camera.h's ray rule). */
static void look_at(vx_camera *c, const float eye[3], const float tgt[3], float fov_deg, int w, int h) {
    float f[3] = {tgt[0] - eye[0], tgt[1] - eye[1], tgt[2] - eye[2]};
    vx_vec3 fw = vx_norm(vx_v3(f[0], f[1], f[2]));
    vx_vec3 up = fabsf(fw.y) > 0.99f ? vx_v3(0, 0, 1) : vx_v3(0, 1, 0);
    vx_vec3 r = vx_norm(vx_cross(fw, up)), u = vx_cross(r, fw), b = vx_scale(fw, -1);
    float m[12] = {r.x, u.x, b.x, eye[0], r.y, u.y, b.y, eye[1], r.z, u.z, b.z, eye[2]};
    memcpy(c->c2w, m, sizeof m);
    c->width = w;
    c->height = h;
    c->fov_x = fov_deg * 3.14159265f / 180.0f;
    c->focal = 0.5f * w / tanf(0.5f * c->fov_x);
}

/* The CPU reference frame: vx_march_run with the CPU op for every pixel, exactly as
 * render_cpu.c and render_cpu_reflect.c (per-pixel jitter, dense or sparse storage; the
 * reflect op where the mlp's input reads the density gradient). */
static void render_ref(const vx_march_params *m, const float *data, const vx_sparse *sparse,
                       const unsigned char *occ, const vx_camera *c, vx_frame *f) {
    f->samples = 0;
    for (int i = 0; i < c->height; i++)
        for (int j = 0; j < c->width; j++) {
            vx_vec3 o, d;
            vx_camera_ray(c, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
            size_t p = (size_t)i * c->width + j;
            float u = vx_pixel_jitter(m->jitter_seed, p);
            vx_ray_result r;
            if (vx_decoder_mlp_reflect(&m->dec)) { /* render_cpu_reflect.c's op: the network sees the gradient */
                vx_grid_reflect_op op = vx_grid_reflect_op_make(m, data, sparse);
                r = vx_march_run(m, occ, o, d, u, VX_MARCH_OP_OF(&op));
            } else {
                vx_grid_op op = vx_grid_op_make(m, data, sparse);
                r = vx_march_run(m, occ, o, d, u, VX_MARCH_OP_OF(&op));
            }
            for (int k = 0; k < 3; k++) f->rgb[3 * p + k] = r.rgb[k];
            f->alpha[p] = 1.0f - r.trans;
            f->depth[p] = r.depth;
            f->samples += r.samples;
        }
}

/* Max abs difference and PSNR (peak 1) over n values. */
static double max_diff(const float *a, const float *b, size_t n, double *psnr) {
    double mx = 0, se = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= mx)) mx = e; /* NaN propagates */
        se += e * e;
    }
    if (psnr) *psnr = se > 0 ? 10 * log10((double)n / se) : 999;
    return mx;
}

/* rgb, opacity within 2/255 or PSNR >= 50 dB; depth within 2/255 of the depth range. */
static void compare_frames(const char *what, const vx_frame *got, const vx_frame *ref) {
    size_t np = (size_t)got->width * got->height;
    double p_rgb, p_a, dmax = 1e-6;
    double e_rgb = max_diff(got->rgb, ref->rgb, np * 3, &p_rgb);
    double e_a = max_diff(got->alpha, ref->alpha, np, &p_a);
    for (size_t i = 0; i < np; i++) dmax = fmax(dmax, fabs(ref->depth[i]));
    double e_d = max_diff(got->depth, ref->depth, np, NULL) / dmax;
    print_message("%-34s rgb max %.2e (%.1f dB)  opacity max %.2e (%.1f dB)  depth rel %.2e  samples %lld / %lld\n",
                  what, e_rgb, p_rgb, e_a, p_a, e_d, got->samples, ref->samples);
    if (!(e_rgb <= 2.0 / 255 || p_rgb >= 50)) fail_msg("%s: colour differs by %g (%.1f dB)", what, e_rgb, p_rgb);
    if (!(e_a <= 2.0 / 255 || p_a >= 50)) fail_msg("%s: opacity differs by %g (%.1f dB)", what, e_a, p_a);
    if (!(e_d <= 2.0 / 255)) fail_msg("%s: depth differs by %g of its range", what, e_d);
}

/* March parameters for an nx x ny x nz x nc lattice placed by w2i (align corners). */
static void params(vx_march_params *m, int nx, int ny, int nz, int nc, const float w2i[12], float dt, int occ_b) {
    memset(m, 0, sizeof *m);
    m->nx = nx; m->ny = ny; m->nz = nz; m->nc = nc;
    memcpy(m->w2i, w2i, sizeof m->w2i);
    m->box_lo[0] = m->box_lo[1] = m->box_lo[2] = 0;
    m->box_hi[0] = nx - 1; m->box_hi[1] = ny - 1; m->box_hi[2] = nz - 1;
    m->dt = dt;
    m->bg[0] = 1.0f; m->bg[1] = 0.9f; m->bg[2] = 0.8f;
    m->occ_b = occ_b;
    int n[3] = {nx, ny, nz};
    for (int a = 0; a < 3; a++) m->occ_n[a] = occ_b ? (n[a] > 1 ? (n[a] - 1) / occ_b + 1 : 1) : 0;
}

static void grid_init(vx_grid *g, int nx, int ny, int nz, int nc) {
    memset(g, 0, sizeof *g);
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    g->data = calloc((size_t)nx * ny * nz * nc, sizeof(float));
    assert_non_null(g->data);
    g->align_corners = 1;
    snprintf(g->source, sizeof g->source, "random %dx%dx%dx%d", nx, ny, nz, nc);
}

/* The mlp decoder's two ways on the same volume: the deferred colour (render.cu, the
 * default, which rendered `dflt`) and the fused kernel (the network in the marching
 * thread), each against the CPU's `ref`; the same sums in the same order, so within float
 * rounding of each other; the same march, so the same opacity, depth and samples; a second
 * deferred frame (buffers reused) equal to the first bit for bit, and to `dflt`. */
static void check_deferred(const char *what, vx_cuda_volume *cv, const vx_camera *cam, const vx_frame *dflt,
                           const vx_frame *ref) {
    vx_frame d1, d2, fused;
    const vx_frame *got = &fused;
    OK(vx_frame_alloc(&d1, cam->width, cam->height, 1));
    OK(vx_frame_alloc(&d2, cam->width, cam->height, 1));
    OK(vx_frame_alloc(&fused, cam->width, cam->height, 1));
    vx_volume_set_mlp_deferred_cuda(cv, 0);
    OK(vx_render_cuda(cv, cam, &fused));
    vx_volume_set_mlp_deferred_cuda(cv, 1);
    OK(vx_render_cuda(cv, cam, &d1));
    OK(vx_render_cuda(cv, cam, &d2));
    char w2[128];
    snprintf(w2, sizeof w2, "%s fused", what);
    compare_frames(w2, &fused, ref);
    snprintf(w2, sizeof w2, "%s deferred", what);
    compare_frames(w2, &d1, ref);
    size_t npx = (size_t)cam->width * cam->height;
    assert_memory_equal(d1.rgb, dflt->rgb, npx * 3 * sizeof(float)); /* the default is deferred */
    size_t np = (size_t)cam->width * cam->height;
    double e = max_diff(d1.rgb, got->rgb, np * 3, NULL), ea = max_diff(d1.alpha, got->alpha, np, NULL);
    double ed = max_diff(d1.depth, got->depth, np, NULL);
    print_message("%-34s deferred vs fused: rgb max %.2e, opacity %.2e, depth %.2e, samples %lld / %lld\n", what, e,
                  ea, ed, d1.samples, got->samples);
    if (!(e <= 1e-5)) fail_msg("%s: deferred mlp colour %g away from the fused kernel's", what, e);
    if (!(ea <= 1e-6 && ed <= 1e-5)) fail_msg("%s: deferred opacity %g / depth %g away from fused", what, ea, ed);
    assert_int_equal(d1.samples, got->samples);
    assert_int_equal(d1.rays_hit, got->rays_hit);
    assert_memory_equal(d1.rgb, d2.rgb, np * 3 * sizeof(float));
    /* the network on the tensor cores (render --mlp-tensor-cores): the same march, so the
     * same opacity, depth and samples bit for bit; colours within TF32's rounding of the FP32
     * network's (1e-4 in the emulator; a misplaced fragment costs 0.1 and more) */
    if (vx_volume_set_mlp_tc_cuda(cv, 1)) {
        print_message("%-34s no tensor-core frame: %s\n", what, vx_errmsg());
        vx_clear_error();
    } else {
        OK(vx_render_cuda(cv, cam, &d2));
        OK(vx_volume_set_mlp_tc_cuda(cv, 0));
        snprintf(w2, sizeof w2, "%s tensor cores", what);
        compare_frames(w2, &d2, ref);
        double et = max_diff(d2.rgb, d1.rgb, np * 3, NULL);
        print_message("%-34s tensor cores vs FP32 network: rgb max %.2e\n", what, et);
        if (!(et > 0.0 && et <= 1e-3)) fail_msg("%s: tensor-core colour %g away from the FP32 network's", what, et);
        assert_memory_equal(d2.alpha, d1.alpha, np * sizeof(float));
        assert_memory_equal(d2.depth, d1.depth, np * sizeof(float));
        assert_int_equal(d2.samples, d1.samples);
    }
    vx_frame_free(&d1);
    vx_frame_free(&d2);
    vx_frame_free(&fused);
}

/* Render with CUDA (volume built from m) and the CPU reference, compare. The CPU uses
 * the device's occupancy grid so the sample counts must agree as well. */
static void check_volume(const char *what, const vx_march_params *m, const vx_grid *g, int half,
                         const vx_camera *cam) {
    vx_volume v;
    memset(&v, 0, sizeof v);
    v.mp = *m;
    v.data = g->data;
    vx_cuda_volume *cv = NULL;
    OK(vx_volume_upload_cuda(&cv, &v, g, half));
    size_t occ_count = m->occ_b ? (size_t)m->occ_n[0] * m->occ_n[1] * m->occ_n[2] : 0;
    unsigned char *occ = occ_count ? malloc(occ_count) : NULL;
    if (occ_count) OK(vx_volume_occupancy_cuda(cv, occ, occ_count));
    /* the reference sees what the device stores */
    vx_grid hg = *g;
    size_t cnt = vx_grid_count(g);
    if (half) {
        hg.data = malloc(cnt * sizeof(float));
        for (size_t i = 0; i < cnt; i++) hg.data[i] = vx_half_to_float(vx_float_to_half(g->data[i]));
    }
    if (occ_count) { /* the GPU's occupancy grid equals the CPU builder's */
        unsigned char *cocc = NULL;
        int dims[3];
        OK(vx_occupancy_build_cpu(&hg, &m->dec, m->occ_b, &cocc, dims));
        assert_memory_equal(dims, m->occ_n, sizeof dims);
        size_t diff = 0, empty = 0;
        for (size_t i = 0; i < occ_count; i++) { diff += cocc[i] != occ[i]; empty += !occ[i]; }
        print_message("%-34s occupancy: %zu of %zu cells empty, %zu differ from the CPU\n", what, empty, occ_count, diff);
        assert_int_equal(diff, 0);
        free(cocc);
    }
    vx_frame got, ref;
    OK(vx_frame_alloc(&got, cam->width, cam->height, 1));
    OK(vx_frame_alloc(&ref, cam->width, cam->height, 1));
    OK(vx_render_cuda(cv, cam, &got));
    render_ref(m, hg.data, hg.sparse, occ, cam, &ref);
    compare_frames(what, &got, &ref);
    /* same samples, give or take rounding at cell boundaries */
    assert_true(llabs(got.samples - ref.samples) <= 1 + ref.samples / 1000);
    if (m->dec.type == VX_DEC_MLP) check_deferred(what, cv, cam, &got, &ref);
    {   /* the same grid as sparse bricks (the exact drop rule): the CUDA frame equals the dense
         * CUDA frame; only samples of zero density may be skipped differently */
        vx_grid sg;
        OK(vx_sparse_from_dense(&hg, &m->dec, 0.0f, &sg));
        vx_volume sv;
        memset(&sv, 0, sizeof sv);
        sv.mp = *m;
        sv.sparse = sg.sparse;
        int dims[3];
        if (m->occ_b) OK(vx_occupancy_build_cpu(&sg, &m->dec, m->occ_b, &sv.occ, dims));
        sv.occ_count = occ_count;
        vx_cuda_volume *scv = NULL;
        OK(vx_volume_upload_cuda(&scv, &sv, &sg, half));
        vx_frame sp;
        OK(vx_frame_alloc(&sp, cam->width, cam->height, 1));
        OK(vx_render_cuda(scv, cam, &sp));
        if (m->dec.type == VX_DEC_MLP) check_deferred(what, scv, cam, &sp, &ref);
        size_t np = (size_t)cam->width * cam->height;
        double e = max_diff(sp.rgb, got.rgb, np * 3, NULL), ea = max_diff(sp.alpha, got.alpha, np, NULL);
        print_message("%-34s sparse: %zu of %zu bricks, rgb max %.2e opacity max %.2e vs dense\n", what,
                      sg.sparse->nbricks, (size_t)sg.sparse->bn[0] * sg.sparse->bn[1] * sg.sparse->bn[2], e, ea);
        /* gradient shading probes +-1/2 voxel past a sample's cell, so near a dropped brick it
         * can read the background instead of the (density-free) voxels there: colour only */
        double tol = m->dec.type == VX_DEC_SCALAR && m->dec.shade ? 1.0 / 255 : 1e-6;
        if (!(e <= tol && ea <= 1e-6)) fail_msg("%s: sparse storage renders %g (opacity %g) away from dense", what, e, ea);
        vx_frame_free(&sp);
        vx_volume_free_cuda(scv);
        free(sv.occ);
        vx_grid_free(&sg);
    }
    vx_frame_free(&got);
    vx_frame_free(&ref);
    if (half) free(hg.data);
    free(occ);
    vx_volume_free_cuda(cv);
}

/* ---- analytic: a constant box seen straight through ------------------------------- */

static void test_box_analytic(void **state) {
    (void)state;
    int n = 16;
    vx_grid g;
    grid_init(&g, n, n, n, 4);
    float sig = 0.15f, col[3] = {0.2f, 0.6f, 0.9f};
    for (size_t i = 0; i < (size_t)n * n * n; i++) {
        g.data[i * 4] = sig; g.data[i * 4 + 1] = col[0]; g.data[i * 4 + 2] = col[1]; g.data[i * 4 + 3] = col[2];
    }
    float w2i[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    float dts[] = {0.5f, 0.37f, 1.0f};
    for (int s = 0; s < 3; s++)
        for (int stopi = 0; stopi < 2; stopi++) {
            vx_march_params m;
            params(&m, n, n, n, 4, w2i, dts[s], s == 1 ? 0 : 4);
            m.dec.type = VX_DEC_RGBA;
            m.dec.density_scale = 1.0f;
            m.stop = stopi ? 0.5f : 0.0f;
            vx_camera cam;
            float eye[3] = {7.5f, 7.5f, 40.0f}, tgt[3] = {7.5f, 7.5f, 0.0f};
            look_at(&cam, eye, tgt, 60.0f, 33, 33);
            vx_volume v = {.mp = m, .data = g.data};
            vx_cuda_volume *cv = NULL;
            OK(vx_volume_upload_cuda(&cv, &v, &g, 0));
            vx_frame f;
            OK(vx_frame_alloc(&f, 33, 33, 1));
            OK(vx_render_cuda(cv, &cam, &f));
            /* expected, in double, with march.h's segmentation from t0 = 25 to t1 = 40 */
            double t0 = 25, t1 = 40, T = 1, depth = 0;
            int ns = vx_segment_count((float)(t1 - t0), m.dt, m.max_segments);
            for (int k = 0; k < ns; k++) {
                double ta = t0 + k * (double)m.dt, tb = k == ns - 1 ? t1 : ta + m.dt;
                double a = 1 - exp(-sig * (tb - ta));
                depth += T * a * 0.5 * (ta + tb);
                T *= 1 - a;
                if (T < m.stop) break;
            }
            size_t c = 16 * 33 + 16;
            if (!stopi) assert_true(fabs(T - exp(-sig * 15.0)) < 1e-6);
            for (int k = 0; k < 3; k++) assert_float_equal(f.rgb[3 * c + k], col[k] * (1 - T) + m.bg[k] * T, 2e-5);
            assert_float_equal(f.alpha[c], 1 - T, 2e-5);
            assert_float_equal(f.depth[c], depth, 1e-3);
            /* a corner ray misses the box: background, no opacity, no depth */
            for (int k = 0; k < 3; k++) assert_float_equal(f.rgb[k], m.bg[k], 0);
            assert_float_equal(f.alpha[0], 0, 0);
            assert_float_equal(f.depth[0], 0, 0);
            vx_frame_free(&f);
            vx_volume_free_cuda(cv);
        }
    vx_grid_free(&g);
}

/* ---- random grids, every decoder ---------------------------------------------------- */

/* Density from a few random blobs with zero outside them, so occupancy has empty cells;
 * other channels smooth random fields. */
static void random_grid(vx_grid *g, int dens_channel_scale) {
    float cx[4], cy[4], cz[4], rad[4];
    for (int b = 0; b < 4; b++) {
        cx[b] = frand(0.2f, 0.8f) * g->nx; cy[b] = frand(0.2f, 0.8f) * g->ny; cz[b] = frand(0.2f, 0.8f) * g->nz;
        rad[b] = frand(0.1f, 0.25f) * g->nx;
    }
    float ph[VX_MAX_CHANNELS];
    for (int c = 0; c < g->nc; c++) ph[c] = frand(0, 6.28f);
    for (int z = 0; z < g->nz; z++)
        for (int y = 0; y < g->ny; y++)
            for (int x = 0; x < g->nx; x++) {
                float *v = g->data + (((size_t)z * g->ny + y) * g->nx + x) * g->nc;
                float d = 0;
                for (int b = 0; b < 4; b++) {
                    float r = sqrtf((x - cx[b]) * (x - cx[b]) + (y - cy[b]) * (y - cy[b]) + (z - cz[b]) * (z - cz[b]));
                    d = fmaxf(d, rad[b] - r);
                }
                v[0] = d > 0 ? d * dens_channel_scale * 0.05f + frand(0, 0.02f) : -frand(0, 1);
                for (int c = 1; c < g->nc; c++) v[c] = 0.5f + 0.4f * sinf(0.3f * x + 0.2f * y - 0.25f * z + ph[c]);
            }
}

/* A random rotated, anisotropic placement of an nx x ny x nz lattice: world -> index
 * affine, world centre of the box and its bounding radius. */
static void placement(int nx, int ny, int nz, float w2i[12], float ctr[3], float *rad) {
    float th = frand(0, 6.28f), c = cosf(th), s = sinf(th), sc[3] = {0.05f, 0.06f, 0.045f};
    /* i2w = R * diag(sc) (rotation about y), translation t */
    double A[9] = {c * sc[0], 0, s * sc[2], 0, sc[1], 0, -s * sc[0], 0, c * sc[2]};
    double t[3] = {frand(-1, 1), frand(-1, 1), frand(-1, 1)}, inv[9];
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) + A[2] * (A[3] * A[7] - A[4] * A[6]);
    inv[0] = (A[4] * A[8] - A[5] * A[7]) / det; inv[1] = (A[2] * A[7] - A[1] * A[8]) / det; inv[2] = (A[1] * A[5] - A[2] * A[4]) / det;
    inv[3] = (A[5] * A[6] - A[3] * A[8]) / det; inv[4] = (A[0] * A[8] - A[2] * A[6]) / det; inv[5] = (A[2] * A[3] - A[0] * A[5]) / det;
    inv[6] = (A[3] * A[7] - A[4] * A[6]) / det; inv[7] = (A[1] * A[6] - A[0] * A[7]) / det; inv[8] = (A[0] * A[4] - A[1] * A[3]) / det;
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 3; k++) w2i[r * 4 + k] = (float)inv[r * 3 + k];
        w2i[r * 4 + 3] = (float)-(inv[r * 3] * t[0] + inv[r * 3 + 1] * t[1] + inv[r * 3 + 2] * t[2]);
    }
    double h[3] = {(nx - 1) * 0.5, (ny - 1) * 0.5, (nz - 1) * 0.5};
    for (int r = 0; r < 3; r++) ctr[r] = (float)(A[r * 3] * h[0] + A[r * 3 + 1] * h[1] + A[r * 3 + 2] * h[2] + t[r]);
    *rad = (float)sqrt(h[0] * sc[0] * h[0] * sc[0] + h[1] * sc[1] * h[1] * sc[1] + h[2] * sc[2] * h[2] * sc[2]);
}

static void test_random_decoders(void **state) {
    (void)state;
    const int w = 96, h = 80;
    struct { const char *name; int type, deg, nc, dact, cact; } cases[] = {
        {"rgba relu/clamp", VX_DEC_RGBA, 0, 4, VX_DACT_RELU, VX_CACT_CLAMP},
        {"rgba softplus/sigmoid", VX_DEC_RGBA, 0, 4, VX_DACT_SOFTPLUS, VX_CACT_SIGMOID},
        {"sh0", VX_DEC_SH, 0, 4, VX_DACT_RELU, VX_CACT_CLAMP},
        {"sh1", VX_DEC_SH, 1, 13, VX_DACT_RELU, VX_CACT_PLENOXELS},
        {"sh2", VX_DEC_SH, 2, 28, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"sh3", VX_DEC_SH, 3, 49, VX_DACT_RELU, VX_CACT_PLENOXELS},
        {"scalar + tf", VX_DEC_SCALAR, 0, 1, VX_DACT_RELU, VX_CACT_CLAMP},
        {"mlp 1 hidden layer", VX_DEC_MLP, 1, VX_MLP_CHANNELS, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"mlp 2 hidden layers", VX_DEC_MLP, 2, VX_MLP_CHANNELS, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"mlp 1 hidden layer, reflected", VX_DEC_MLP, 1, VX_MLP_CHANNELS, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"mlp 2 hidden layers, reflected", VX_DEC_MLP, 2, VX_MLP_CHANNELS, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"mlp 1 hidden layer, view+reflected", VX_DEC_MLP, 1, VX_MLP_CHANNELS, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"mlp 2 hidden layers, view+reflected", VX_DEC_MLP, 2, VX_MLP_CHANNELS, VX_DACT_RELU, VX_CACT_SIGMOID},
    };
    float mlp[VX_MLP_MAX_WEIGHTS]; /* the mlp cases' weights: fresh per run, PyTorch's initial range, x3 */
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        int nx = 40 + (int)frand(0, 9), ny = 36 + (int)frand(0, 9), nz = 44 + (int)frand(0, 9);
        float w2i[12], ctr[3], rad;
        placement(nx, ny, nz, w2i, ctr, &rad);
        vx_grid g;
        grid_init(&g, nx, ny, nz, cases[t].nc);
        random_grid(&g, 1);
        vx_decoder dec;
        memset(&dec, 0, sizeof dec);
        dec.type = cases[t].type;
        dec.sh_degree = cases[t].deg;
        dec.density_act = cases[t].dact;
        dec.color_act = cases[t].cact;
        dec.density_scale = 4.0f;
        if (dec.type == VX_DEC_MLP) {
            vx_mlp_init(cases[t].deg, g_seed + (unsigned)t, mlp);
            for (int i = 0; i < vx_mlp_weight_count(cases[t].deg); i++) mlp[i] *= 3.0f; /* colours across [0, 1] */
            vx_decoder_set_mlp(&dec, cases[t].deg, mlp);
            dec.shade = strstr(cases[t].name, "view+reflected") ? VX_MLP_DIR_BOTH /* six probes more */
                        : strstr(cases[t].name, "reflected")    ? VX_MLP_DIR_REFLECTED
                                                                : VX_MLP_DIR_VIEW;
        }
        if (dec.type == VX_DEC_SCALAR) {
            dec.shade = 1; /* gradient shading: six more fetches per sample on both sides */
            dec.window_lo = 0.0f;
            dec.window_hi = 0.5f;
            float tf[4][5] = {{0, 0, 0, 0, 0}, {0.2f, 1, 0.3f, 0.1f, 0}, {0.5f, 0.2f, 0.9f, 0.4f, 2.0f}, {1, 1, 1, 1, 5.0f}};
            dec.tf_n = 4;
            memcpy(dec.tf, tf, sizeof tf);
        }
        for (int half = 0; half < 2; half++)
            for (int skip = 0; skip < 2; skip++) {
                vx_march_params m;
                params(&m, nx, ny, nz, cases[t].nc, w2i, frand(0.02f, 0.05f), skip ? (half ? 4 : 8) : 0);
                m.dec = dec;
                m.stop = skip ? 1e-3f : 0.0f;
                m.jitter_seed = half ? 0u : 1u + (unsigned)t; /* per-pixel offsets on the f32 runs */
                vx_camera cam;
                vx_vec3 dir = vx_norm(vx_v3(frand(-1, 1), frand(0.2f, 1), frand(-1, 1)));
                float eye[3] = {ctr[0] + 2.2f * rad * dir.x, ctr[1] + 2.2f * rad * dir.y, ctr[2] + 2.2f * rad * dir.z};
                look_at(&cam, eye, ctr, 40.0f, w, h);
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", cases[t].name, half ? "f16" : "f32", skip ? "skip" : "no-skip");
                check_volume(what, &m, &g, half, &cam);
            }
        vx_grid_free(&g);
    }
}

static void test_bad_params(void **state) {
    (void)state;
    vx_grid g;
    grid_init(&g, 4, 4, 4, 4);
    float w2i[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    vx_volume v;
    memset(&v, 0, sizeof v);
    params(&v.mp, 5, 4, 4, 4, w2i, 0.5f, 0); /* nx does not match the grid */
    v.mp.dec.type = VX_DEC_RGBA;
    vx_cuda_volume *cv = (vx_cuda_volume *)&g;
    assert_int_equal(vx_volume_upload_cuda(&cv, &v, &g, 0), -1);
    assert_null(cv);
    assert_non_null(strstr(vx_errmsg(), "do not match"));
    params(&v.mp, 4, 4, 4, 4, w2i, 0.5f, 0);
    v.mp.dec.type = VX_DEC_SH;
    v.mp.dec.sh_degree = 2; /* needs 28 channels */
    assert_int_equal(vx_volume_upload_cuda(&cv, &v, &g, 0), -1);
    assert_non_null(strstr(vx_errmsg(), "channels"));
    vx_grid_free(&g);
}

/* ---- sample scenes: the backends through vx_renderer -------------------------------- */

static void test_scenes(void **state) {
    (void)state;
    const char *list = getenv("VX_TEST_SCENES");
    if (!list || !*list) {
        print_message("VX_TEST_SCENES is not set: no sample scenes checked\n");
        skip();
    }
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *path = strtok(buf, " "); path; path = strtok(NULL, " ")) {
        vx_scene s;
        vx_load_opts lo;
        memset(&lo, 0, sizeof lo);
        OK(vx_scene_load(path, &lo, &s));
        for (int half = 0; half < 2; half++) {
            vx_render_opts o;
            vx_render_opts_default(&o);
            o.half = half;
            o.want_depth = 1;
            o.mlp_tc = -1; /* an mlp scene's network in FP32, as the CPU's (the tensor cores: check_deferred) */
            vx_renderer *rc = NULL, *rg = NULL;
            OK(vx_renderer_create(&rc, &s, &o, VX_BACKEND_CPU));
            OK(vx_renderer_create(&rg, &s, &o, VX_BACKEND_CUDA));
            double eye[3], tgt[3], up[3], fov;
            vx_scene_default_camera(&s, eye, tgt, up, &fov);
            vx_camera cam;
            OK(vx_camera_look_at(&cam, eye, tgt, up, fov, 160, 120));
            vx_frame a, b;
            OK(vx_frame_alloc(&a, 160, 120, 1));
            OK(vx_frame_alloc(&b, 160, 120, 1));
            OK(vx_renderer_render(rc, &cam, &a));
            OK(vx_renderer_render(rg, &cam, &b));
            char what[160];
            snprintf(what, sizeof what, "%.100s%s", s.name, half ? " --half" : "");
            if (half) { /* float16 storage against the float32 CPU: report, bound loosely */
                double p;
                double e = max_diff(b.rgb, a.rgb, (size_t)160 * 120 * 3, &p);
                print_message("%-34s rgb max %.2e (%.1f dB) against the float32 CPU\n", what, e, p);
                assert_true(p >= 30);
            } else {
                compare_frames(what, &b, &a);
                assert_true(llabs(a.samples - b.samples) <= 1 + a.samples / 1000);
            }
            vx_frame_free(&a);
            vx_frame_free(&b);
            vx_renderer_destroy(rc);
            vx_renderer_destroy(rg);
        }
        vx_scene_free(&s);
    }
}

/* ---- sparse storage: the apron blocks against the dense lattice, bit for bit ------------- */

/* Random bricks (each present with probability 0.4) and a background with density, so cells
 * at every kind of brick face (present next to absent, absent next to absent) carry light;
 * values rounded through float16 when half, so both uploads store the same numbers. */
static void random_sparse_grid(vx_grid *g, int nx, int ny, int nz, int nc, int half) {
    memset(g, 0, sizeof *g);
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    g->align_corners = 1;
    snprintf(g->source, sizeof g->source, "random sparse %dx%dx%dx%d", nx, ny, nz, nc);
    int bn[3] = {(nx + 7) / 8, (ny + 7) / 8, (nz + 7) / 8};
    size_t ntab = (size_t)bn[0] * bn[1] * bn[2], nb = 0;
    int32_t *tab = malloc(ntab * sizeof *tab);
    for (size_t t = 0; t < ntab; t++) tab[t] = frand(0, 1) < 0.4f ? (int32_t)nb++ : -1;
    g->sparse = malloc(sizeof *g->sparse);
    assert_non_null(g->sparse);
    OK(vx_sparse_alloc(g->sparse, nx, ny, nz, nc, nb, "random sparse"));
    memcpy(g->sparse->table, tab, ntab * sizeof *tab);
    free(tab);
    for (size_t i = 0; i < nb * VX_BRICK_VOXELS * (size_t)nc; i++)
        g->sparse->pool[i] = i % (size_t)nc == 0 ? frand(-0.5f, 1.5f) : frand(-2, 2);
    for (int c = 0; c < nc; c++) g->sparse->background[c] = c == 0 ? 0.4f : frand(-1, 1);
    if (half) {
        for (size_t i = 0; i < nb * VX_BRICK_VOXELS * (size_t)nc; i++)
            g->sparse->pool[i] = vx_half_to_float(vx_float_to_half(g->sparse->pool[i]));
        for (int c = 0; c < nc; c++) g->sparse->background[c] = vx_half_to_float(vx_float_to_half(g->sparse->background[c]));
    }
}

/* Upload (occupancy from the host for sparse, as volume.c does) and render one frame. */
static void render_grid(const vx_march_params *m, const vx_grid *g, int half, const vx_camera *cam, vx_frame *f) {
    vx_volume v;
    memset(&v, 0, sizeof v);
    v.mp = *m;
    v.data = g->data;
    v.sparse = g->sparse;
    int dims[3];
    if (g->sparse && m->occ_b) {
        OK(vx_occupancy_build_cpu(g, &m->dec, m->occ_b, &v.occ, dims));
        v.occ_count = (size_t)dims[0] * dims[1] * dims[2];
    }
    vx_cuda_volume *cv = NULL;
    OK(vx_volume_upload_cuda(&cv, &v, g, half));
    OK(vx_frame_alloc(f, cam->width, cam->height, 1));
    OK(vx_render_cuda(cv, cam, f));
    vx_volume_free_cuda(cv);
    free(v.occ);
}

static void test_sparse_exact(void **state) {
    (void)state;
    const int w = 80, h = 64;
    struct { const char *name; int type, deg, nc, dact, cact; } cases[] = {
        {"rgba", VX_DEC_RGBA, 0, 4, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"sh1", VX_DEC_SH, 1, 13, VX_DACT_SOFTPLUS, VX_CACT_PLENOXELS},
        {"sh2", VX_DEC_SH, 2, 28, VX_DACT_RELU, VX_CACT_SIGMOID},
        {"scalar shaded", VX_DEC_SCALAR, 0, 1, VX_DACT_RELU, VX_CACT_CLAMP},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++)
        for (int half = 0; half < 2; half++) {
            int nx = 17 + (int)frand(0, 20), ny = 9 + (int)frand(0, 20), nz = 24 + (int)frand(0, 20);
            float w2i[12], ctr[3], rad;
            placement(nx, ny, nz, w2i, ctr, &rad);
            vx_grid sg, dg;
            random_sparse_grid(&sg, nx, ny, nz, cases[t].nc, half);
            OK(vx_sparse_to_dense(&sg, &dg));
            vx_march_params m;
            params(&m, nx, ny, nz, cases[t].nc, w2i, frand(0.02f, 0.05f), half ? 4 : 8);
            memset(&m.dec, 0, sizeof m.dec);
            m.dec.type = cases[t].type;
            m.dec.sh_degree = cases[t].deg;
            m.dec.density_act = cases[t].dact;
            m.dec.color_act = cases[t].cact;
            m.dec.density_scale = 3.0f;
            if (m.dec.type == VX_DEC_SCALAR) {
                m.dec.shade = 1;
                m.dec.window_lo = 0.0f;
                m.dec.window_hi = 1.0f;
                float tf[3][5] = {{0, 0, 0, 0, 0}, {0.5f, 0.2f, 0.9f, 0.4f, 1.0f}, {1, 1, 1, 1, 3.0f}};
                m.dec.tf_n = 3;
                memcpy(m.dec.tf, tf, sizeof tf);
            }
            m.stop = 1e-3f;
            m.jitter_seed = 7u + (unsigned)t;
            vx_camera cam;
            vx_vec3 dir = vx_norm(vx_v3(frand(-1, 1), frand(0.2f, 1), frand(-1, 1)));
            float eye[3] = {ctr[0] + 2.2f * rad * dir.x, ctr[1] + 2.2f * rad * dir.y, ctr[2] + 2.2f * rad * dir.z};
            look_at(&cam, eye, ctr, 40.0f, w, h);
            vx_frame fd, fs;
            render_grid(&m, &dg, half, &cam, &fd);
            render_grid(&m, &sg, half, &cam, &fs);
            size_t np = (size_t)w * h;
            double e = max_diff(fs.rgb, fd.rgb, np * 3, NULL), ea = max_diff(fs.alpha, fd.alpha, np, NULL);
            double ed = max_diff(fs.depth, fd.depth, np, NULL);
            print_message("%-14s %s %dx%dx%d: %zu of %zu bricks; sparse - dense: rgb %.1e opacity %.1e depth %.1e, "
                          "samples %lld / %lld\n", cases[t].name, half ? "f16" : "f32", nx, ny, nz, sg.sparse->nbricks,
                          (size_t)sg.sparse->bn[0] * sg.sparse->bn[1] * sg.sparse->bn[2], e, ea, ed, fs.samples, fd.samples);
            if (!(e == 0 && ea == 0 && ed == 0 && fs.samples == fd.samples))
                fail_msg("%s %s: sparse and dense storage render different frames", cases[t].name, half ? "f16" : "f32");
            assert_true(fd.samples > 0);
            vx_frame_free(&fd);
            vx_frame_free(&fs);
            vx_grid_free(&sg);
            vx_grid_free(&dg);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_analytic),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_random_decoders),
        cmocka_unit_test(test_sparse_exact),
        cmocka_unit_test(test_scenes),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
