/* test_render.c - the CPU renderer against closed forms: a box of constant density and
 * colour renders to c(1 - e^{-sigma L}) + bg e^{-sigma L} for every pixel, for the rgba,
 * sh and scalar decoders, several cameras, oblique placements and both centrings; and
 * empty-space skipping changes no pixel. */
#include "vx_test.h"

#include <math.h>

#include "backend.h"
#include "render.h"

/* A scene whose every voxel holds `vals` (nc channels), placed by i2w. */
static void make_const_scene(vx_scene *s, int n, int nc, const float *vals) {
    memset(s, 0, sizeof *s);
    assert_int_equal(vx_grid_alloc(&s->grid, n, n + 1, n + 2, nc, "const"), 0);
    for (size_t i = 0; i < (size_t)n * (n + 1) * (n + 2); i++)
        for (int c = 0; c < nc; c++) s->grid.data[i * nc + c] = vals[c];
    s->step = 0.5f;
    s->background[0] = 0.2f; s->background[1] = 0.5f; s->background[2] = 0.9f;
}

/* Chord length of a world ray through the grid's box, in double precision. */
static double chord(const vx_grid *g, const double o[3], const double d[3]) {
    const double *m = g->i2w;
    /* invert the 3x3 part */
    double a = m[0], b = m[1], c = m[2], dd = m[4], e = m[5], f = m[6], gg = m[8], h = m[9], k = m[10];
    double det = a * (e * k - f * h) - b * (dd * k - f * gg) + c * (dd * h - e * gg);
    double inv[9] = {(e * k - f * h) / det, (c * h - b * k) / det, (b * f - c * e) / det,
                     (f * gg - dd * k) / det, (a * k - c * gg) / det, (c * dd - a * f) / det,
                     (dd * h - e * gg) / det, (b * gg - a * h) / det, (a * e - b * dd) / det};
    double oi[3], di[3], p[3] = {o[0] - m[3], o[1] - m[7], o[2] - m[11]};
    for (int r = 0; r < 3; r++) {
        oi[r] = inv[3 * r] * p[0] + inv[3 * r + 1] * p[1] + inv[3 * r + 2] * p[2];
        di[r] = inv[3 * r] * d[0] + inv[3 * r + 1] * d[1] + inv[3 * r + 2] * d[2];
    }
    float lo[3], hi[3];
    vx_grid_index_box(g, lo, hi);
    double t0 = 0, t1 = 1e300;
    for (int ax = 0; ax < 3; ax++) {
        if (fabs(di[ax]) < 1e-15) {
            if (oi[ax] < lo[ax] || oi[ax] > hi[ax]) return 0;
            continue;
        }
        double ta = (lo[ax] - oi[ax]) / di[ax], tb = (hi[ax] - oi[ax]) / di[ax];
        if (ta > tb) { double t = ta; ta = tb; tb = t; }
        if (ta > t0) t0 = ta;
        if (tb < t1) t1 = tb;
    }
    return t1 > t0 ? t1 - t0 : 0;
}

/* Render and compare every pixel with the closed form. col gives the expected colour
 * for a ray direction; sigma the expected density. Each pixel may differ by base_tol plus
 * what float32 clipping can move the chord: grazing rays make L ill-conditioned, so the
 * chord is recomputed (in double) from origins moved by float rounding of |o|, and
 * sigma * that spread is allowed. Returns the largest error / allowance (pass: <= 1). */
typedef void (*colour_fn)(const double d[3], const void *ctx, double rgb[3]);

static double check_box(vx_scene *s, const vx_camera *cam, double sigma, colour_fn col, const void *ctx,
                        float stop, int *hits, double base_tol) {
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.stop = stop;
    vx_volume v;
    vx_frame f;
    assert_int_equal(vx_volume_prepare(&v, s, &o), 0);
    assert_int_equal(vx_frame_alloc(&f, cam->width, cam->height, 1), 0);
    for (size_t i = 0; i < (size_t)cam->width * cam->height * 3; i++) f.rgb[i] = NAN; /* poison */
    assert_int_equal(vx_render_cpu(&v, cam, &o, &f), 0);
    double maxerr = 0;
    *hits = 0;
    for (int i = 0; i < cam->height; i++) {
        for (int j = 0; j < cam->width; j++) {
            vx_vec3 ro, rd;
            vx_camera_ray(cam, j + 0.5f, i + 0.5f, &ro, &rd);
            double o3[3] = {ro.x, ro.y, ro.z}, d3[3] = {rd.x, rd.y, rd.z}, rgb[3];
            double L = chord(&s->grid, o3, d3), spread = 0;
            double om = fmax(fabs(o3[0]), fmax(fabs(o3[1]), fabs(o3[2]))) + L, eps = 4 * 6e-8 * om;
            for (int k = 0; k < 8; k++) {
                double op[3] = {o3[0] + (k & 1 ? eps : -eps), o3[1] + (k & 2 ? eps : -eps), o3[2] + (k & 4 ? eps : -eps)};
                spread = fmax(spread, fabs(chord(&s->grid, op, d3) - L));
            }
            double tol = base_tol + sigma * spread;
            double T = exp(-sigma * L);
            col(d3, ctx, rgb);
            *hits += L > 0;
            size_t p = (size_t)i * cam->width + j;
            for (int c = 0; c < 3; c++) {
                double want = rgb[c] * (1 - T) + s->background[c] * T;
                double err = fabs(f.rgb[3 * p + c] - want) / tol;
                if (!(err <= maxerr)) maxerr = isnan(err) ? INFINITY : err;
            }
            double aerr = fabs(f.alpha[p] - (1 - T)) / tol;
            if (!(aerr <= maxerr)) maxerr = isnan(aerr) ? INFINITY : aerr;
        }
    }
    vx_frame_free(&f);
    vx_volume_free(&v);
    return maxerr;
}

static void const_colour(const double d[3], const void *ctx, double rgb[3]) {
    (void)d;
    const double *c = ctx;
    rgb[0] = c[0]; rgb[1] = c[1]; rgb[2] = c[2];
}

static void random_camera(vx_camera *cam, const vx_scene *s, int w, int h) {
    double lo[3], hi[3], eye[3], target[3], up[3] = {0, 1, 0};
    vx_grid_world_bounds(&s->grid, lo, hi);
    for (int a = 0; a < 3; a++) target[a] = 0.5 * (lo[a] + hi[a]) + vx_test_uniform(-0.3, 0.3) * (hi[a] - lo[a]);
    double az = vx_test_uniform(0, 2 * M_PI), el = vx_test_uniform(-1.2, 1.2), r = vx_test_uniform(2.0, 4.0) * (hi[0] - lo[0]);
    eye[0] = target[0] + r * cos(el) * sin(az);
    eye[1] = target[1] + r * sin(el);
    eye[2] = target[2] + r * cos(el) * cos(az);
    assert_int_equal(vx_camera_look_at(cam, eye, target, up, vx_test_uniform(20, 70), w, h), 0);
}

/* rotation about a random axis, random scale and translation */
static void random_placement(vx_grid *g) {
    double ax[3] = {vx_test_uniform(-1, 1), vx_test_uniform(-1, 1), vx_test_uniform(-1, 1)};
    double n = sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
    for (int a = 0; a < 3; a++) ax[a] /= n;
    double th = vx_test_uniform(0, M_PI), c = cos(th), s = sin(th), C = 1 - c;
    double R[9] = {c + ax[0] * ax[0] * C, ax[0] * ax[1] * C - ax[2] * s, ax[0] * ax[2] * C + ax[1] * s,
                   ax[1] * ax[0] * C + ax[2] * s, c + ax[1] * ax[1] * C, ax[1] * ax[2] * C - ax[0] * s,
                   ax[2] * ax[0] * C - ax[1] * s, ax[2] * ax[1] * C + ax[0] * s, c + ax[2] * ax[2] * C};
    double sc[3] = {vx_test_uniform(0.05, 0.3), vx_test_uniform(0.05, 0.3), vx_test_uniform(0.05, 0.3)};
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 3; k++) g->i2w[4 * r + k] = R[3 * r + k] * sc[k];
        g->i2w[4 * r + 3] = vx_test_uniform(-2, 2);
    }
}

static void test_box_rgba(void **state) {
    (void)state;
    for (int trial = 0; trial < 6; trial++) {
        double sigma = vx_test_uniform(0.2, 3.0), c[3] = {vx_test_rand(), vx_test_rand(), vx_test_rand()};
        float vals[4] = {(float)sigma, (float)c[0], (float)c[1], (float)c[2]};
        vx_scene s;
        make_const_scene(&s, 5 + trial, 4, vals);
        s.dec.type = VX_DEC_RGBA;
        s.dec.density_scale = 1.0f;
        if (trial % 2) random_placement(&s.grid);
        else {
            double lo[3] = {-1, -0.5, -0.7}, hi[3] = {1, 0.8, 0.9};
            vx_grid_set_bbox(&s.grid, lo, hi, trial % 4 == 0);
        }
        s.grid.align_corners = trial % 4 == 0;
        /* a randomly placed box can be a thin slab seen edge-on from the first camera drawn
         * (seed 27832540838: 16 pixels); draw cameras until one sees it, so the closed form
         * is always checked on more than 20 pixels */
        vx_camera cam;
        int hits = 0;
        double err = 0.0;
        for (int tries = 0; tries < 16 && hits <= 20; tries++) {
            random_camera(&cam, &s, 37, 29);
            err = check_box(&s, &cam, sigma, const_colour, c, 0.0f, &hits, 2e-5);
            if (err > 1) break;
        }
        if (err > 1) fail_msg("trial %d: max error %g x the allowance", trial, err);
        assert_true(hits > 20); /* the box is in view */
        vx_scene_free(&s);
    }
}

/* density scale and activations: softplus(raw) * scale is the density */
static void test_box_activations(void **state) {
    (void)state;
    double raw = 0.7, scale = 1.7, c[3] = {0.3, 0.6, 0.1};
    double want[4] = {raw * scale, log1p(exp(raw)) * scale, exp(raw) * scale, raw * scale};
    for (int act = 0; act < 4; act++) {
        float vals[4] = {(float)raw, (float)c[0], (float)c[1], (float)c[2]};
        vx_scene s;
        make_const_scene(&s, 6, 4, vals);
        s.dec.type = VX_DEC_RGBA;
        s.dec.density_act = act;
        s.dec.density_scale = (float)scale;
        double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
        vx_grid_set_bbox(&s.grid, lo, hi, 1);
        vx_camera cam;
        random_camera(&cam, &s, 24, 24);
        int hits;
        double err = check_box(&s, &cam, want[act], const_colour, c, 0.0f, &hits, 2e-5);
        if (err > 1) fail_msg("activation %d: max error %g x the allowance", act, err);
        vx_scene_free(&s);
    }
}

/* sigmoid colour activation */
static void test_box_sigmoid_colour(void **state) {
    (void)state;
    float vals[4] = {1.3f, -1.0f, 0.0f, 2.0f};
    double c[3] = {1 / (1 + exp(1.0)), 0.5, 1 / (1 + exp(-2.0))};
    vx_scene s;
    make_const_scene(&s, 6, 4, vals);
    s.dec.type = VX_DEC_RGBA;
    s.dec.color_act = VX_CACT_SIGMOID;
    s.dec.density_scale = 1.0f;
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(&s.grid, lo, hi, 1);
    vx_camera cam;
    random_camera(&cam, &s, 20, 20);
    int hits;
    assert_true(check_box(&s, &cam, 1.3, const_colour, c, 0.0f, &hits, 2e-5) <= 1);
    vx_scene_free(&s);
}

typedef struct { int degree; float k[3][16]; } sh_ctx;

/* colour from the SH coefficients, evaluated independently in double precision */
static void sh_colour(const double d[3], const void *ctx, double rgb[3]) {
    const sh_ctx *c = ctx;
    double x = d[0], y = d[1], z = d[2], b[16];
    b[0] = 0.28209479177387814;
    b[1] = -0.4886025119029199 * y; b[2] = 0.4886025119029199 * z; b[3] = -0.4886025119029199 * x;
    b[4] = 1.0925484305920792 * x * y; b[5] = -1.0925484305920792 * y * z;
    b[6] = 0.31539156525252005 * (2 * z * z - x * x - y * y); b[7] = -1.0925484305920792 * x * z;
    b[8] = 0.5462742152960396 * (x * x - y * y);
    b[9] = -0.5900435899266435 * y * (3 * x * x - y * y); b[10] = 2.890611442640554 * x * y * z;
    b[11] = -0.4570457994644658 * y * (4 * z * z - x * x - y * y);
    b[12] = 0.3731763325901154 * z * (2 * z * z - 3 * x * x - 3 * y * y);
    b[13] = -0.4570457994644658 * x * (4 * z * z - x * x - y * y); b[14] = 1.445305721320277 * z * (x * x - y * y);
    b[15] = -0.5900435899266435 * x * (x * x - 3 * y * y);
    int nb = (c->degree + 1) * (c->degree + 1);
    for (int ch = 0; ch < 3; ch++) {
        double s = 0;
        for (int i = 0; i < nb; i++) s += c->k[ch][i] * b[i];
        rgb[ch] = fmax(0.0, s + 0.5);
    }
}

static void test_box_sh(void **state) {
    (void)state;
    for (int degree = 0; degree <= 3; degree++) {
        int nb = (degree + 1) * (degree + 1), nc = 1 + 3 * nb;
        sh_ctx ctx = {.degree = degree};
        float vals[64];
        double sigma = vx_test_uniform(0.5, 2.5);
        vals[0] = (float)sigma;
        for (int ch = 0; ch < 3; ch++)
            for (int i = 0; i < nb; i++) vals[1 + ch * nb + i] = ctx.k[ch][i] = (float)vx_test_uniform(-0.6, 0.6);
        vx_scene s;
        make_const_scene(&s, 5, nc, vals);
        s.dec.type = VX_DEC_SH;
        s.dec.sh_degree = degree;
        s.dec.color_act = VX_CACT_PLENOXELS;
        s.dec.density_scale = 1.0f;
        double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
        vx_grid_set_bbox(&s.grid, lo, hi, degree % 2);
        vx_camera cam;
        random_camera(&cam, &s, 31, 23);
        int hits;
        double err = check_box(&s, &cam, sigma, sh_colour, &ctx, 0.0f, &hits, 5e-5);
        if (err > 1) fail_msg("sh degree %d: max error %g x the allowance", degree, err);
        vx_scene_free(&s);
    }
}

static void test_box_scalar(void **state) {
    (void)state;
    vx_scene s;
    float v = 37.0f;
    make_const_scene(&s, 7, 1, &v);
    s.dec.type = VX_DEC_SCALAR;
    s.dec.density_scale = 2.0f;
    s.dec.window_lo = 20.0f;
    s.dec.window_hi = 60.0f; /* t = 17/40 = 0.425 */
    s.dec.tf_n = 3;
    float tf[3][5] = {{0.0f, 0, 0, 0, 0}, {0.25f, 0.2f, 0.4f, 0.6f, 0.5f}, {1.0f, 1.0f, 0.8f, 0.0f, 2.5f}};
    memcpy(s.dec.tf, tf, sizeof tf);
    double f = (0.425 - 0.25) / 0.75;
    double c[3] = {0.2 + f * 0.8, 0.4 + f * 0.4, 0.6 - f * 0.6}, sigma = 2.0 * (0.5 + f * 2.0);
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(&s.grid, lo, hi, 0);
    vx_camera cam;
    random_camera(&cam, &s, 27, 27);
    int hits;
    double err = check_box(&s, &cam, sigma, const_colour, c, 0.0f, &hits, 2e-5);
    if (err > 1) fail_msg("scalar: max error %g x the allowance", err);
    vx_scene_free(&s);
}

/* early termination: the error it causes is bounded by the threshold */
static void test_early_termination(void **state) {
    (void)state;
    float vals[4] = {40.0f, 0.9f, 0.1f, 0.4f};
    double c[3] = {0.9, 0.1, 0.4};
    vx_scene s;
    make_const_scene(&s, 8, 4, vals);
    s.dec.type = VX_DEC_RGBA;
    s.dec.density_scale = 1.0f;
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(&s.grid, lo, hi, 1);
    vx_camera cam;
    random_camera(&cam, &s, 16, 16);
    int hits;
    double err = check_box(&s, &cam, 40.0, const_colour, c, 1e-3f, &hits, 1.1e-3);
    assert_true(err <= 1);
    vx_scene_free(&s);
}

/* an axis-aligned camera looking straight down the z axis: off-axis pixels too */
static void test_pixel_centres(void **state) {
    (void)state;
    vx_camera cam;
    double eye[3] = {0, 0, 5}, target[3] = {0, 0, 0}, up[3] = {0, 1, 0};
    assert_int_equal(vx_camera_look_at(&cam, eye, target, up, 90.0, 4, 2), 0);
    vx_vec3 o, d;
    vx_camera_ray(&cam, 0.5f, 0.5f, &o, &d); /* top-left pixel: x = -0.75, y = +0.25 (f = 2) */
    double n = sqrt(0.75 * 0.75 + 0.25 * 0.25 + 1);
    assert_float_equal(d.x, -0.75 / n, 1e-6);
    assert_float_equal(d.y, 0.25 / n, 1e-6);
    assert_float_equal(d.z, -1 / n, 1e-6);
    assert_float_equal(o.z, 5.0, 1e-6);
}

/* skipping empty space changes no pixel: sparse random grids, several decoders */
static void test_skipping_is_exact(void **state) {
    (void)state;
    for (int trial = 0; trial < 4; trial++) {
        vx_scene s;
        float zero[4] = {0};
        make_const_scene(&s, 40 + trial * 5, 4, zero);
        s.dec.type = VX_DEC_RGBA;
        s.dec.density_scale = 1.0f;
        /* density only inside two random balls (random values there), negative elsewhere */
        double ball[2][4];
        for (int b = 0; b < 2; b++)
            for (int a = 0; a < 4; a++) ball[b][a] = a < 3 ? vx_test_uniform(0.2, 0.8) : vx_test_uniform(0.1, 0.2);
        for (int z = 0; z < s.grid.nz; z++)
            for (int y = 0; y < s.grid.ny; y++)
                for (int x = 0; x < s.grid.nx; x++) {
                    float *v = s.grid.data + 4 * (((size_t)z * s.grid.ny + y) * s.grid.nx + x);
                    double p[3] = {(double)x / s.grid.nx, (double)y / s.grid.ny, (double)z / s.grid.nz};
                    int in = 0;
                    for (int b = 0; b < 2; b++) {
                        double d2 = 0;
                        for (int a = 0; a < 3; a++) d2 += (p[a] - ball[b][a]) * (p[a] - ball[b][a]);
                        in |= d2 < ball[b][3] * ball[b][3];
                    }
                    v[0] = in ? (float)vx_test_uniform(-2, 30) : (float)vx_test_uniform(-5, 0);
                    v[1] = (float)vx_test_rand(); v[2] = (float)vx_test_rand(); v[3] = (float)vx_test_rand();
                }
        double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
        vx_grid_set_bbox(&s.grid, lo, hi, trial % 2);
        vx_camera cam;
        random_camera(&cam, &s, 40, 30);
        vx_render_opts o1, o2;
        vx_render_opts_default(&o1);
        o1.stop = 0;
        o2 = o1;
        o2.no_skip = 1;
        o1.occ_cell = trial % 2 ? 4 : 8;
        vx_volume v1, v2;
        vx_frame f1, f2;
        assert_int_equal(vx_volume_prepare(&v1, &s, &o1), 0);
        assert_int_equal(vx_volume_prepare(&v2, &s, &o2), 0);
        assert_non_null(v1.occ);
        assert_true(v1.occ_empty_fraction > 0.05); /* something was skippable */
        assert_int_equal(vx_frame_alloc(&f1, 40, 30, 1), 0);
        assert_int_equal(vx_frame_alloc(&f2, 40, 30, 1), 0);
        assert_int_equal(vx_render_cpu(&v1, &cam, &o1, &f1), 0);
        assert_int_equal(vx_render_cpu(&v2, &cam, &o2, &f2), 0);
        assert_memory_equal(f1.rgb, f2.rgb, sizeof(float) * 40 * 30 * 3);
        assert_memory_equal(f1.alpha, f2.alpha, sizeof(float) * 40 * 30);
        assert_memory_equal(f1.depth, f2.depth, sizeof(float) * 40 * 30);
        assert_true(f1.samples < f2.samples);
        vx_frame_free(&f1); vx_frame_free(&f2);
        vx_volume_free(&v1); vx_volume_free(&v2);
        vx_scene_free(&s);
    }
}

/* expected depth of a box entered at distance t_in: sum w t over a constant medium is
 * int_0^L sigma e^{-sigma s} (t_in + s) ds for fine steps */
static void test_depth(void **state) {
    (void)state;
    float vals[4] = {2.0f, 1, 1, 1};
    vx_scene s;
    make_const_scene(&s, 64, 4, vals);
    s.grid.ny = s.grid.nz = 64; /* cube lattice; data is large enough */
    s.dec.type = VX_DEC_RGBA;
    s.dec.density_scale = 1.0f;
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(&s.grid, lo, hi, 1);
    vx_camera cam;
    double eye[3] = {0, 0, 4}, target[3] = {0, 0, 0}, up[3] = {0, 1, 0};
    assert_int_equal(vx_camera_look_at(&cam, eye, target, up, 10, 1, 1), 0);
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.stop = 0;
    o.step = 0.05f;
    vx_volume v;
    vx_frame f;
    assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
    assert_int_equal(vx_frame_alloc(&f, 1, 1, 1), 0);
    assert_int_equal(vx_render_cpu(&v, &cam, &o, &f), 0);
    double sg = 2.0, L = 2.0, tin = 3.0;
    double want = tin * (1 - exp(-sg * L)) + (1 - exp(-sg * L) * (1 + sg * L)) / sg;
    assert_float_equal(f.depth[0], want, 2e-3);
    vx_frame_free(&f);
    vx_volume_free(&v);
    vx_scene_free(&s);
}

/* the renderer seam picks the CPU here and renders the same frame */
/* Index-space directions below the slab test's 1e-12 on every axis (a world-to-index
 * scale of 1e-30, as a 1e30 spacing gives: the loaders refuse such placements now, a
 * caller building march parameters need not) once asked for 6e8 samples per pixel from
 * inside the box: max_segments bounds every ray. And vx_volume_prepare's bound covers
 * every chord of an ordinary oblique grid. */
static void test_ray_bound(void **state) {
    (void)state;
    float data[4 * 4 * 4 * 4];
    for (int i = 0; i < 4 * 4 * 4; i++) { data[4 * i] = 1e-30f; data[4 * i + 1] = data[4 * i + 2] = data[4 * i + 3] = 0.5f; }
    vx_march_params m;
    memset(&m, 0, sizeof m);
    m.nx = m.ny = m.nz = 4; m.nc = 4;
    m.w2i[0] = m.w2i[5] = m.w2i[10] = 1e-30f;
    m.w2i[3] = m.w2i[7] = m.w2i[11] = 2.0f; /* world origin at index (2, 2, 2): inside */
    for (int a = 0; a < 3; a++) { m.box_lo[a] = 0; m.box_hi[a] = 3; }
    m.dt = 0.5e30f;
    m.dec.type = VX_DEC_RGBA;
    m.dec.density_scale = 1.0f;
    m.max_segments = 20;
    vx_ray_result r = vx_march(&m, data, NULL, vx_v3(0, 0, 0), vx_norm(vx_v3(1, 0.2f, 0.1f)));
    assert_true(r.samples > 0 && r.samples <= 20);
    assert_true(isfinite(r.rgb[0]) && isfinite(r.rgb[1]) && isfinite(r.rgb[2]));

    vx_scene s;
    float vals[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    make_const_scene(&s, 9, 4, vals);
    s.dec.type = VX_DEC_RGBA;
    s.dec.density_scale = 1.0f;
    random_placement(&s.grid);
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.stop = 0.0f;
    vx_volume v;
    assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
    assert_true(v.mp.max_segments > 0 && v.mp.max_segments < 1000);
    for (int k = 0; k < 200; k++) { /* random rays through the box never reach the bound */
        vx_camera cam;
        random_camera(&cam, &s, 3, 3);
        vx_frame f;
        assert_int_equal(vx_frame_alloc(&f, 3, 3, 0), 0);
        assert_int_equal(vx_render_cpu(&v, &cam, &o, &f), 0);
        assert_true(f.samples < 9LL * v.mp.max_segments);
        vx_frame_free(&f);
    }
    vx_volume_free(&v);
    vx_scene_free(&s);
}

/* A NaN sample point (from a non-finite placement) must land on a lattice point, never on
 * an index computed from NaN: the clamps in vx_axis_cell and vx_index_floor map it to 0. */
static void test_nan_point_is_clamped(void **state) {
    (void)state;
    float data[2 * 2 * 2];
    for (int i = 0; i < 8; i++) data[i] = (float)(i + 1);
    float out = -1;
    vx_trilinear_fetch(data, 2, 2, 2, 1, vx_v3(NAN, NAN, NAN), &out);
    assert_float_equal(out, 1.0f, 0.0f);
    assert_int_equal(vx_index_floor(NAN, 7), 0);
    assert_int_equal(vx_index_floor(1e30f, 7), 6);
    assert_int_equal(vx_index_floor(-1e30f, 7), 0);
}

/* An op that records where the march samples (constant density 0.01, grey). */
typedef struct {
    vx_march_op op;
    float tm[4096];
    int n;
} rec_op;

static float rec_sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb) {
    (void)d;
    rec_op *r = op;
    if (r->n < 4096) r->tm[r->n++] = s->tm;
    assert_true(s->ta <= s->tm && s->tm <= s->tb);
    rgb[0] = rgb[1] = rgb[2] = 0.5f;
    return 0.01f;
}

/* Jittered segments: the first sample lies in [t0, t0 + u dt], the rest follow every dt,
 * all inside [t0, t1]; u = 0 gives the midpoints t0 + (k + 1/2) dt; and the per-pixel u is
 * in [0, 1), deterministic, and differs between neighbouring pixels. */
static void test_jitter_segments(void **state) {
    (void)state;
    vx_march_params m;
    memset(&m, 0, sizeof m);
    m.nx = m.ny = m.nz = 8; m.nc = 4;
    m.w2i[0] = m.w2i[5] = m.w2i[10] = 1.0f;
    for (int a = 0; a < 3; a++) { m.box_lo[a] = 0; m.box_hi[a] = 7; }
    m.dt = 0.5f;
    vx_vec3 o = vx_v3(-1.0f, 3.3f, 2.1f), d = vx_v3(1, 0, 0); /* enters at t0 = 1, leaves at t1 = 8 */
    for (int trial = 0; trial < 50; trial++) {
        float u = trial == 0 ? 0.0f : (float)vx_test_rand();
        rec_op r;
        r.n = 0;
        VX_MARCH_OP_INIT(&r.op, rec_sample, vx_march_no_visit);
        vx_march_run(&m, NULL, o, d, u, &r.op);
        assert_true(r.n >= 14 && r.n <= 15);
        if (u == 0.0f) assert_float_equal(r.tm[0], 1.25f, 1e-6);
        else assert_true(r.tm[0] >= 1.0f && r.tm[0] <= 1.0f + u * 0.5f + 1e-5f);
        for (int k = 1; k + 2 < r.n; k++) assert_float_equal(r.tm[k + 1] - r.tm[k], 0.5f, 1e-5);
        assert_true(r.tm[r.n - 1] <= 8.0f);
    }
    float u0 = vx_pixel_jitter(7, 100), u1 = vx_pixel_jitter(7, 101);
    assert_true(u0 >= 0.0f && u0 < 1.0f && u1 >= 0.0f && u1 < 1.0f && u0 != u1);
    assert_float_equal(vx_pixel_jitter(7, 100), u0, 0.0f);
    assert_float_equal(vx_pixel_jitter(0, 100), 0.0f, 0.0f);
}

/* A jittered render still meets the closed form: a constant box's transmittance depends
 * only on the chord, not on where the segments fall. */
static void test_box_jittered(void **state) {
    (void)state;
    float vals[4] = {1.3f, 0.9f, 0.4f, 0.2f};
    vx_scene s;
    make_const_scene(&s, 7, 4, vals);
    s.dec.type = VX_DEC_RGBA;
    s.dec.density_scale = 1.0f;
    double lo[3] = {-1, -0.5, -0.7}, hi[3] = {1, 0.8, 0.9};
    vx_grid_set_bbox(&s.grid, lo, hi, 1);
    vx_camera cam;
    random_camera(&cam, &s, 31, 23);
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.stop = 0.0f;
    o.jitter = 12345;
    vx_volume v;
    vx_frame f;
    assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
    assert_int_equal(vx_frame_alloc(&f, cam.width, cam.height, 0), 0);
    assert_int_equal(vx_render_cpu(&v, &cam, &o, &f), 0);
    int hits = 0;
    for (int i = 0; i < cam.height; i++)
        for (int j = 0; j < cam.width; j++) {
            vx_vec3 ro, rd;
            vx_camera_ray(&cam, j + 0.5f, i + 0.5f, &ro, &rd);
            double o3[3] = {ro.x, ro.y, ro.z}, d3[3] = {rd.x, rd.y, rd.z};
            double L = chord(&s.grid, o3, d3), T = exp(-1.3 * L);
            if (L > 1e-3) hits++;
            size_t p = (size_t)i * cam.width + j;
            for (int c = 0; c < 3; c++)
                if (fabs(f.rgb[3 * p + c] - (vals[1 + c] * (1 - T) + s.background[c] * T)) > 2e-3 + 1.3 * 1e-4)
                    fail_msg("pixel %d,%d channel %d: %g, closed form %g", j, i, c, f.rgb[3 * p + c],
                             vals[1 + c] * (1 - T) + s.background[c] * T);
        }
    assert_true(hits > 20);
    vx_frame_free(&f);
    vx_volume_free(&v);
    vx_scene_free(&s);
}

/* Gradient shading: a gradient along index +x seen head-on gets the full diffuse and the
 * specular term, seen edge-on only the ambient share; a gradient below 2% of the window
 * per voxel fades to no shading; a zero gradient changes nothing. */
static void test_shade(void **state) {
    (void)state;
    vx_march_params m;
    memset(&m, 0, sizeof m);
    m.w2i[0] = m.w2i[5] = m.w2i[10] = 1.0f;
    m.dec.window_lo = 0.0f;
    m.dec.window_hi = 1.0f;
    float f[6] = {0.7f, 0.3f, 0.5f, 0.5f, 0.5f, 0.5f}; /* +x: 0.4 per voxel */
    float rgb[3] = {0.4f, 0.5f, 0.6f};
    vx_shade(&m, f, vx_v3(-1, 0, 0), rgb);
    for (int c = 0; c < 3; c++) assert_float_equal(rgb[c], fminf((0.4f + 0.1f * c) + 0.25f, 1.0f), 1e-6);
    float side[3] = {0.4f, 0.5f, 0.6f};
    vx_shade(&m, f, vx_v3(0, 1, 0), side);
    for (int c = 0; c < 3; c++) assert_float_equal(side[c], (0.4f + 0.1f * c) * 0.35f, 1e-6);
    float flat[6] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, keep[3] = {0.4f, 0.5f, 0.6f};
    vx_shade(&m, flat, vx_v3(0, 1, 0), keep);
    for (int c = 0; c < 3; c++) assert_float_equal(keep[c], 0.4f + 0.1f * c, 0.0f);
    float weak[6] = {0.51f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, half_[3] = {0.4f, 0.5f, 0.6f}; /* 1% of the window */
    vx_shade(&m, weak, vx_v3(0, 1, 0), half_);
    for (int c = 0; c < 3; c++) assert_float_equal(half_[c], (0.4f + 0.1f * c) * (1.0f - 0.5f * 0.65f), 1e-4);
    /* the world normal goes through the transpose of world->index: x stretched by 2 */
    m.w2i[0] = 0.5f;
    float g2[3] = {0.4f, 0.5f, 0.6f};
    vx_shade(&m, f, vx_v3(-1, 0, 0), g2);
    for (int c = 0; c < 3; c++) assert_float_equal(g2[c], fminf((0.4f + 0.1f * c) + 0.25f, 1.0f), 1e-6);
}

static void test_backend_cpu(void **state) {
    (void)state;
    float vals[4] = {1.0f, 0.5f, 0.25f, 0.75f};
    vx_scene s;
    make_const_scene(&s, 6, 4, vals);
    s.dec.type = VX_DEC_RGBA;
    s.dec.density_scale = 1.0f;
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(&s.grid, lo, hi, 1);
    vx_render_opts o;
    vx_render_opts_default(&o);
    vx_renderer *r;
    assert_int_equal(vx_renderer_create(&r, &s, &o, VX_BACKEND_CPU), 0);
    assert_string_equal(vx_renderer_backend_name(r), "cpu");
    vx_camera cam;
    random_camera(&cam, &s, 16, 12);
    vx_frame f;
    assert_int_equal(vx_frame_alloc(&f, 16, 12, 0), 0);
    assert_int_equal(vx_renderer_render(r, &cam, &f), 0);
    assert_true(f.samples > 0);
    vx_frame_free(&f);
    vx_renderer_destroy(r);
    vx_scene_free(&s);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_rgba),       cmocka_unit_test(test_box_activations),
        cmocka_unit_test(test_box_sigmoid_colour), cmocka_unit_test(test_box_sh),
        cmocka_unit_test(test_box_scalar),     cmocka_unit_test(test_early_termination),
        cmocka_unit_test(test_pixel_centres),  cmocka_unit_test(test_skipping_is_exact),
        cmocka_unit_test(test_depth),          cmocka_unit_test(test_backend_cpu),
        cmocka_unit_test(test_ray_bound), cmocka_unit_test(test_nan_point_is_clamped),
        cmocka_unit_test(test_jitter_segments), cmocka_unit_test(test_box_jittered),
        cmocka_unit_test(test_shade),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
