/* test_view_rgba8_cuda.c - the viewer's GPU display path without a window: the device
 * quantizer against vx_image_quantize on fresh random floats (NaN, negatives, > 1, exact
 * halves), and vx_render_rgba8_cuda against the CUDA frame copied to the host and
 * quantized there, on the scenes in $VX_TEST_SCENES. Needs a GPU: `make test-gpu`. */
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
#include "cli.h"
#include "image.h"
#include "vx_common.h"
#include "cuda_device.h"
#include "cuda_view.h"
#include "gpu_test.h"

/* Bytes of RGBA8 (device) against RGB8 (host); alpha must be 255. Returns mismatches. */
static size_t rgba_vs_rgb(const unsigned char *rgba, const unsigned char *rgb, size_t n, size_t *first) {
    size_t bad = 0;
    *first = (size_t)-1;
    for (size_t p = 0; p < n; p++) {
        int diff = rgba[4 * p + 3] != 255;
        for (int c = 0; c < 3; c++) diff |= rgba[4 * p + c] != rgb[3 * p + c];
        if (diff && !bad++) *first = p;
    }
    return bad;
}

static void test_quantize_random(void **state) {
    (void)state;
    const int w = 333, h = 97; /* not a multiple of the block size */
    size_t n = (size_t)w * h;
    vx_frame f;
    OK(vx_frame_alloc(&f, w, h, 0));
    for (size_t i = 0; i < 3 * n; i++) {
        float r = frand(0, 1);
        if (r < 0.02f) f.rgb[i] = NAN;
        else if (r < 0.1f) f.rgb[i] = frand(-2, 0);
        else if (r < 0.2f) f.rgb[i] = frand(1, 3);
        else if (r < 0.3f) f.rgb[i] = ((float)(int)frand(0, 255) + 0.5f) / 255.0f; /* ties */
        else f.rgb[i] = frand(0, 1);
    }
    for (size_t i = 0; i < n; i++) f.alpha[i] = 1.0f;
    unsigned char *ref = malloc(3 * n), *got = malloc(4 * n);
    float *d_rgb;
    unsigned char *d_out;
    assert_non_null(ref);
    assert_non_null(got);
    vx_image_quantize(&f, 0, ref);
    OK(vx_cuda_alloc((void **)&d_rgb, 3 * n * sizeof(float), "test rgb"));
    OK(vx_cuda_alloc((void **)&d_out, 4 * n, "test rgba8"));
    OK(vx_cuda_upload(d_rgb, f.rgb, 3 * n * sizeof(float)));
    OK(vx_cuda_quantize_rgba8(d_rgb, w, h, d_out));
    OK(vx_cuda_sync());
    OK(vx_cuda_download(got, d_out, 4 * n));
    size_t first, bad = rgba_vs_rgb(got, ref, n, &first);
    if (bad)
        fail_msg("%zu of %zu pixels differ; first %zu: rgb %g %g %g -> device %d %d %d, host %d %d %d", bad, n,
                 first, f.rgb[3 * first], f.rgb[3 * first + 1], f.rgb[3 * first + 2], got[4 * first],
                 got[4 * first + 1], got[4 * first + 2], ref[3 * first], ref[3 * first + 1], ref[3 * first + 2]);
    vx_cuda_free(d_rgb);
    vx_cuda_free(d_out);
    free(ref);
    free(got);
    vx_frame_free(&f);
}

/* One scene: render into a device buffer at two sizes (the buffer is reused after a
 * "resize", as the viewer does) and compare with the host path of the same renderer. */
static void check_scene(const char *path) {
    static const int sizes[3][2] = {{160, 120}, {61, 47}, {160, 120}};
    vx_cli_common cli;
    vx_scene s;
    vx_renderer *r;
    vx_cli_common_init(&cli);
    cli.scene_path = path;
    cli.has_azimuth = 1;
    cli.azimuth = frand(0, 360);
    OK(vx_cli_load_scene(&cli, &s));
    OK(vx_renderer_create(&r, &s, &cli.ropts, VX_BACKEND_CUDA));
    vx_cuda_volume *cv = vx_renderer_cuda_volume(r);
    assert_non_null(cv);
    unsigned char *d_buf;
    OK(vx_cuda_alloc((void **)&d_buf, 160 * 120 * 4, "viewer buffer"));
    for (int k = 0; k < 3; k++) {
        int w = sizes[k][0], h = sizes[k][1];
        size_t n = (size_t)w * h;
        vx_camera c;
        vx_frame f;
        long long samples = 0, rays = 0;
        OK(vx_cli_camera(&cli, &s, w, h, &c));
        OK(vx_frame_alloc(&f, w, h, 0));
        unsigned char *ref = malloc(3 * n), *got = malloc(4 * n);
        assert_non_null(ref);
        assert_non_null(got);
        OK(vx_renderer_render(r, &c, &f));
        vx_image_quantize(&f, 0, ref);
        OK(vx_render_rgba8_cuda(cv, &c, d_buf, &samples, &rays));
        OK(vx_cuda_download(got, d_buf, 4 * n));
        size_t first, bad = rgba_vs_rgb(got, ref, n, &first);
        if (bad) fail_msg("%s at %dx%d: %zu of %zu pixels differ (first %zu)", path, w, h, bad, n, first);
        assert_int_equal(samples, f.samples);
        assert_int_equal(rays, f.rays_hit);
        print_message("%s %dx%d: rgba8 path equals the host path, %.1f samples/ray\n", path, w, h,
                      rays ? (double)samples / rays : 0.0);
        free(ref);
        free(got);
        vx_frame_free(&f);
    }
    vx_cuda_free(d_buf);
    vx_renderer_destroy(r);
    vx_scene_free(&s);
}

static void test_scenes(void **state) {
    (void)state;
    const char *env = getenv("VX_TEST_SCENES");
    char buf[8192], *save, *tok;
    int count = 0;
    if (!env || !*env) { print_message("VX_TEST_SCENES is empty: no scenes checked\n"); skip(); }
    snprintf(buf, sizeof buf, "%s", env);
    for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save), count++) check_scene(tok);
    assert_true(count > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_random),
        cmocka_unit_test(test_scenes),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
