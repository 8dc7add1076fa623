/* test_formats.c - the volume readers: the real files in ../shared/data/volumes against
 * the facts in its README, then small synthetic files of every format and variant
 * (random values, both endians, gzip/zlib, detached data, 4-D, Plenoxels .npz) checked
 * voxel by voxel, and `voxray convert` round trips. Malformed files: test_formats_bad.c. */
#include "vx_test.h"

#include <math.h>
#include <zip.h>
#include <zlib.h>

#include "commands.h"
#include "formats.h"
#include "scene.h"
#include "vx_common.h"
#include "fmt_fixtures.h"

/* ---- real files -------------------------------------------------------------------------- */
static void load_real(const char *name, const vx_load_opts *o, vx_grid *g) {
    char path[512];
    snprintf(path, sizeof path, "../shared/data/volumes/%s", name);
    vx_test_need_file(path);
    vx_decoder d;
    int has = 7;
    int rc = vx_format_load(path, o, g, &d, &has);
    if (rc) fprintf(stderr, "%s\n", vx_errmsg());
    assert_int_equal(rc, 0);
    assert_int_equal(has, 0);
    assert_int_equal(g->nc, 1);
    assert_int_equal(g->align_corners, 0);
}

static void range_of(const vx_grid *g, float *mn, float *mx) {
    *mn = INFINITY;
    *mx = -INFINITY;
    for (size_t i = 0; i < vx_grid_count(g); i++) {
        if (g->data[i] < *mn) *mn = g->data[i];
        if (g->data[i] > *mx) *mx = g->data[i];
    }
}

static void test_real_flair(void **st) {
    (void)st;
    vx_grid g;
    load_real("FLAIR.nrrd", NULL, &g);
    assert_int_equal(g.nx, 124); assert_int_equal(g.ny, 160); assert_int_equal(g.nz, 140);
    assert_int_equal(g.src_dtype, VX_DT_U8);
    /* LPS space directions and origin, turned into RAS: x and y rows negated */
    assert_true(fabs(g.i2w[0] - 0.99359200921208746) < 1e-12);
    assert_true(fabs(g.i2w[4] - -0.04970492721885441) < 1e-12);
    assert_true(fabs(g.i2w[8] - -0.10151029228632795) < 1e-12);
    assert_true(fabs(g.i2w[3] - -64.898) < 1e-3);
    assert_true(fabs(g.i2w[7] - -110.431) < 1e-3);
    assert_true(fabs(g.i2w[11] - -27.926) < 1e-3);
    assert_true(fabs(g.i2w[1]) > 0.01 && fabs(g.i2w[6]) > 0.1); /* oblique */
    float mn, mx;
    range_of(&g, &mn, &mx);
    assert_true(mn == 0.0f && mx > 100.0f && mx <= 255.0f);
    char buf[4096];
    assert_int_equal(vx_format_describe("../shared/data/volumes/FLAIR.nrrd", NULL, buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "NRRD"));
    assert_non_null(strstr(buf, "124 x 160 x 140"));
    assert_non_null(strstr(buf, "gzip"));
    vx_grid_free(&g);
}

static void test_real_ch2bet(void **st) {
    (void)st;
    vx_grid g;
    load_real("ch2bet.nii.gz", NULL, &g);
    assert_int_equal(g.nx, 181); assert_int_equal(g.ny, 217); assert_int_equal(g.nz, 181);
    assert_int_equal(g.src_dtype, VX_DT_U8);
    double want[12] = {1, 0, 0, -90, 0, 1, 0, -125, 0, 0, 1, -71};
    for (int i = 0; i < 12; i++) assert_true(fabs(g.i2w[i] - want[i]) < 1e-6);
    float mn, mx;
    range_of(&g, &mn, &mx);
    assert_true(mn == 0.0f && mx == 133.0f);
    vx_grid_free(&g);
}

static void test_real_skull(void **st) {
    (void)st;
    vx_grid g;
    load_real("skull_2.9.inr", NULL, &g);
    assert_int_equal(g.nx, 64); assert_int_equal(g.ny, 64); assert_int_equal(g.nz, 64);
    assert_int_equal(g.src_dtype, VX_DT_F32);
    assert_true(fabs(g.i2w[0] - 3.943050) < 1e-9 && fabs(g.i2w[5] - 3.943050) < 1e-9 &&
                fabs(g.i2w[10] - 3.650790) < 1e-9);
    float mn, mx;
    range_of(&g, &mn, &mx);
    assert_true(mn >= 0.0f && mn < 0.01f && fabsf(mx - 5.43f) < 0.01f);
    vx_grid_free(&g);
}

static void test_real_brainsmall(void **st) {
    (void)st;
    vx_grid g;
    load_real("brainsmall.den", NULL, &g);
    assert_int_equal(g.nx, 128); assert_int_equal(g.ny, 128); assert_int_equal(g.nz, 84);
    assert_int_equal(g.src_dtype, VX_DT_U8);
    /* spacing from original / map size: 256/128, 256/128, 109/84 */
    assert_true(fabs(g.i2w[0] - 2.0) < 1e-12 && fabs(g.i2w[10] - 109.0 / 84.0) < 1e-12);
    float mn, mx;
    range_of(&g, &mn, &mx);
    assert_true(mn == 0.0f && mx > 100.0f && mx <= 255.0f);
    /* --spacing overrides */
    vx_load_opts o;
    memset(&o, 0, sizeof o);
    o.spacing[0] = o.spacing[1] = 2.0;
    o.spacing[2] = 1.95;
    vx_grid g2;
    load_real("brainsmall.den", &o, &g2);
    assert_true(fabs(g2.i2w[10] - 1.95) < 1e-12);
    assert_memory_equal(g.data, g2.data, vx_grid_count(&g) * sizeof(float));
    vx_grid_free(&g);
    vx_grid_free(&g2);
}

/* ---- synthetic files ------------------------------------------------------------------- */
/* Load and compare to the fixture's values and placement. */
static void expect_volume(const char *path, const vx_load_opts *o, const fx_vol *v, const double *i2w) {
    vx_grid g;
    vx_decoder d;
    int has = 7;
    memset(&g, 0, sizeof g);
    int rc = vx_format_load(path, o, &g, &d, &has);
    if (rc) fprintf(stderr, "%s: %s\n", path, vx_errmsg());
    assert_int_equal(rc, 0);
    assert_int_equal(has, 0);
    assert_int_equal(g.nx, v->nx); assert_int_equal(g.ny, v->ny); assert_int_equal(g.nz, v->nz);
    assert_int_equal(g.nc, 1);
    assert_int_equal(g.src_dtype, v->dtype);
    assert_int_equal(g.align_corners, 0);
    for (size_t i = 0; i < fx_count(v); i++) {
        double want = v->vals[i] * v->slope + v->inter;
        if (fabs(g.data[i] - want) > 1e-4 * (1 + fabs(want))) {
            fprintf(stderr, "%s: voxel %zu is %g, expected %g\n", path, i, g.data[i], want);
            fail();
        }
    }
    if (i2w)
        for (int k = 0; k < 12; k++) {
            if (fabs(g.i2w[k] - i2w[k]) > 1e-5 * (1 + fabs(i2w[k]))) {
                fprintf(stderr, "%s: i2w[%d] is %g, expected %g\n", path, k, g.i2w[k], i2w[k]);
                fail();
            }
        }
    char buf[4096];
    if (!o || !o->raw_spec) {
        assert_int_equal(vx_format_describe(path, o, buf, sizeof buf), 0);
        assert_true(strlen(buf) > 20);
    }
    vx_grid_free(&g);
}

static const vx_dtype all_types[] = {VX_DT_U8, VX_DT_I8, VX_DT_U16, VX_DT_I16, VX_DT_U32,
                                     VX_DT_I32, VX_DT_F32, VX_DT_F64};

static void test_nrrd_variants(void **st) {
    (void)st;
    char path[512];
    for (size_t t = 0; t < sizeof all_types / sizeof *all_types; t++)
        for (int big = 0; big < 2; big++)
            for (int gz = 0; gz < 2; gz++) {
                fx_vol v;
                fx_random(&v, 3 + (int)(vx_test_rand() * 4), 2 + (int)(vx_test_rand() * 4), 2, all_types[t]);
                double i2w[12];
                fx_nrrd(&v, path, sizeof path, big, gz, 0, i2w);
                expect_volume(path, NULL, &v, i2w);
                fx_nrrd(&v, path, sizeof path, big, gz, 1, i2w); /* detached .nhdr */
                expect_volume(path, NULL, &v, i2w);
                fx_free(&v);
            }
}

static void test_nrrd_4d_and_skip(void **st) {
    (void)st;
    char path[512], hdr[1024];
    fx_vol v;
    fx_random(&v, 4, 3, 2, VX_DT_I16);
    size_t n = fx_count(&v), bytes = n * 2;
    /* 4-D, three volumes on the last axis; volume 2 holds v's values */
    unsigned char *pay = calloc(3, bytes);
    fx_encode(&v, 0, pay + 2 * bytes);
    snprintf(hdr, sizeof hdr, "NRRD0004\ntype: short\ndimension: 4\nsizes: 4 3 2 3\nendian: little\n"
             "encoding: raw\nspace: RAS\nspace directions: (2,0,0) (0,3,0) (0,0,4) none\n"
             "space origin: (1,2,3)\n\n");
    snprintf(path, sizeof path, "%s/four.nrrd", vx_test_tmpdir());
    fx_write2(path, hdr, strlen(hdr), pay, 3 * bytes);
    vx_load_opts o;
    memset(&o, 0, sizeof o);
    o.volume_index = 2;
    double i2w[12] = {2, 0, 0, 1, 0, 3, 0, 2, 0, 0, 4, 3};
    expect_volume(path, &o, &v, i2w);
    o.volume_index = 3;
    vx_grid g;
    vx_decoder d;
    int has;
    assert_int_equal(vx_format_load(path, &o, &g, &d, &has), -1);
    assert_non_null(strstr(vx_errmsg(), "volume 3"));
    /* byte skip -1: payload at the end of a detached file with junk in front */
    snprintf(path, sizeof path, "%s/skip.raw", vx_test_tmpdir());
    unsigned char junk[37] = {1, 2, 3};
    fx_write2(path, junk, sizeof junk, pay + 2 * bytes, bytes);
    snprintf(hdr, sizeof hdr, "NRRD0004\ntype: int16\ndimension: 3\nsizes: 4 3 2\nendian: little\n"
             "encoding: raw\nbyte skip: -1\nspacings: 0.5 0.25 2\ndata file: skip.raw\n");
    snprintf(path, sizeof path, "%s/skip.nhdr", vx_test_tmpdir());
    vx_test_write_text(path, hdr);
    double sp[12] = {0.5, 0, 0, 0, 0, 0.25, 0, 0, 0, 0, 2, 0};
    expect_volume(path, NULL, &v, sp);
    free(pay);
    fx_free(&v);
}

static void test_nifti_variants(void **st) {
    (void)st;
    char path[512];
    for (size_t t = 0; t < sizeof all_types / sizeof *all_types; t++)
        for (int big = 0; big < 2; big++)
            for (int mode = 0; mode < 3; mode++) { /* .nii, .nii.gz, .hdr/.img */
                fx_vol v;
                fx_random(&v, 2 + (int)(vx_test_rand() * 5), 3, 2 + (int)(vx_test_rand() * 3), all_types[t]);
                if (t % 2) { v.slope = vx_test_uniform(0.5, 2); v.inter = vx_test_uniform(-10, 10); }
                double i2w[12];
                fx_nifti(&v, path, sizeof path, big, mode, (int)(t % 3), 1, 0, i2w);
                expect_volume(path, NULL, &v, i2w);
                fx_free(&v);
            }
}

static void test_nifti_4d(void **st) {
    (void)st;
    char path[512];
    fx_vol v;
    fx_random(&v, 3, 4, 5, VX_DT_F32);
    double i2w[12];
    for (int gz = 0; gz < 2; gz++) {
        fx_nifti(&v, path, sizeof path, 0, gz, 1, 4, 3, i2w); /* 4 volumes, v is volume 3 */
        vx_load_opts o;
        memset(&o, 0, sizeof o);
        o.volume_index = 3;
        expect_volume(path, &o, &v, i2w);
        char buf[4096];
        assert_int_equal(vx_format_describe(path, NULL, buf, sizeof buf), 0);
        assert_non_null(strstr(buf, "4 volumes"));
    }
    fx_free(&v);
}

static void test_metaimage_variants(void **st) {
    (void)st;
    char path[512];
    for (size_t t = 0; t < sizeof all_types / sizeof *all_types; t++)
        for (int big = 0; big < 2; big++)
            for (int mode = 0; mode < 4; mode++) { /* mha, mha compressed, mhd+raw, mhd+zraw */
                fx_vol v;
                fx_random(&v, 4, 2 + (int)(vx_test_rand() * 4), 3, all_types[t]);
                double i2w[12];
                fx_metaimage(&v, path, sizeof path, big, mode, i2w);
                expect_volume(path, NULL, &v, i2w);
                fx_free(&v);
            }
}

static void test_inr_variants(void **st) {
    (void)st;
    char path[512];
    for (size_t t = 0; t < sizeof all_types / sizeof *all_types; t++)
        for (int big = 0; big < 2; big++)
            for (int gz = 0; gz < 2; gz++) {
                fx_vol v;
                fx_random(&v, 3, 5, 2 + (int)(vx_test_rand() * 3), all_types[t]);
                double i2w[12];
                fx_inr(&v, path, sizeof path, big, gz, i2w);
                expect_volume(path, NULL, &v, i2w);
                fx_free(&v);
            }
}

static void test_den_and_raw(void **st) {
    (void)st;
    char path[512];
    for (int big = 0; big < 2; big++) {
        fx_vol v;
        fx_random(&v, 6, 5, 4, VX_DT_U8);
        double i2w[12];
        fx_den(&v, path, sizeof path, big, i2w);
        expect_volume(path, NULL, &v, i2w);
        fx_free(&v);
    }
    for (size_t t = 0; t < sizeof all_types / sizeof *all_types; t++)
        for (int big = 0; big < 2; big++) {
            fx_vol v;
            fx_random(&v, 5, 3, 4, all_types[t]);
            char spec[128];
            vx_load_opts o;
            memset(&o, 0, sizeof o);
            fx_raw(&v, path, sizeof path, big, spec, sizeof spec);
            o.raw_spec = spec;
            o.spacing[0] = 0.5; o.spacing[1] = 1.5; o.spacing[2] = 2.5;
            double i2w[12] = {0.5, 0, 0, 0, 0, 1.5, 0, 0, 0, 0, 2.5, 0};
            expect_volume(path, &o, &v, i2w);
            fx_free(&v);
        }
}

/* ---- Plenoxels ------------------------------------------------------------------------- */
static void test_plenoxels(void **st) {
    (void)st;
    for (int deg = 0; deg <= 3; deg++) {
        fx_plenoxels p;
        char path[512];
        fx_plenoxels_make(&p, 3 + deg, 4, 2 + deg, deg);
        fx_plenoxels_write(&p, path, sizeof path, NULL);
        vx_grid g;
        vx_decoder d;
        int has = 0;
        int rc = vx_format_load(path, NULL, &g, &d, &has);
        if (rc) fprintf(stderr, "%s\n", vx_errmsg());
        assert_int_equal(rc, 0);
        assert_int_equal(has, 1);
        assert_int_equal(d.type, VX_DEC_SH);
        assert_int_equal(d.sh_degree, deg);
        assert_int_equal(d.color_act, VX_CACT_PLENOXELS);
        assert_int_equal(d.density_act, VX_DACT_RELU);
        int B = (deg + 1) * (deg + 1), nc = 1 + 3 * B;
        assert_int_equal(g.nc, nc);
        assert_int_equal(g.nx, p.res[0]); assert_int_equal(g.ny, p.res[1]); assert_int_equal(g.nz, p.res[2]);
        assert_int_equal(g.align_corners, 0);
        for (int x = 0; x < p.res[0]; x++)
            for (int y = 0; y < p.res[1]; y++)
                for (int z = 0; z < p.res[2]; z++) {
                    int l = p.links[(x * p.res[1] + y) * p.res[2] + z];
                    const float *c = g.data + (((size_t)z * g.ny + y) * g.nx + x) * nc;
                    for (int k = 0; k < nc; k++) {
                        float want = l < 0 ? 0.0f : k == 0 ? p.density[l]
                                   : vx_half_to_float(p.sh[(size_t)l * 3 * B + k - 1]);
                        assert_true(c[k] == want);
                    }
                }
        /* placement: box = center +- radius, cell-centred (voxel i at lo + (i+0.5)*2r/res) */
        for (int a = 0; a < 3; a++) {
            double cell = 2 * p.radius[a] / p.res[a];
            assert_true(fabs(g.i2w[5 * a] - cell) < 1e-9);
            assert_true(fabs(g.i2w[4 * a + 3] - (p.center[a] - p.radius[a] + 0.5 * cell)) < 1e-9);
        }
        char buf[4096];
        assert_int_equal(vx_format_describe(path, NULL, buf, sizeof buf), 0);
        assert_non_null(strstr(buf, "Plenoxels"));
        assert_non_null(strstr(buf, "sh_data.npy"));
        vx_grid_free(&g);
        fx_plenoxels_free(&p);
    }
}

/* ---- convert round trip ---------------------------------------------------------------- */
static void test_convert_roundtrip(void **st) {
    (void)st;
    char path[512], out[512];
    fx_vol v;
    fx_random(&v, 5, 4, 3, VX_DT_I16);
    double i2w[12];
    fx_nrrd(&v, path, sizeof path, 1, 1, 0, i2w);
    snprintf(out, sizeof out, "%s/converted", vx_test_tmpdir());
    char *argv[] = {"convert", path, out, NULL};
    assert_int_equal(vx_cmd_convert(3, argv), 0);
    vx_scene s, s2;
    assert_int_equal(vx_scene_load(out, NULL, &s), 0);
    assert_int_equal(vx_scene_load(path, NULL, &s2), 0);
    assert_int_equal(s.grid.nx, 5); assert_int_equal(s.grid.nz, 3);
    for (int k = 0; k < 12; k++) assert_true(fabs(s.grid.i2w[k] - i2w[k]) < 1e-9);
    assert_int_equal(s.grid.align_corners, 0);
    for (size_t i = 0; i < fx_count(&v); i++) assert_true(s.grid.data[i] == (float)v.vals[i]);
    assert_int_equal(s.dec.type, VX_DEC_SCALAR);
    assert_true(s.dec.window_lo == s2.dec.window_lo && s.dec.window_hi == s2.dec.window_hi);
    assert_int_equal(s.dec.tf_n, s2.dec.tf_n);
    assert_true(fabsf(s.dec.density_scale - s2.dec.density_scale) < 1e-6f * s2.dec.density_scale);
    vx_scene_free(&s);
    vx_scene_free(&s2);

    /* a Plenoxels checkpoint keeps its sh decoder */
    fx_plenoxels p;
    fx_plenoxels_make(&p, 3, 2, 4, 1);
    fx_plenoxels_write(&p, path, sizeof path, NULL);
    snprintf(out, sizeof out, "%s/converted_sh", vx_test_tmpdir());
    char *argv2[] = {"convert", path, out, "--half", NULL};
    assert_int_equal(vx_cmd_convert(4, argv2), 0);
    assert_int_equal(vx_scene_load(out, NULL, &s), 0);
    assert_int_equal(s.dec.type, VX_DEC_SH);
    assert_int_equal(s.dec.sh_degree, 1);
    assert_int_equal(s.dec.color_act, VX_CACT_PLENOXELS);
    assert_int_equal(s.grid.align_corners, 0);
    assert_int_equal(s.grid.nc, 13);
    vx_scene_free(&s);
    fx_plenoxels_free(&p);
    fx_free(&v);

    /* bad input: a clear failure and no manifest left behind */
    char *argv3[] = {"convert", "/nonexistent/x.nrrd", out, NULL};
    assert_int_equal(vx_cmd_convert(3, argv3), 1);
}

int main(void) {
    vx_test_seed();
    fx_setup(vx_test_rng_state, vx_test_tmpdir());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_flair),
        cmocka_unit_test(test_real_ch2bet),
        cmocka_unit_test(test_real_skull),
        cmocka_unit_test(test_real_brainsmall),
        cmocka_unit_test(test_nrrd_variants),
        cmocka_unit_test(test_nrrd_4d_and_skip),
        cmocka_unit_test(test_nifti_variants),
        cmocka_unit_test(test_nifti_4d),
        cmocka_unit_test(test_metaimage_variants),
        cmocka_unit_test(test_inr_variants),
        cmocka_unit_test(test_den_and_raw),
        cmocka_unit_test(test_plenoxels),
        cmocka_unit_test(test_convert_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
