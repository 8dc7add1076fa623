/* test_fit_coarse.c - the coarse level of `voxray fit --coarse` (fit_coarse.c) against a
 * direct double-precision evaluation of its interpolation U: the map, the restriction
 * (U^T of the alive voxels' colour gradient), the first Adam step's prolongation (closed
 * form: -lr sign(U^T g) interpolated), dense and bricked storage, and the training loop. */
#include "vx_test.h"

#include <math.h>

#include "fit.h"
#include "fit_coarse.h"
#include "fit_march.h"
#include "fit_train.h"
#include "fit_coarse_fixture.h"
#include "make_scene.h"
#include "render.h"

/* U's weight of coarse entry (i, j, k) at fine voxel (x, y, z), from the boxes alone. */
static void ref_axis(const vx_fit_model *f, int a, int i, int *k, double *w) {
    int n[3] = {f->nx, f->ny, f->nz};
    double h = (f->box_hi[a] - f->box_lo[a]) / n[a], p = f->box_lo[a] + (i + 0.5) * h;
    double ch = (f->coarse_hi[a] - f->coarse_lo[a]) / f->cn[a], u = (p - f->coarse_lo[a]) / ch - 0.5;
    u = fmin(fmax(u, 0.0), f->cn[a] - 1.0);
    *k = (int)floor(u);
    if (*k > f->cn[a] - 2) *k = f->cn[a] - 2;
    *w = u - *k;
}

static void ref_corners(const vx_fit_model *f, int x, int y, int z, size_t idx[8], double w[8]) {
    int k[3], p[3] = {x, y, z};
    double fr[3];
    for (int a = 0; a < 3; a++) ref_axis(f, a, p[a], &k[a], &fr[a]);
    for (int j = 0; j < 8; j++) {
        int d[3] = {j & 1, (j >> 1) & 1, j >> 2};
        idx[j] = ((size_t)(k[2] + d[2]) * f->cn[1] + k[1] + d[1]) * f->cn[0] + k[0] + d[0];
        w[j] = 1.0;
        for (int a = 0; a < 3; a++) w[j] *= d[a] ? fr[a] : 1.0 - fr[a];
    }
}

static void random_coarse_model(vx_fit_model *f, int bricked) { fc_random_model(f, bricked, vx_test_uniform); }

/* The map against the boxes, and its refusal of a level finer than half the lattice. */
static void test_coarse_map(void **state) {
    (void)state;
    for (int trial = 0; trial < 20; trial++) {
        vx_fit_model f;
        random_coarse_model(&f, 0);
        vx_fit_coarse_map m;
        assert_int_equal(vx_fit_coarse_map_of(&f, &m), 0);
        int n[3] = {f.nx, f.ny, f.nz};
        for (int a = 0; a < 3; a++)
            for (int i = 0; i < n[a]; i++) {
                int k, kr;
                float w;
                double wr;
                vx_fit_coarse_axis(&m, a, i, &k, &w);
                ref_axis(&f, a, i, &kr, &wr);
                /* k + w is the coordinate: at a coarse centre (k, 1) and (k + 1, 0) are the same point */
                if (fabs(k + w - (kr + wr)) > 1e-5 || k < 0 || k > m.n[a] - 2 || w < 0 || w > 1) fail_msg("axis %d voxel %d: %d %g, expected %d %g", a, i, k, w, kr, wr);
            }
        vx_fit_model_free(&f);
    }
    vx_fit_model f;
    int res[3] = {16, 16, 16};
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    float bg[3] = {1, 1, 1};
    assert_int_equal(vx_fit_model_init_cpu(&f, res, 1, lo, hi, 0.5f, 0.0f, bg, 0.1f), 0);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 9), 0);
    vx_fit_coarse_map m;
    assert_int_equal(vx_fit_coarse_map_of(&f, &m), -1);
    assert_non_null(strstr(vx_errmsg(), "at least twice"));
    vx_fit_coarse_free(&f);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 8), 0);
    assert_int_equal(vx_fit_coarse_map_of(&f, &m), 0);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 8), -1); /* one level only */
    vx_fit_model_free(&f);
    assert_int_equal(vx_fit_model_init_cpu(&f, res, 1, lo, hi, 0.5f, 0.0f, bg, 0.1f), 0);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 1), -1);
    vx_fit_model_free(&f);
}

/* Restriction and the first step's prolongation against the double-precision U. */
static void check_restrict_apply(int bricked) {
    for (int trial = 0; trial < 12; trial++) {
        vx_fit_model f;
        random_coarse_model(&f, bricked);
        int nc = f.nc, ncc = nc - 1;
        size_t nv = vx_fit_storage_voxels(&f), ncoarse = (size_t)f.cn[0] * f.cn[1] * f.cn[2] * ncc;
        double *gc = calloc(ncoarse, sizeof *gc);
        vx_fit_index L;
        vx_fit_index_of(&f, &L);
        for (size_t v = 0; v < nv; v++) {
            int x, y, z;
            if (!f.alive[v] || vx_fit_xyz(&L, v, &x, &y, &z)) continue;
            size_t idx[8];
            double w[8];
            ref_corners(&f, x, y, z, idx, w);
            for (int k = 0; k < 8; k++)
                for (int c = 0; c < ncc; c++) gc[idx[k] * ncc + c] += w[k] * f.grad[v * nc + 1 + c];
        }
        assert_int_equal(vx_fit_coarse_restrict_cpu(&f), 0);
        for (size_t j = 0; j < ncoarse; j++)
            if (fabs(f.coarse_grad[j] - gc[j]) > 1e-4 * (1.0 + fabs(gc[j])))
                fail_msg("%s trial %d: coarse gradient %zu is %g, expected %g", bricked ? "bricked" : "dense", trial, j,
                         f.coarse_grad[j], gc[j]);
        /* the first Adam step (t = 1) of each entry is -lr g / (|g| + eps): -lr sign(g), g the
         * restriction just checked (its float sums, whose sign the double ones may not share
         * where the sum is nearly 0) */
        for (size_t j = 0; j < ncoarse; j++) gc[j] = f.coarse_grad[j];
        vx_fit_hparams h;
        vx_fit_hparams_default(&h);
        float lr = (float)vx_test_uniform(0.01, 0.1);
        float *before = malloc(nv * nc * sizeof(float));
        memcpy(before, f.data, nv * nc * sizeof(float));
        f.t = 1;
        assert_int_equal(vx_fit_coarse_apply_cpu(&f, &h, lr), 0);
        for (size_t j = 0; j < ncoarse; j++) assert_true(f.coarse_grad[j] == 0.0f); /* consumed */
        for (size_t v = 0; v < nv; v++) {
            int x, y, z;
            int lattice = !vx_fit_xyz(&L, v, &x, &y, &z);
            size_t idx[8];
            double w[8];
            if (lattice) ref_corners(&f, x, y, z, idx, w);
            for (int c = 0; c < nc; c++) {
                double want = before[v * nc + c];
                if (c > 0 && f.alive[v] && lattice)
                    for (int k = 0; k < 8; k++) {
                        double g = gc[idx[k] * ncc + c - 1];
                        want += w[k] * (g > 0 ? -lr : g < 0 ? lr : 0.0) * fabs(g) / (fabs(g) + 1e-8);
                    }
                if (fabs(f.data[v * nc + c] - want) > 2e-5)
                    fail_msg("%s trial %d: voxel %zu channel %d is %g, expected %g (alive %d)", bricked ? "bricked" : "dense",
                             trial, v, c, f.data[v * nc + c], want, f.alive[v]);
            }
        }
        free(before);
        free(gc);
        vx_fit_model_free(&f);
    }
}

static void test_coarse_dense(void **state) { (void)state; check_restrict_apply(0); }
static void test_coarse_bricked(void **state) { (void)state; check_restrict_apply(1); }

/* The training loop runs the level through a stage change: with the fine colour frozen
 * (--lr-sh 0) the colour channels move only with it, and the fit is better for it. */
static void test_coarse_training(void **state) {
    (void)state;
    vx_scene s;
    memset(&s, 0, sizeof s);
    assert_int_equal(vx_make_scene("orbs", 16, &s.grid, &s), 0);
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(&s.grid, lo, hi, 0);
    s.background[0] = s.background[1] = s.background[2] = 1.0f;
    vx_dataset train;
    memset(&train, 0, sizeof train);
    {
        vx_render_opts o;
        vx_render_opts_default(&o);
        vx_volume vol;
        assert_int_equal(vx_volume_prepare(&vol, &s, &o), 0);
        train.n = 6;
        train.width = train.height = 32;
        train.rgb = malloc((size_t)6 * 32 * 32 * 3 * sizeof(float));
        train.cams = malloc(6 * sizeof(vx_camera));
        train.names = calloc(6, sizeof *train.names);
        double ctr[3] = {0, 0, 0}, up[3] = {0, 1, 0};
        for (int i = 0; i < 6; i++) {
            assert_int_equal(vx_camera_orbit(&train.cams[i], ctr, i * 60.0, i % 2 ? 30.0 : -15.0, 3.6, up, 45, 32, 32), 0);
            vx_frame fr;
            assert_int_equal(vx_frame_alloc(&fr, 32, 32, 0), 0);
            assert_int_equal(vx_render_cpu(&vol, &train.cams[i], &o, &fr), 0);
            memcpy(train.rgb + (size_t)i * 32 * 32 * 3, fr.rgb, 32 * 32 * 3 * sizeof(float));
            vx_frame_free(&fr);
        }
        vx_volume_free(&vol);
    }
    double loss[2], moved[2];
    for (int on = 0; on < 2; on++) {
        vx_fit_config cfg;
        vx_fit_config_default(&cfg);
        cfg.stages = 2;
        cfg.res[0][0] = cfg.res[0][1] = cfg.res[0][2] = 12;
        cfg.res[1][0] = cfg.res[1][1] = cfg.res[1][2] = 16;
        cfg.iters = 80;
        cfg.batch = 256;
        cfg.val_every = cfg.val_views = cfg.log_every = 0;
        cfg.hp.lr_sh = 0.0f;
        cfg.hp.lr_coarse = 0.05f;
        vx_fit_model f;
        float white[3] = {1, 1, 1};
        assert_int_equal(vx_fit_model_init_cpu(&f, cfg.res[0], 1, lo, hi, 0.5f, 0.0f, white, cfg.hp.init_sigma), 0);
        if (on) assert_int_equal(vx_fit_coarse_init_cpu(&f, 6), 0);
        vx_fit_stats st;
        if (vx_fit_train(&f, &cfg, &train, NULL, &st)) fail_msg("%s", vx_errmsg());
        moved[on] = 0.0;
        for (size_t v = 0; v < vx_fit_storage_voxels(&f); v++)
            for (int c = 1; c < f.nc; c++) moved[on] += fabs(f.data[v * f.nc + c]);
        loss[on] = st.loss_last;
        vx_fit_model_free(&f);
    }
    fprintf(stderr, "coarse level in training, colour frozen: loss %.5f without, %.5f with; |colour| %g, %g\n", loss[0],
            loss[1], moved[0], moved[1]);
    assert_true(moved[0] == 0.0);
    assert_true(moved[1] > 0.0);
    assert_true(loss[1] < 0.9 * loss[0]);
    vx_dataset_free(&train);
    vx_grid_free(&s.grid);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coarse_map),
        cmocka_unit_test(test_coarse_dense),
        cmocka_unit_test(test_coarse_bricked),
        cmocka_unit_test(test_coarse_training),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
