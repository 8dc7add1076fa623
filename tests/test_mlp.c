/* test_mlp.c - the mlp decoder (feature grid + view-dependent network) against an
 * independent double-precision evaluation of the network in the file's PyTorch order, a
 * constant box rendered by the CPU renderer against the closed form with that colour, and
 * the weights file: load, save, and one clear error per malformed file or manifest. */
#include "vx_test.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>

#include "mlp.h"
#include "npy.h"
#include "piece.h"
#include "render.h"
#include "scene.h"

/* Random weights in file order: uniform in +-scale. */
static void random_file_weights(int layers, float *f, double scale) {
    for (int i = 0, n = vx_mlp_weight_count(layers); i < n; i++) f[i] = (float)vx_test_uniform(-scale, scale);
}

/* The direction slots of the network's input seen along d: its 16 SH terms, written out. */
static void reference_sh(const double d[3], double *b) {
    double x = d[0], y = d[1], z = d[2];
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
}

/* The network in double precision, straight from the file order: weight[out][in], bias,
 * with direction slots `dirs` (16). */
static void reference_rgb_in(int layers, const float *f, const float *features, const double *dirs, double rgb[3]) {
    double in[VX_MLP_IN], h[VX_MLP_WIDTH], h2[VX_MLP_WIDTH];
    for (int i = 0; i < VX_MLP_FEATURES; i++) in[i] = features[i];
    for (int i = 0; i < 16; i++) in[VX_MLP_FEATURES + i] = dirs[i];
    const float *p = f;
    for (int o = 0; o < VX_MLP_WIDTH; o++) {
        double a = p[VX_MLP_WIDTH * VX_MLP_IN + o];
        for (int i = 0; i < VX_MLP_IN; i++) a += p[o * VX_MLP_IN + i] * in[i];
        h[o] = fmax(a, 0.0);
    }
    p += VX_MLP_WIDTH * VX_MLP_IN + VX_MLP_WIDTH;
    if (layers == 2) {
        for (int o = 0; o < VX_MLP_WIDTH; o++) {
            double a = p[VX_MLP_WIDTH * VX_MLP_WIDTH + o];
            for (int i = 0; i < VX_MLP_WIDTH; i++) a += p[o * VX_MLP_WIDTH + i] * h[i];
            h2[o] = fmax(a, 0.0);
        }
        memcpy(h, h2, sizeof h);
        p += VX_MLP_WIDTH * VX_MLP_WIDTH + VX_MLP_WIDTH;
    }
    for (int c = 0; c < 3; c++) {
        double a = p[3 * VX_MLP_WIDTH + c];
        for (int i = 0; i < VX_MLP_WIDTH; i++) a += p[c * VX_MLP_WIDTH + i] * h[i];
        rgb[c] = 1.0 / (1.0 + exp(-a));
    }
}

/* The network seeing the view direction d. */
static void reference_rgb(int layers, const float *f, const float *features, const double d[3], double rgb[3]) {
    double b[16];
    reference_sh(d, b);
    reference_rgb_in(layers, f, features, b, rgb);
}

static vx_vec3 random_dir(double d[3]) {
    double n;
    do {
        for (int a = 0; a < 3; a++) d[a] = vx_test_uniform(-1, 1);
        n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    } while (n < 0.1 || n > 1);
    for (int a = 0; a < 3; a++) d[a] /= n;
    return vx_v3((float)d[0], (float)d[1], (float)d[2]);
}

/* vx_decode (the renderers' decode, through the packed layout) against the reference on
 * random weights, features and directions; density is relu(raw0) * scale, and a sample
 * without density leaves the network alone and composites nothing. */
static void test_decode_matches_reference(void **state) {
    (void)state;
    for (int layers = 1; layers <= 2; layers++) {
        float f[VX_MLP_MAX_WEIGHTS], packed[VX_MLP_MAX_WEIGHTS], back[VX_MLP_MAX_WEIGHTS];
        int n = vx_mlp_weight_count(layers);
        random_file_weights(layers, f, 0.4);
        vx_mlp_pack(layers, f, packed);
        vx_mlp_unpack(layers, packed, back);
        assert_memory_equal(f, back, (size_t)n * sizeof(float));
        vx_decoder dec = {.type = VX_DEC_MLP, .density_scale = (float)vx_test_uniform(0.5, 3), .color_act = VX_CACT_SIGMOID};
        vx_decoder_set_mlp(&dec, layers, packed);
        assert_int_equal(vx_decoder_channels(&dec), VX_MLP_CHANNELS);
        assert_int_equal(vx_decoder_validate(&dec, VX_MLP_CHANNELS, "test"), 0);
        double maxerr = 0;
        for (int trial = 0; trial < 200; trial++) {
            float raw[VX_MLP_CHANNELS], rgb[3];
            for (int c = 0; c < VX_MLP_CHANNELS; c++) raw[c] = (float)vx_test_uniform(-2, 2);
            double d[3], want[3];
            vx_vec3 dir = random_dir(d);
            float sigma = vx_decode(&dec, raw, dir, rgb);
            if (raw[0] <= 0) {
                assert_true(sigma == 0.0f);
                continue;
            }
            assert_float_equal(sigma, raw[0] * dec.density_scale, 1e-6 * dec.density_scale * fabs(raw[0]) + 1e-7);
            reference_rgb(layers, f, raw + 1, d, want);
            for (int c = 0; c < 3; c++) maxerr = fmax(maxerr, fabs(rgb[c] - want[c]));
        }
        if (maxerr > 2e-6) fail_msg("%d hidden layers: colour differs from the reference by %g", layers, maxerr);
    }
}

/* The wrong weights cannot pass: the first layer used untransposed, or one weight moved. */
static void test_decode_sees_every_weight(void **state) {
    (void)state;
    float f[VX_MLP_MAX_WEIGHTS], packed[VX_MLP_MAX_WEIGHTS];
    random_file_weights(2, f, 0.5);
    vx_mlp_pack(2, f, packed);
    vx_decoder dec = {.type = VX_DEC_MLP, .density_scale = 1};
    vx_decoder_set_mlp(&dec, 2, packed);
    float raw[VX_MLP_CHANNELS], rgb[3], rgb2[3];
    for (int c = 0; c < VX_MLP_CHANNELS; c++) raw[c] = (float)vx_test_uniform(0.2, 1.5);
    double d[3];
    vx_vec3 dir = random_dir(d);
    vx_decode(&dec, raw, dir, rgb);
    vx_decoder_set_mlp(&dec, 2, f); /* file order read as packed */
    vx_decode(&dec, raw, dir, rgb2);
    assert_true(fabs(rgb[0] - rgb2[0]) + fabs(rgb[1] - rgb2[1]) + fabs(rgb[2] - rgb2[2]) > 1e-4);
    /* the output bias: its colour moves through its sigmoid, the others stay. The green
     * output's weights and bias are zeroed first, so it starts at sigmoid(0) whatever the
     * hidden layers give (a random output can saturate, where +1 moves it by < 1e-3: CI
     * once drew such weights) */
    float *out = packed + vx_mlp_out_offset(2);
    for (int i = 0; i < VX_MLP_WIDTH; i++) out[VX_MLP_WIDTH + i] = 0.0f;
    out[3 * VX_MLP_WIDTH + 1] = 0.0f;
    vx_decoder_set_mlp(&dec, 2, packed);
    vx_decode(&dec, raw, dir, rgb);
    assert_float_equal(rgb[1], 0.5f, 1e-7);
    out[3 * VX_MLP_WIDTH + 1] += 1.0f;
    vx_decode(&dec, raw, dir, rgb2);
    assert_true(rgb2[0] == rgb[0] && rgb2[2] == rgb[2]);
    assert_float_equal(rgb2[1], 0.7310585786f, 1e-6); /* sigmoid(1) */
}

/* A scene whose every voxel holds vals (16 channels), in [-1, 1]^3. */
static void make_mlp_scene(vx_scene *s, int layers, const float *vals, const float *file_weights) {
    memset(s, 0, sizeof *s);
    assert_int_equal(vx_grid_alloc(&s->grid, 5, 6, 7, VX_MLP_CHANNELS, "const mlp"), 0);
    for (size_t i = 0; i < (size_t)5 * 6 * 7; i++) memcpy(s->grid.data + i * VX_MLP_CHANNELS, vals, VX_MLP_CHANNELS * sizeof(float));
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(&s->grid, lo, hi, layers == 1);
    s->step = 0.5f;
    s->background[0] = 0.9f; s->background[1] = 0.4f; s->background[2] = 0.1f;
    s->mlp = malloc(VX_MLP_MAX_WEIGHTS * sizeof(float));
    assert_non_null(s->mlp);
    vx_mlp_pack(layers, file_weights, s->mlp);
    s->dec = (vx_decoder){.type = VX_DEC_MLP, .density_scale = 1, .color_act = VX_CACT_SIGMOID};
    vx_decoder_set_mlp(&s->dec, layers, s->mlp);
}

/* Chord of a world ray through [-1, 1]^3. */
static double chord_cube(const double o[3], const double d[3]) {
    double t0 = 0, t1 = 1e300;
    for (int a = 0; a < 3; a++) {
        if (fabs(d[a]) < 1e-15) {
            if (fabs(o[a]) > 1) return 0;
            continue;
        }
        double ta = (-1 - o[a]) / d[a], tb = (1 - o[a]) / d[a];
        if (ta > tb) { double t = ta; ta = tb; tb = t; }
        t0 = fmax(t0, ta);
        t1 = fmin(t1, tb);
    }
    return t1 > t0 ? t1 - t0 : 0;
}

/* The closed form c(d)(1 - e^{-sigma L}) + bg e^{-sigma L} per pixel, with c(d) the
 * reference network's colour for the features and the pixel's ray direction. */
static void test_box_mlp(void **state) {
    (void)state;
    for (int layers = 1; layers <= 2; layers++) {
        float f[VX_MLP_MAX_WEIGHTS], vals[VX_MLP_CHANNELS];
        random_file_weights(layers, f, 0.5);
        double sigma = vx_test_uniform(0.4, 2.0);
        vals[0] = (float)sigma;
        for (int c = 1; c < VX_MLP_CHANNELS; c++) vals[c] = (float)vx_test_uniform(-1, 1);
        vx_scene s;
        make_mlp_scene(&s, layers, vals, f);
        double eye[3] = {vx_test_uniform(-3, 3), vx_test_uniform(-3, 3), 3.5}, target[3] = {0.1, -0.1, 0}, up[3] = {0, 1, 0};
        vx_camera cam;
        assert_int_equal(vx_camera_look_at(&cam, eye, target, up, 40, 24, 20), 0);
        vx_render_opts o;
        vx_render_opts_default(&o);
        o.stop = 0;
        vx_volume v;
        vx_frame fr;
        assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
        assert_int_equal(vx_frame_alloc(&fr, cam.width, cam.height, 0), 0);
        assert_int_equal(vx_render_cpu(&v, &cam, &o, &fr), 0);
        int hits = 0;
        double maxerr = 0;
        for (int i = 0; i < cam.height; i++)
            for (int j = 0; j < cam.width; j++) {
                vx_vec3 ro, rd;
                vx_camera_ray(&cam, j + 0.5f, i + 0.5f, &ro, &rd);
                double o3[3] = {ro.x, ro.y, ro.z}, d3[3] = {rd.x, rd.y, rd.z}, c[3];
                double L = chord_cube(o3, d3), T = exp(-sigma * L);
                reference_rgb(layers, f, vals + 1, d3, c);
                hits += L > 0.2;
                for (int k = 0; k < 3; k++) {
                    double want = c[k] * (1 - T) + s.background[k] * T;
                    maxerr = fmax(maxerr, fabs(fr.rgb[3 * ((size_t)i * cam.width + j) + k] - want));
                }
            }
        assert_true(hits > 50); /* the box is in view */
        if (maxerr > 2e-4) fail_msg("%d hidden layers: max error %g against the closed form", layers, maxerr);
        /* a constant last layer (weights 0): the colour is sigmoid(bias) whatever the network */
        int out = vx_mlp_out_offset(layers);
        for (int k = 0; k < 3 * VX_MLP_WIDTH; k++) s.mlp[out + k] = 0;
        float bias[3] = {-1.5f, 0.25f, 2.0f};
        memcpy(s.mlp + out + 3 * VX_MLP_WIDTH, bias, sizeof bias);
        assert_int_equal(vx_render_cpu(&v, &cam, &o, &fr), 0);
        vx_vec3 ro, rd;
        vx_camera_ray(&cam, cam.width / 2 + 0.5f, cam.height / 2 + 0.5f, &ro, &rd);
        double o3[3] = {ro.x, ro.y, ro.z}, d3[3] = {rd.x, rd.y, rd.z}, L = chord_cube(o3, d3), T = exp(-sigma * L);
        assert_true(L > 0.5);
        size_t p = (size_t)(cam.height / 2) * cam.width + cam.width / 2;
        for (int k = 0; k < 3; k++)
            assert_float_equal(fr.rgb[3 * p + k], (1 - T) / (1 + exp(-bias[k])) + s.background[k] * T, 2e-4);
        vx_frame_free(&fr);
        vx_volume_free(&v);
        vx_scene_free(&s);
    }
}

/* The reflected direction (decoder flag reflect) on a slab whose density rises along z
 * alone: its gradient is exactly vertical, so every sample's network sees the pixel's ray
 * direction with z negated, r = (dx, dy, -dz). With a black background a pixel is c(d) a
 * seen along d and c(r) a with reflect on, the same opacity a (density is untouched), so
 * their ratio per channel is the reference network's c(r) / c(d), for random weights and
 * features and cameras from 15 to 60 degrees above the slab. The view direction with the
 * reflected one (VX_MLP_DIR_BOTH) likewise: c(both) / c(d), where both is d's SH with
 * slots 4-6 r's degree-1 terms and slot 7 n.d = dz (the normal is +z). */
static void test_reflect_slab(void **state) {
    (void)state;
    for (int layers = 1; layers <= 2; layers++) {
        float f[VX_MLP_MAX_WEIGHTS], vals[VX_MLP_CHANNELS];
        random_file_weights(layers, f, 0.5);
        for (int c = 1; c < VX_MLP_CHANNELS; c++) vals[c] = (float)vx_test_uniform(-1, 1);
        vals[0] = 1.0f;
        vx_scene s;
        make_mlp_scene(&s, layers, vals, f);
        double base = vx_test_uniform(0.1, 0.4), rise = vx_test_uniform(0.1, 0.3);
        for (int z = 0; z < 7; z++)
            for (int i = 0; i < 5 * 6; i++) s.grid.data[((size_t)z * 30 + i) * VX_MLP_CHANNELS] = (float)(base + rise * z);
        for (int k = 0; k < 3; k++) s.background[k] = 0.0f;
        double el = vx_test_uniform(15, 60) * M_PI / 180, az = vx_test_uniform(0, 2 * M_PI);
        double eye[3] = {3.5 * cos(el) * sin(az), 3.5 * cos(el) * cos(az), 3.5 * sin(el)}, target[3] = {0, 0, 0};
        double up[3] = {0, 0, 1};
        vx_camera cam;
        assert_int_equal(vx_camera_look_at(&cam, eye, target, up, 30, 24, 20), 0);
        vx_render_opts o;
        vx_render_opts_default(&o);
        o.stop = 0;
        vx_frame fv, fr;
        vx_volume v;
        assert_int_equal(vx_frame_alloc(&fv, cam.width, cam.height, 0), 0);
        assert_int_equal(vx_frame_alloc(&fr, cam.width, cam.height, 0), 0);
        assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
        assert_int_equal(vx_render_cpu(&v, &cam, &o, &fv), 0);
        vx_volume_free(&v);
        for (int mode = VX_MLP_DIR_REFLECTED; mode <= VX_MLP_DIR_BOTH; mode++) {
            s.dec.shade = mode;
            assert_true(vx_decoder_mlp_reflect(&s.dec));
            assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
            assert_int_equal(vx_render_cpu(&v, &cam, &o, &fr), 0);
            int used = 0;
            double maxerr = 0, moved = 0;
            for (int i = 0; i < cam.height; i++)
                for (int j = 0; j < cam.width; j++) {
                    vx_vec3 ro, rd;
                    vx_camera_ray(&cam, j + 0.5f, i + 0.5f, &ro, &rd);
                    double d3[3] = {rd.x, rd.y, rd.z}, r3[3] = {rd.x, rd.y, -rd.z}, cd[3], cr[3], b16[16], r16[16];
                    reference_rgb(layers, f, vals + 1, d3, cd);
                    reference_sh(d3, b16);
                    if (mode == VX_MLP_DIR_REFLECTED) {
                        reference_sh(r3, b16);
                    } else {
                        reference_sh(r3, r16);
                        for (int k = 0; k < 3; k++) b16[VX_MLP_DIR_BOTH_SLOT + k] = r16[1 + k];
                        b16[VX_MLP_DIR_BOTH_SLOT + 3] = rd.z; /* n.d with n = +z */
                        for (int k = 0; k < 5; k++) b16[VX_MLP_DIR_BOTH_SLOT + 4 + k] = r16[4 + k]; /* r's degree 2 */
                    }
                    reference_rgb_in(layers, f, vals + 1, b16, cr);
                    const float *a = fv.rgb + 3 * ((size_t)i * cam.width + j), *b = fr.rgb + 3 * ((size_t)i * cam.width + j);
                    if (!(fv.alpha[(size_t)i * cam.width + j] > 0.05f)) continue; /* the slab covers the pixel */
                    used++;
                    for (int k = 0; k < 3; k++) {
                        maxerr = fmax(maxerr, fabs(b[k] - a[k] * cr[k] / cd[k]));
                        moved = fmax(moved, fabs(b[k] - a[k]));
                    }
                }
            assert_true(used > 100); /* the slab fills most of the view */
            assert_true(moved > 1e-3); /* the reflection changes the colour the network gives */
            if (maxerr > 2e-4)
                fail_msg("%d hidden layers, direction %s: max error %g against the reference's ratio", layers,
                         vx_mlp_dir_name(mode), maxerr);
            vx_volume_free(&v);
        }
        vx_frame_free(&fv);
        vx_frame_free(&fr);
        vx_scene_free(&s);
    }
}

/* A scene directory: grid.npy (4x4x4x16, density 1), mlp.npy, scene.json with `decoder`. */
static const char *write_scene(const char *name, const char *decoder_json, const float *w, size_t nw, int ndim) {
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", vx_test_tmpdir(), name);
    assert_int_equal(mkdir(dir, 0755) && errno != EEXIST, 0);
    char path[600];
    float grid[4 * 4 * 4 * VX_MLP_CHANNELS];
    for (size_t i = 0; i < sizeof grid / sizeof *grid; i++) grid[i] = i % VX_MLP_CHANNELS ? 0.1f : 1.0f;
    size_t gs[4] = {4, 4, 4, VX_MLP_CHANNELS};
    snprintf(path, sizeof path, "%s/grid.npy", dir);
    assert_int_equal(vx_npy_write_f32(path, grid, 4, gs), 0);
    if (w) {
        size_t ws[2] = {ndim == 2 ? 2 : nw, nw / 2};
        snprintf(path, sizeof path, "%s/mlp.npy", dir);
        assert_int_equal(vx_npy_write_f32(path, w, ndim, ws), 0);
    }
    char json[1200];
    snprintf(json, sizeof json, "{\"grid\": \"grid.npy\", \"decoder\": %s}", decoder_json);
    snprintf(path, sizeof path, "%s/scene.json", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(json, fp);
    fclose(fp);
    return dir;
}

static void expect_load_error(const char *dir, const char *what) {
    vx_scene s;
    assert_int_not_equal(vx_scene_load(dir, NULL, &s), 0);
    const char *msg = vx_errmsg();
    if (!strstr(msg, what) || !strstr(msg, "scene.json")) fail_msg("error '%s' does not say '%s' and name the manifest", msg, what);
}

static void test_weights_file(void **state) {
    (void)state;
    float f[VX_MLP_MAX_WEIGHTS];
    int n2 = vx_mlp_weight_count(2), n1 = vx_mlp_weight_count(1);
    random_file_weights(2, f, 1.0);
    /* layers defaults to 2; the weights arrive packed, and save writes the file order back */
    const char *dir = write_scene("ok", "{\"type\": \"mlp\", \"weights\": \"mlp.npy\", \"density_scale\": 3}", f, (size_t)n2, 1);
    vx_scene s;
    assert_int_equal(vx_scene_load(dir, NULL, &s), 0);
    assert_int_equal(s.dec.type, VX_DEC_MLP);
    assert_int_equal(vx_decoder_mlp_layers(&s.dec), 2);
    assert_true(vx_decoder_mlp_weights(&s.dec) == s.mlp);
    float packed[VX_MLP_MAX_WEIGHTS], back[VX_MLP_MAX_WEIGHTS];
    vx_mlp_pack(2, f, packed);
    assert_memory_equal(s.mlp, packed, (size_t)n2 * sizeof(float));
    char path[600];
    snprintf(path, sizeof path, "%s/saved.npy", dir);
    assert_int_equal(vx_mlp_save(path, 2, s.mlp), 0);
    float *again;
    assert_int_equal(vx_mlp_load(path, 2, &again), 0);
    vx_mlp_unpack(2, again, back);
    assert_memory_equal(f, back, (size_t)n2 * sizeof(float));
    free(again);
    vx_scene_free(&s);
    assert_null(s.mlp);

    expect_load_error(write_scene("count", "{\"type\": \"mlp\", \"layers\": 1, \"weights\": \"mlp.npy\"}", f, (size_t)n2, 1),
                      "1-D array of 2243 values");
    expect_load_error(write_scene("shape", "{\"type\": \"mlp\", \"layers\": 1, \"weights\": \"mlp.npy\"}", f, (size_t)n1 + 1, 2),
                      "multi-dimensional");
    f[17] = NAN;
    expect_load_error(write_scene("nan", "{\"type\": \"mlp\", \"weights\": \"mlp.npy\"}", f, (size_t)n2, 1), "mlp weight 17");
    f[17] = 0;
    expect_load_error(write_scene("missing", "{\"type\": \"mlp\", \"weights\": \"none.npy\"}", f, (size_t)n2, 1), "none.npy");
    expect_load_error(write_scene("noweights", "{\"type\": \"mlp\"}", NULL, 0, 1), "'decoder.weights' is missing");
    expect_load_error(write_scene("layers", "{\"type\": \"mlp\", \"layers\": 3, \"weights\": \"mlp.npy\"}", f, (size_t)n2, 1),
                      "decoder.layers");
    expect_load_error(write_scene("shweights", "{\"type\": \"sh\", \"weights\": \"mlp.npy\"}", f, (size_t)n2, 1),
                      "only apply to the mlp decoder");
    expect_load_error(write_scene("act", "{\"type\": \"mlp\", \"weights\": \"mlp.npy\", \"color_activation\": \"clamp\"}", f,
                                  (size_t)n2, 1), "color_activation");
    /* a grid of 28 channels (sh 2) with the mlp decoder: the channel count is named */
    float grid28[2 * 2 * 2 * 28] = {0};
    size_t gs[4] = {2, 2, 2, 28};
    dir = write_scene("channels", "{\"type\": \"mlp\", \"weights\": \"mlp.npy\"}", f, (size_t)n2, 1);
    snprintf(path, sizeof path, "%s/grid.npy", dir);
    assert_int_equal(vx_npy_write_f32(path, grid28, 4, gs), 0);
    expect_load_error(dir, "needs 16 channels but the grid has 28");
    /* the direction the network sees: view (the default), reflected, or the view direction
     * with the reflected one; nothing else */
    vx_scene sc;
    for (int mode = VX_MLP_DIR_REFLECTED; mode <= VX_MLP_DIR_BOTH; mode++) {
        char json[256];
        snprintf(json, sizeof json, "{\"type\": \"mlp\", \"weights\": \"mlp.npy\", \"direction\": \"%s\"}",
                 vx_mlp_dir_name(mode));
        dir = write_scene(mode == VX_MLP_DIR_BOTH ? "both" : "reflected", json, f, (size_t)n2, 1);
        assert_int_equal(vx_scene_load(dir, NULL, &sc), 0);
        assert_true(vx_decoder_mlp_reflect(&sc.dec));
        assert_int_equal(vx_decoder_mlp_dir_mode(&sc.dec), mode);
        vx_scene_free(&sc);
        /* a sort-last piece of it keeps a brick behind its low faces for the probes (piece.h) */
        vx_piece_req req = {.count = 2, .index = 1};
        vx_load_opts lo = {.piece = &req};
        assert_int_equal(vx_scene_load(dir, &lo, &sc), 0);
        assert_int_equal(req.lo_margin, 1);
        if (req.done) vx_piece_plan_free(&req.plan);
        vx_scene_free(&sc);
    }
    dir = write_scene("view", "{\"type\": \"mlp\", \"weights\": \"mlp.npy\", \"direction\": \"view\"}", f, (size_t)n2, 1);
    assert_int_equal(vx_scene_load(dir, NULL, &sc), 0);
    assert_false(vx_decoder_mlp_reflect(&sc.dec));
    vx_scene_free(&sc);
    dir = write_scene("sideways", "{\"type\": \"mlp\", \"weights\": \"mlp.npy\", \"direction\": \"sideways\"}", f,
                      (size_t)n2, 1);
    expect_load_error(dir, "decoder.direction");
    dir = write_scene("shdir", "{\"type\": \"sh\", \"direction\": \"reflected\"}", NULL, 0, 1);
    expect_load_error(dir, "only applies to the mlp decoder");
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_matches_reference),
        cmocka_unit_test(test_decode_sees_every_weight),
        cmocka_unit_test(test_box_mlp),
        cmocka_unit_test(test_reflect_slab),
        cmocka_unit_test(test_weights_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
