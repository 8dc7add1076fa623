/* test_api.c - the shared library's public C API (voxray.h) as a program embedding it
 * would call it: an in-memory box against the closed form, float32 and float64 op
 * twins against each other, and the -1 + message convention for bad calls. The Python
 * package (python/tests) covers the rest through ctypes. Runs without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "voxray.h"

static void test_box_closed_form(void **state) {
    (void)state;
    enum { N = 4 };
    float grid[N * N * N * 4];
    const float sigma = 0.8f, col[3] = {0.9f, 0.2f, 0.4f}, bg[3] = {0.1f, 0.5f, 1.0f};
    for (int i = 0; i < N * N * N; i++) {
        grid[i * 4] = sigma;
        for (int c = 0; c < 3; c++) grid[i * 4 + 1 + c] = col[c];
    }
    voxray_scene_desc sd;
    voxray_scene_desc_default(&sd);
    memcpy(sd.background, bg, sizeof bg);
    voxray_scene *s;
    assert_int_equal(voxray_scene_from_array(grid, N, N, N, 4, &sd, &s), 0);
    voxray_scene_info info;
    assert_int_equal(voxray_scene_get_info(s, &info), 0);
    assert_int_equal(info.decoder, VOXRAY_DECODER_RGBA);
    assert_true(info.world_min[0] == -1.0 && info.world_max[2] == 1.0);

    voxray_render_desc rd;
    voxray_render_desc_default(&rd);
    rd.width = rd.height = 9;
    rd.has_camera = 1;
    rd.eye[2] = 4.0;
    rd.fov = 20.0;
    rd.stop = 0.0f;
    rd.backend = VOXRAY_BACKEND_CPU;
    float rgb[9 * 9 * 3], alpha[9 * 9], depth[9 * 9];
    assert_int_equal(voxray_render(s, &rd, rgb, alpha, depth), 0);
    double t = exp(-sigma * 2.0); /* the centre ray crosses 2 units of the box */
    for (int c = 0; c < 3; c++) assert_float_equal(rgb[(4 * 9 + 4) * 3 + c], col[c] * (1 - t) + bg[c] * t, 1e-4);
    assert_float_equal(alpha[4 * 9 + 4], 1 - t, 1e-4);
    assert_string_equal(voxray_render_backend(s), "cpu");
    voxray_scene_free(s);
}

static void test_op_twins(void **state) {
    (void)state;
    enum { N = 50, F = 3, M = 40 };
    float feats[N * 8 * F], pts[N * 3], out[N * F], dout[N * F], dfeats[N * 8 * F];
    double feats64[N * 8 * F], pts64[N * 3], out64[N * F], dout64[N * F], dfeats64[N * 8 * F];
    unsigned r = 7;
    for (int i = 0; i < N * 8 * F; i++) { r = r * 1664525u + 1013904223u; feats64[i] = feats[i] = (float)(r >> 8) / 16777216.0f - 0.5f; }
    for (int i = 0; i < N * 3; i++) { r = r * 1664525u + 1013904223u; pts64[i] = pts[i] = (float)(r >> 8) / 8388608.0f - 1.0f; }
    for (int i = 0; i < N * F; i++) dout64[i] = dout[i] = (float)(i % 7) - 3.0f;
    assert_int_equal(voxray_trilinear_forward(VOXRAY_HOST, VOXRAY_F32, feats, pts, out, N, F, NULL), 0);
    assert_int_equal(voxray_trilinear_forward(VOXRAY_HOST, VOXRAY_F64, feats64, pts64, out64, N, F, NULL), 0);
    assert_int_equal(voxray_trilinear_backward(VOXRAY_HOST, VOXRAY_F32, dout, pts, dfeats, N, F, NULL), 0);
    assert_int_equal(voxray_trilinear_backward(VOXRAY_HOST, VOXRAY_F64, dout64, pts64, dfeats64, N, F, NULL), 0);
    for (int i = 0; i < N * F; i++) assert_float_equal(out[i], out64[i], 1e-6);
    for (int i = 0; i < N * 8 * F; i++) assert_float_equal(dfeats[i], dfeats64[i], 1e-6);

    /* grid gather on the unit placement: <scatter(dout), grid> == <dout, gather(grid)> */
    voxray_grid_desc g;
    assert_int_equal(voxray_grid_desc_unit(&g, 4, 3, 5, 2), 0);
    double grid[5 * 3 * 4 * 2], dgrid[5 * 3 * 4 * 2] = {0}, gout[M * 2], gd[M * 2];
    for (int i = 0; i < 5 * 3 * 4 * 2; i++) grid[i] = sin(i * 0.7);
    for (int i = 0; i < M * 2; i++) gd[i] = cos(i * 1.3);
    assert_int_equal(voxray_grid_gather(VOXRAY_HOST, VOXRAY_F64, &g, grid, pts64, M, gout, NULL), 0);
    assert_int_equal(voxray_grid_scatter(VOXRAY_HOST, VOXRAY_F64, &g, gd, pts64, M, dgrid, NULL), 0);
    double a = 0, b = 0;
    for (int i = 0; i < M * 2; i++) a += gd[i] * gout[i];
    for (int i = 0; i < 5 * 3 * 4 * 2; i++) b += dgrid[i] * grid[i];
    assert_float_equal(a, b, 1e-9);
}

static void test_bad_calls(void **state) {
    (void)state;
    voxray_scene *s = (voxray_scene *)1;
    assert_int_equal(voxray_scene_load("/nonexistent/scene.json", NULL, &s), -1);
    assert_null(s);
    assert_non_null(strstr(voxray_last_error(), "/nonexistent"));
    float grid[2 * 2 * 2 * 7] = {0};
    assert_int_equal(voxray_scene_from_array(grid, 2, 2, 2, 7, NULL, &s), -1);
    assert_non_null(strstr(voxray_last_error(), "7 channels"));
    float f[8], p[3] = {0}, o[1];
    double d[8];
    assert_int_equal(voxray_trilinear_forward(VOXRAY_CUDA, VOXRAY_F64, d, d, d, 1, 1, NULL), -1);
    assert_non_null(strstr(voxray_last_error(), "float64"));
    assert_int_equal(voxray_trilinear_forward(VOXRAY_HOST, VOXRAY_F32, f, p, o, 1, 0, NULL), -1);
    assert_int_equal(voxray_trilinear_forward(VOXRAY_HOST, VOXRAY_F32, f, p, o, -1, 1, NULL), -1);
    assert_int_equal(voxray_trilinear_forward(VOXRAY_HOST, 9, f, p, o, 1, 1, NULL), -1);
    voxray_grid_desc g;
    assert_int_equal(voxray_grid_desc_unit(&g, 1, 2, 2, 1), -1);
    const char *argv[] = {"convert", "/nonexistent.nrrd", "/tmp/voxray-test-api-out"};
    assert_int_equal(voxray_convert(3, argv), 1);
    assert_int_equal(voxray_api_version(), VOXRAY_API_VERSION);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_closed_form),
        cmocka_unit_test(test_op_twins),
        cmocka_unit_test(test_bad_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
