/* test_hdda.c - NanoVDB's HDDA march on the CPU (render_hdda_cpu.cpp over hdda_march.h)
 * against voxray's CPU renderer on fresh random sparse fog grids whose brick faces hold no
 * density (there both marches sample the same segments: the images agree to float
 * rounding), the NanoVDB grid's leaves and values against the bricks, and the refusals.
 * The device twin is tests/gpu/test_hdda_cuda.c. Skips without NanoVDB. */
#include "vx_test.h"

#ifdef VX_HAVE_NANOVDB
#include "backend.h"
#include "render_hdda.h"

static float frand(float lo, float hi) { return (float)vx_test_uniform(lo, hi); }
#include "hdda_fixture.h"

static void test_hdda_matches_voxray(void **state) {
    (void)state;
    for (int trial = 0; trial < 4; trial++) {
        vx_scene s;
        random_scene(&s, trial < 2 ? 32 : 48, 1);
        vx_render_opts o;
        vx_render_opts_default(&o);
        vx_volume v;
        assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
        vx_hdda_grid *h;
        assert_int_equal(vx_hdda_grid_build(&h, &s.grid), 0);
        assert_int_equal(vx_hdda_grid_leaves(h), s.grid.sparse->nbricks);
        vx_camera c;
        camera(&c, 64, 48);
        vx_frame fh = {0}, fv = {0};
        assert_int_equal(vx_frame_alloc(&fh, 64, 48, 0), 0);
        assert_int_equal(vx_frame_alloc(&fv, 64, 48, 0), 0);
        assert_int_equal(vx_render_hdda_cpu(h, &v.mp, &c, &fh), 0);
        assert_int_equal(vx_render_cpu(&v, &c, &o, &fv), 0);
        double d = max_diff(&fh, &fv), a = 0;
        for (size_t i = 0; i < (size_t)64 * 48; i++) a += fv.alpha[i];
        print_message("trial %d: %zu bricks, hdda vs voxray max diff %.2e, mean opacity %.3f, samples %lld / %lld\n",
                      trial, s.grid.sparse->nbricks, d, a / (64 * 48), fh.samples, fv.samples);
        assert_true(a / (64 * 48) > 0.05); /* the volume is in view */
        assert_true(d < 1e-5); /* the same samples: only float rounding differs */
        vx_hdda_grid_free(h);
        vx_frame_free(&fh);
        vx_frame_free(&fv);
        vx_volume_free(&v);
        vx_scene_free(&s);
    }
}

static void test_hdda_refusals(void **state) {
    (void)state;
    vx_scene s;
    random_scene(&s, 16, 0);
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.jitter = 7;
    vx_volume v;
    assert_int_equal(vx_volume_prepare(&v, &s, &o), 0);
    vx_hdda_grid *h;
    assert_int_equal(vx_hdda_grid_build(&h, &s.grid), 0);
    vx_camera c;
    camera(&c, 8, 8);
    vx_frame f = {0};
    assert_int_equal(vx_frame_alloc(&f, 8, 8, 0), 0);
    assert_int_equal(vx_render_hdda_cpu(h, &v.mp, &c, &f), -1); /* jittered samples are not compared */
    vx_frame_free(&f);
    vx_hdda_grid_free(h);
    vx_volume_free(&v);
    vx_grid dense = {0}; /* a dense grid is refused: the bench makes it sparse first */
    dense.nx = dense.ny = dense.nz = 2;
    dense.nc = 1;
    float vals[8] = {0};
    dense.data = vals;
    assert_int_equal(vx_hdda_grid_build(&h, &dense), -1);
    assert_non_null(strstr(vx_errmsg(), "sparse grid of one channel"));
    vx_scene_free(&s);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_hdda_matches_voxray), cmocka_unit_test(test_hdda_refusals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("test_hdda: skipped (built without NanoVDB: libnanovdb-dev)\n");
    return 0;
}
#endif
