/* test_fit_coarse.c - the coarse levels of `voxray fit --coarse` (fit_coarse.c) against a
 * direct double-precision evaluation of their interpolations U_l: the maps, the restriction
 * (U_l^T of the alive voxels' colour gradient), the first Adam step's prolongation (closed
 * form: the sum of -lr sign(U_l^T g) interpolated, at whatever step the model is; with
 * --coarse-decay also the blend toward the levels' values), inactive levels left alone, dense
 * and bricked storage. test_fit.c's test_train_coarse runs the
 * levels through the training loop. */
#include "vx_test.h"

#include <math.h>

#include "fit.h"
#include "fit_coarse.h"
#include "fit_march.h"
#include "fit_coarse_fixture.h"

/* U_l's weight of coarse entry (i, j, k) at fine voxel (x, y, z), from the boxes alone. */
static void ref_axis(const vx_fit_model *f, int l, int a, int i, int *k, double *w) {
    const vx_fit_level *c = &f->lv[l];
    int n[3] = {f->nx, f->ny, f->nz};
    double h = (f->box_hi[a] - f->box_lo[a]) / n[a], p = f->box_lo[a] + (i + 0.5) * h;
    double ch = (c->hi[a] - c->lo[a]) / c->n[a], u = (p - c->lo[a]) / ch - 0.5;
    u = fmin(fmax(u, 0.0), c->n[a] - 1.0);
    *k = (int)floor(u);
    if (*k > c->n[a] - 2) *k = c->n[a] - 2;
    *w = u - *k;
}

static void ref_corners(const vx_fit_model *f, int l, int x, int y, int z, size_t idx[8], double w[8]) {
    const vx_fit_level *c = &f->lv[l];
    int k[3], p[3] = {x, y, z};
    double fr[3];
    for (int a = 0; a < 3; a++) ref_axis(f, l, a, p[a], &k[a], &fr[a]);
    for (int j = 0; j < 8; j++) {
        int d[3] = {j & 1, (j >> 1) & 1, j >> 2};
        idx[j] = ((size_t)(k[2] + d[2]) * c->n[1] + k[1] + d[1]) * c->n[0] + k[0] + d[0];
        w[j] = 1.0;
        for (int a = 0; a < 3; a++) w[j] *= d[a] ? fr[a] : 1.0 - fr[a];
    }
}

static void random_coarse_model(vx_fit_model *f, int bricked) { fc_random_model(f, bricked, -1, vx_test_uniform); }

/* The map against the boxes, and its refusal of a level finer than half the lattice. */
static void test_coarse_map(void **state) {
    (void)state;
    for (int trial = 0; trial < 20; trial++) {
        vx_fit_model f;
        random_coarse_model(&f, 0);
        for (int l = 0; l < f.nlevels; l++) {
            vx_fit_coarse_map m;
            if (!vx_fit_coarse_active(&f, l, NULL)) {
                assert_int_equal(vx_fit_coarse_map_of(&f, l, &m), -1);
                continue;
            }
            assert_int_equal(vx_fit_coarse_map_of(&f, l, &m), 0);
            int n[3] = {f.nx, f.ny, f.nz};
            for (int a = 0; a < 3; a++)
                for (int i = 0; i < n[a]; i++) {
                    int k, kr;
                    float w;
                    double wr;
                    vx_fit_coarse_axis(&m, a, i, &k, &w);
                    ref_axis(&f, l, a, i, &kr, &wr);
                /* k + w is the coordinate: at a coarse centre (k, 1) and (k + 1, 0) are the same point */
                    if (fabs(k + w - (kr + wr)) > 1e-5 || k < 0 || k > m.n[a] - 2 || w < 0 || w > 1)
                        fail_msg("level %d axis %d voxel %d: %d %g, expected %d %g", l, a, i, k, w, kr, wr);
                }
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
    assert_int_equal(vx_fit_coarse_active(&f, 0, NULL), 0);
    assert_int_equal(vx_fit_coarse_map_of(&f, 0, &m), -1);
    assert_non_null(strstr(vx_errmsg(), "at least twice"));
    /* the stages where it would be active: from the first twice as fine as it */
    int stages[3][3] = {{16, 16, 16}, {17, 17, 17}, {18, 18, 18}};
    assert_int_equal(vx_fit_coarse_first_stage(&f, 0, stages, 3), 2);
    assert_int_equal(vx_fit_coarse_first_stage(&f, 0, stages, 2), -1);
    vx_fit_coarse_free(&f);
    assert_int_equal(f.nlevels, 0);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 8), 0);
    assert_int_equal(vx_fit_coarse_map_of(&f, 0, &m), 0);
    assert_int_equal(vx_fit_coarse_first_stage(&f, 0, stages, 3), 0);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 8), -1); /* the same lattice twice */
    assert_non_null(strstr(vx_errmsg(), "exists already"));
    assert_int_equal(vx_fit_coarse_map_of(&f, 1, &m), -1); /* no such level */
    for (int r = 4; r < 4 + VX_FIT_LEVELS - 1; r++) assert_int_equal(vx_fit_coarse_init_cpu(&f, r), 0);
    assert_int_equal(f.nlevels, VX_FIT_LEVELS);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 3), -1); /* one too many */
    assert_non_null(strstr(vx_errmsg(), "at most"));
    vx_fit_model_free(&f);
    assert_int_equal(vx_fit_model_init_cpu(&f, res, 1, lo, hi, 0.5f, 0.0f, bg, 0.1f), 0);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 1), -1);
    vx_fit_model_free(&f);
}

/* Restriction and the first step's prolongation against the double-precision U_l, at a
 * random model step (each level's Adam counts from its own first step); with
 * --coarse-density (the fixture's draw) over every channel, the density at its own step size. */
static void check_restrict_apply(int bricked) {
    for (int trial = 0; trial < 12; trial++) {
        vx_fit_model f;
        random_coarse_model(&f, bricked);
        int nc = f.nc, ch0 = vx_fit_coarse_ch0(&f), ncc = nc - ch0, nl = f.nlevels;
        assert_int_equal(ch0, f.coarse_density ? 0 : 1);
        size_t nv = vx_fit_storage_voxels(&f), nco[VX_FIT_LEVELS];
        double *gc[VX_FIT_LEVELS];
        vx_fit_index L;
        vx_fit_index_of(&f, &L);
        for (int l = 0; l < nl; l++) {
            nco[l] = vx_fit_coarse_entries(&f, l);
            gc[l] = calloc(nco[l], sizeof *gc[l]);
            if (!vx_fit_coarse_active(&f, l, NULL)) continue; /* its gradient stays zero */
            for (size_t v = 0; v < nv; v++) {
                int x, y, z;
                if (!f.alive[v] || vx_fit_xyz(&L, v, &x, &y, &z)) continue;
                size_t idx[8];
                double w[8];
                ref_corners(&f, l, x, y, z, idx, w);
                for (int k = 0; k < 8; k++)
                    for (int c = 0; c < ncc; c++) gc[l][idx[k] * ncc + c] += w[k] * f.grad[v * nc + ch0 + c];
            }
        }
        assert_int_equal(vx_fit_coarse_restrict_cpu(&f), 0);
        for (int l = 0; l < nl; l++)
            for (size_t j = 0; j < nco[l]; j++)
                if (fabs(f.lv[l].grad[j] - gc[l][j]) > 1e-4 * (1.0 + fabs(gc[l][j])))
                    fail_msg("%s trial %d: level %d's gradient %zu is %g, expected %g", bricked ? "bricked" : "dense",
                             trial, l, j, f.lv[l].grad[j], gc[l][j]);
        /* the first Adam step of each entry is -lr g / (|g| + eps): -lr sign(g), g the
         * restriction just checked (its float sums, whose sign the double ones may not share
         * where the sum is nearly 0), whatever the model's step count */
        for (int l = 0; l < nl; l++)
            for (size_t j = 0; j < nco[l]; j++) gc[l][j] = f.lv[l].grad[j];
        vx_fit_hparams h;
        vx_fit_hparams_default(&h);
        float lr = (float)vx_test_uniform(0.01, 0.1), lr_sigma = (float)vx_test_uniform(0.2, 0.6);
        float *before = malloc(nv * nc * sizeof(float));
        memcpy(before, f.data, nv * nc * sizeof(float));
        f.t = 1 + (long long)vx_test_uniform(0, 100);
        /* every other trial --coarse-decay: each level keeps a value from earlier steps */
        double lam = trial % 2 ? vx_test_uniform(0.01, 0.4) : 0.0, *val0[VX_FIT_LEVELS] = {NULL};
        int nact = 0;
        for (int l = 0; l < nl; l++) {
            nact += vx_fit_coarse_active(&f, l, NULL);
            if (lam == 0.0) continue;
            f.lv[l].val = malloc(nco[l] * sizeof(float));
            val0[l] = malloc(nco[l] * sizeof(double));
            for (size_t j = 0; j < nco[l]; j++) val0[l][j] = f.lv[l].val[j] = (float)vx_test_uniform(-1, 1);
        }
        f.coarse_decay = (float)lam;
        lam = f.coarse_decay;
        assert_int_equal(vx_fit_coarse_apply_cpu(&f, &h, lr, lr_sigma), 0);
        for (int l = 0; l < nl; l++) {
            int on = vx_fit_coarse_active(&f, l, NULL);
            assert_true(f.lv[l].t0 == (on ? f.t - 1 : -1)); /* started by its first step only */
            for (size_t j = 0; j < nco[l]; j++) {
                assert_true(f.lv[l].grad[j] == 0.0f); /* consumed */
                if (!on) assert_true(f.lv[l].m[j] == 0.0f && f.lv[l].v[j] == 0.0f);
            }
        }
        for (size_t v = 0; v < nv; v++) {
            int x = 0, y = 0, z = 0;
            int lattice = !vx_fit_xyz(&L, v, &x, &y, &z);
            for (int c = 0; c < nc; c++) {
                double want = before[v * nc + c], u = 0.0;
                for (int l = 0; l < nl; l++) {
                    if (!(c >= ch0 && f.alive[v] && lattice && vx_fit_coarse_active(&f, l, NULL))) continue;
                    size_t idx[8];
                    double w[8];
                    ref_corners(&f, l, x, y, z, idx, w);
                    for (int k = 0; k < 8; k++) {
                        size_t j = idx[k] * ncc + c - ch0;
                        double r = c == 0 ? lr_sigma : lr; /* the density's own step size */
                        double g = gc[l][j], step = (g > 0 ? -r : g < 0 ? r : 0.0) * fabs(g) / (fabs(g) + 1e-8);
                        want += w[k] * step;
                        if (lam > 0.0) u += w[k] * (val0[l][j] + step); /* the value after this step */
                    }
                }
                /* the blend: the residual toward the active levels' values shrinks by 1 - lam */
                if (lam > 0.0 && nact && c > 0 && f.alive[v] && lattice) want += lam * (u - want);
                if (fabs(f.data[v * nc + c] - want) > 2e-5 * nl)
                    fail_msg("%s trial %d: voxel %zu channel %d is %g, expected %g (alive %d)", bricked ? "bricked" : "dense",
                             trial, v, c, f.data[v * nc + c], want, f.alive[v]);
            }
        }
        for (int l = 0; lam > 0.0 && l < nl; l++) { /* each level's value took its step, or none */
            int on = vx_fit_coarse_active(&f, l, NULL);
            for (size_t j = 0; j < nco[l]; j++) {
                double r = ch0 == 0 && j % ncc == 0 ? lr_sigma : lr;
                double g = gc[l][j], step = on ? (g > 0 ? -r : g < 0 ? r : 0.0) * fabs(g) / (fabs(g) + 1e-8) : 0.0;
                if (fabs(f.lv[l].val[j] - (val0[l][j] + step)) > 1e-5)
                    fail_msg("trial %d: level %d's value %zu is %g, expected %g", trial, l, j, f.lv[l].val[j],
                             val0[l][j] + step);
            }
        }
        free(before);
        for (int l = 0; l < nl; l++) free(gc[l]), free(val0[l]);
        vx_fit_model_free(&f);
    }
}

/* A model as after a crop: levels of R = res / (2.1..3) over the first stage's box (every
 * level active) and, half the time, a waiting finer one, then the box shrunk to 0.3-0.6 of
 * itself on each axis (the same lattice over a smaller box: finer voxels), about a third of
 * the voxels dead, optionally bricked, gradients everywhere. */
static void rebox_model(vx_fit_model *f, int bricked) {
    int res[3];
    for (int a = 0; a < 3; a++) res[a] = 16 + (int)vx_test_uniform(0, 17);
    double lo[3], hi[3];
    for (int a = 0; a < 3; a++) { lo[a] = vx_test_uniform(-1.2, -0.8); hi[a] = vx_test_uniform(0.8, 1.2); }
    float bg[3] = {1, 1, 1};
    assert_int_equal(vx_fit_model_init_cpu(f, res, (int)vx_test_uniform(0, 4), lo, hi, 0.5f, 0.0f, bg, 0.1f), 0);
    if (vx_test_uniform(0, 1) < 0.3) assert_int_equal(vx_fit_model_use_mlp_cpu(f, 1, 7), 0);
    int m = res[0] < res[1] ? res[0] : res[1];
    m = m < res[2] ? m : res[2];
    int r = (int)(m / vx_test_uniform(2.1, 3.0)), r2 = (int)(m / vx_test_uniform(2.1, 3.0));
    f->coarse_density = vx_test_uniform(0, 1) < 0.4; /* the levels carry the density too */
    assert_int_equal(vx_fit_coarse_init_cpu(f, r), 0);
    if (r2 != r) assert_int_equal(vx_fit_coarse_init_cpu(f, r2), 0);
    if (vx_test_uniform(0, 1) < 0.5) assert_int_equal(vx_fit_coarse_init_cpu(f, 3 * m), 0); /* waiting */
    for (int a = 0; a < 3; a++) {
        double e = hi[a] - lo[a], sc = vx_test_uniform(0.3, 0.6), o = vx_test_uniform(0, 1 - sc);
        f->box_lo[a] = lo[a] + o * e;
        f->box_hi[a] = f->box_lo[a] + sc * e;
    }
    assert_int_equal(vx_fit_update_params(f, 1e-4f), 0);
    size_t nv = (size_t)res[0] * res[1] * res[2];
    for (size_t v = 0; v < nv; v++) {
        f->alive[v] = vx_test_uniform(0, 1) < 0.67;
        for (int k = 0; k < f->nc; k++) f->data[v * f->nc + k] = f->alive[v] ? (float)vx_test_uniform(-1, 1) : 0.0f;
    }
    if (bricked) {
        f->sparse_fit = 1;
        assert_int_equal(vx_fit_resample_cpu(f, f->box_lo, f->box_hi, res), 0);
    }
    for (size_t i = 0; i < vx_fit_storage_voxels(f) * f->nc; i++) f->grad[i] = (float)vx_test_uniform(-1, 1);
}

/* The cut to the crop (vx_fit_coarse_rebox_cpu): a level cut to the window its lattice reads
 * takes the same restriction, the same Adam step and the same prolongation as the whole
 * level, so the fine voxels end equal (to the float rounding of the cut map's offset) and
 * the cut's moments are the whole level's inside the window. Most cuts shrink an active
 * level (rebox_model's crop); some must. */
static void check_rebox(int bricked) {
    int shrunk = 0;
    for (int trial = 0; trial < 12; trial++) {
        vx_fit_model f;
        rebox_model(&f, bricked);
        int nc = f.nc, ch0 = vx_fit_coarse_ch0(&f), ncc = nc - ch0, nl = f.nlevels;
        assert_int_equal(ch0, f.coarse_density ? 0 : 1);
        size_t nv = vx_fit_storage_voxels(&f), nco[VX_FIT_LEVELS];
        float *mom[VX_FIT_LEVELS][2];
        int on[VX_FIT_LEVELS];
        for (int l = 0; l < nl; l++) { /* moments of a level some steps in */
            nco[l] = vx_fit_coarse_entries(&f, l);
            on[l] = vx_fit_coarse_active(&f, l, NULL);
            for (size_t j = 0; j < nco[l]; j++) {
                f.lv[l].m[j] = on[l] ? (float)vx_test_uniform(-0.1, 0.1) : 0.0f;
                f.lv[l].v[j] = on[l] ? (float)vx_test_uniform(0.01, 0.1) : 0.0f; /* as after steps of |g| ~ 1-10 */
            }
            f.lv[l].t0 = on[l] ? 3 : -1;
            for (int k = 0; k < 2; k++) {
                mom[l][k] = malloc(nco[l] * sizeof(float));
                memcpy(mom[l][k], k ? f.lv[l].v : f.lv[l].m, nco[l] * sizeof(float));
            }
        }
        f.t = 10;
        float *before = malloc(nv * nc * sizeof(float)), *whole = malloc(nv * nc * sizeof(float));
        memcpy(before, f.data, nv * nc * sizeof(float));
        vx_fit_hparams h;
        vx_fit_hparams_default(&h);
        float lr = (float)vx_test_uniform(0.01, 0.1), lr_sigma = (float)vx_test_uniform(0.2, 0.6);
        /* the whole levels' step */
        assert_int_equal(vx_fit_coarse_restrict_cpu(&f), 0);
        assert_int_equal(vx_fit_coarse_apply_cpu(&f, &h, lr, lr_sigma), 0);
        memcpy(whole, f.data, nv * nc * sizeof(float));
        int k0[VX_FIT_LEVELS][3], wn[VX_FIT_LEVELS][3], n0[VX_FIT_LEVELS][3];
        float *mwhole[VX_FIT_LEVELS];
        for (int l = 0; l < nl; l++) { /* back to the moments before the step */
            mwhole[l] = malloc(nco[l] * sizeof(float));
            memcpy(mwhole[l], f.lv[l].m, nco[l] * sizeof(float));
            memcpy(f.lv[l].m, mom[l][0], nco[l] * sizeof(float));
            memcpy(f.lv[l].v, mom[l][1], nco[l] * sizeof(float));
            f.lv[l].t0 = on[l] ? 3 : -1;
            vx_fit_coarse_window(&f, l, k0[l], wn[l]);
            memcpy(n0[l], f.lv[l].n, sizeof n0[l]);
        }
        memcpy(f.data, before, nv * nc * sizeof(float));
        assert_int_equal(vx_fit_coarse_rebox_cpu(&f), 0);
        int cut = 0;
        for (int l = 0; l < nl; l++) {
            assert_memory_equal(f.lv[l].n, wn[l], sizeof wn[l]);
            cut += on[l] && memcmp(wn[l], n0[l], sizeof wn[l]) != 0; /* an active level cut */
            assert_int_equal(vx_fit_coarse_active(&f, l, NULL), on[l]); /* the voxel size is kept */
        }
        /* the cut levels' step */
        assert_int_equal(vx_fit_coarse_restrict_cpu(&f), 0);
        assert_int_equal(vx_fit_coarse_apply_cpu(&f, &h, lr, lr_sigma), 0);
        double worst = 0.0;
        for (size_t i = 0; i < nv * nc; i++) worst = fmax(worst, fabs((double)f.data[i] - whole[i]));
        if (worst > 1e-5 * nl)
            fail_msg("%s trial %d: the cut levels moved the fine voxels %g away from the whole levels",
                     bricked ? "bricked" : "dense", trial, worst);
        for (int l = 0; l < nl; l++) /* the cut's first moments: the whole level's in the window */
            for (int z = 0; z < wn[l][2]; z++)
                for (int y = 0; y < wn[l][1]; y++)
                    for (int x = 0; x < wn[l][0]; x++)
                        for (int c = 0; c < ncc; c++) {
                            size_t jc = (((size_t)z * wn[l][1] + y) * wn[l][0] + x) * ncc + c;
                            size_t jw = (((size_t)(z + k0[l][2]) * n0[l][1] + y + k0[l][1]) * n0[l][0] + x + k0[l][0]) *
                                            ncc + c;
                            if (fabs(f.lv[l].m[jc] - mwhole[l][jw]) > 1e-5 * (1.0 + fabs(mwhole[l][jw])))
                                fail_msg("trial %d level %d: cut moment %g, whole %g", trial, l, f.lv[l].m[jc],
                                         mwhole[l][jw]);
                        }
        double moved = 0.0;
        for (size_t i = 0; i < nv * nc; i++) moved = fmax(moved, fabs((double)whole[i] - before[i]));
        assert_true(moved > 1e-3); /* the levels took a step */
        print_message("%s trial %d: %d level(s), %d active one(s) cut; the step moved voxels up to %.2g, the cut levels' step "
                      "within %.2g of the whole levels'\n",
                      bricked ? "bricked" : "dense", trial, nl, cut, moved, worst);
        for (int l = 0; l < nl; l++) { free(mom[l][0]); free(mom[l][1]); free(mwhole[l]); }
        free(before);
        free(whole);
        vx_fit_model_free(&f);
        shrunk += cut;
    }
    assert_true(shrunk > 0);
}

static void test_coarse_rebox(void **state) { (void)state; check_rebox(0); check_rebox(1); }

/* --coarse-only C: the restriction reads the whole gradient (the levels' sums are those of
 * C = 0), then the alive voxels' last C colour channels hold zero and every other value is
 * as it was; dense and bricked. */
/* --coarse-decay's level values: kept only with the decay, refused outside [0, 1), cut with
 * the level (each kept entry the same vertex's value, as the moments) and reshaped with it. */
static void test_coarse_decay_values(void **state) {
    (void)state;
    int res[3] = {20, 16, 12};
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    float bg[3] = {1, 1, 1};
    vx_fit_model f;
    assert_int_equal(vx_fit_model_init_cpu(&f, res, 1, lo, hi, 0.5f, 0.0f, bg, 0.1f), 0);
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 8), 0);
    assert_null(f.lv[0].val); /* no decay: no value */
    f.coarse_decay = 1.0f;
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 6), -1);
    assert_non_null(strstr(vx_errmsg(), "--coarse-decay"));
    vx_clear_error();
    f.coarse_decay = 0.05f;
    assert_int_equal(vx_fit_coarse_init_cpu(&f, 6), 0);
    vx_fit_level *c = &f.lv[1];
    assert_non_null(c->val);
    int ncc = f.nc - 1, n0[3] = {c->n[0], c->n[1], c->n[2]};
    size_t ne = vx_fit_coarse_entries(&f, 1);
    for (size_t j = 0; j < ne; j++) assert_true(c->val[j] == 0.0f); /* starts at zero, as the fine features */
    for (size_t j = 0; j < ne; j++) c->val[j] = (float)j, c->m[j] = (float)(2 * j);
    int k0[3] = {1, 2, 0}, n[3] = {n0[0] - 2, n0[1] - 3, 2};
    assert_int_equal(vx_fit_coarse_cut(c, k0, n, ncc), 0);
    for (int z = 0; z < n[2]; z++)
        for (int y = 0; y < n[1]; y++)
            for (int x = 0; x < n[0]; x++)
                for (int ch = 0; ch < ncc; ch++) {
                    size_t j = (((size_t)z * n[1] + y) * n[0] + x) * ncc + ch;
                    size_t was = (((size_t)(z + k0[2]) * n0[1] + y + k0[1]) * n0[0] + x + k0[0]) * ncc + ch;
                    assert_true(c->val[j] == (float)was && c->m[j] == (float)(2 * was));
                }
    vx_fit_level like = *c;
    like.n[0] = 3, like.n[1] = 4, like.n[2] = 5;
    assert_int_equal(vx_fit_coarse_reshape(c, &like, ncc), 0);
    assert_non_null(c->val); /* still kept, zeroed, at the new size */
    for (size_t j = 0; j < (size_t)3 * 4 * 5 * ncc; j++) assert_true(c->val[j] == 0.0f);
    assert_int_equal(vx_fit_coarse_reshape(&f.lv[0], &like, ncc), 0);
    assert_null(f.lv[0].val);
    vx_fit_model_free(&f);
}

static void test_coarse_only(void **state) {
    (void)state;
    for (int bricked = 0, redraws = 0; bricked < 2; bricked++) {
        vx_fit_model f;
        random_coarse_model(&f, bricked);
        size_t nv = vx_fit_storage_voxels(&f), n = nv * f.nc, alive = 0;
        for (size_t v = 0; v < nv; v++) alive += f.alive[v] != 0;
        if (!alive) { /* a bricked 8^3 draw keeps only the dead null brick: nothing to zero */
            assert_true(++redraws < 20);
            vx_fit_model_free(&f);
            bricked--;
            continue;
        }
        for (size_t i = 0; i < n; i++) f.grad[i] = (float)vx_test_uniform(-1, 1);
        int co = 1 + (int)vx_test_uniform(0, f.nc - 1); /* 1 .. nc - 1 */
        if (co > f.nc - 1) co = f.nc - 1;
        float *before = malloc(n * sizeof(float)), *whole[VX_FIT_LEVELS] = {NULL};
        assert_non_null(before);
        memcpy(before, f.grad, n * sizeof(float));
        assert_int_equal(vx_fit_coarse_restrict_cpu(&f), 0); /* C = 0: the reference sums */
        assert_memory_equal(f.grad, before, n * sizeof(float));
        for (int l = 0; l < f.nlevels; l++) {
            size_t ne = vx_fit_coarse_entries(&f, l);
            whole[l] = malloc(ne * sizeof(float));
            assert_non_null(whole[l]);
            memcpy(whole[l], f.lv[l].grad, ne * sizeof(float));
            memset(f.lv[l].grad, 0, ne * sizeof(float));
        }
        f.coarse_only = co;
        assert_int_equal(vx_fit_coarse_restrict_cpu(&f), 0);
        for (int l = 0; l < f.nlevels; l++)
            assert_memory_equal(f.lv[l].grad, whole[l], vx_fit_coarse_entries(&f, l) * sizeof(float));
        size_t zeroed = 0;
        for (size_t v = 0; v < nv; v++)
            for (int c = 0; c < f.nc; c++) {
                float x = f.grad[v * f.nc + c], was = before[v * f.nc + c];
                if (f.alive[v] && c >= f.nc - co) {
                    assert_true(x == 0.0f);
                    zeroed += was != 0.0f;
                } else {
                    assert_true(x == was);
                }
            }
        assert_true(zeroed > 0);
        f.coarse_only = f.nc; /* more than the colour channels: refused */
        assert_int_equal(vx_fit_coarse_restrict_cpu(&f), -1);
        vx_clear_error();
        free(before);
        for (int l = 0; l < f.nlevels; l++) free(whole[l]);
        vx_fit_model_free(&f);
    }
}

static void test_coarse_dense(void **state) { (void)state; check_restrict_apply(0); }
static void test_coarse_bricked(void **state) { (void)state; check_restrict_apply(1); }

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coarse_map),
        cmocka_unit_test(test_coarse_dense),
        cmocka_unit_test(test_coarse_bricked),
        cmocka_unit_test(test_coarse_rebox),
        cmocka_unit_test(test_coarse_only),
        cmocka_unit_test(test_coarse_decay_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
