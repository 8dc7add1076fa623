/* test_hdda_cuda.c - NanoVDB's HDDA march on the device (kernels/hdda.cu) against its CPU
 * twin (render_hdda_cpu.cpp, the same hdda_march.h) on fresh random sparse fog grids, and
 * both against voxray's CPU renderer where the volume has no density at brick faces (then
 * the two marches take the same samples). Needs a GPU and NanoVDB: `make test-gpu`. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu_test.h"
#ifdef VX_HAVE_NANOVDB
#include "backend.h"
#include "cuda_hdda.h"
#include "render_hdda.h"
#include "sparse_grid.h"
#include "hdda_fixture.h"

static void test_hdda_random(void **state) {
    (void)state;
    for (int trial = 0; trial < 6; trial++) {
        vx_scene s;
        random_scene(&s, trial < 3 ? 32 : 64, trial & 1);
        vx_render_opts o;
        vx_render_opts_default(&o);
        vx_volume v;
        OK(vx_volume_prepare(&v, &s, &o));
        vx_hdda_grid *h;
        OK(vx_hdda_grid_build(&h, &s.grid));
        vx_camera c;
        camera(&c, 96, 80);
        vx_frame fc = {0}, fg = {0}, fv = {0};
        OK(vx_frame_alloc(&fc, 96, 80, 0));
        OK(vx_frame_alloc(&fg, 96, 80, 0));
        OK(vx_frame_alloc(&fv, 96, 80, 0));
        OK(vx_render_hdda_cpu(h, &v.mp, &c, &fc));
        vx_cuda_hdda *d;
        OK(vx_hdda_upload_cuda(&d, h, &v.mp));
        OK(vx_render_hdda_cuda(d, &c, &fg));
        OK(vx_render_cpu(&v, &c, &o, &fv));
        double dg = max_diff(&fc, &fg), dv = max_diff(&fc, &fv);
        print_message("trial %d: cuda vs cpu twin %.2e (samples %lld / %lld), hdda vs voxray %.2e%s\n", trial, dg,
                      fg.samples, fc.samples, dv, trial & 1 ? "" : " (density on brick faces: not compared)");
        assert_true(dg < 1e-4);
        assert_true(llabs(fg.samples - fc.samples) <= fc.samples / 1000 + 8);
        if (trial & 1) assert_true(dv < 1e-4);
        vx_hdda_free_cuda(d);
        vx_hdda_grid_free(h);
        vx_frame_free(&fc);
        vx_frame_free(&fg);
        vx_frame_free(&fv);
        vx_volume_free(&v);
        vx_scene_free(&s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_hdda_random)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
#else
int main(void) {
    printf("test_hdda_cuda: skipped (built without NanoVDB)\n");
    return 0;
}
#endif
