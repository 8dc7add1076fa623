/* test_fit_bricks.c - bricked fit storage (fit.h) against the dense model it replaces: one
 * model held both ways gives the same colours, loss, gradients, TV, Adam step, occupancy,
 * pruning, bounds, resampling and written scene, and the pool holds only live bricks. */
#include "vx_test.h"

#include <math.h>

#include "fit.h"
#include "fit_march.h"
#include "sparse_grid.h"

/* A random dense model whose alive voxels fill a ball (so whole bricks are dead; the first
 * brick always is), dead
 * voxels zero as the model's invariant wants, densities of both signs. */
static void random_ball_model(vx_fit_model *f) {
    int res[3];
    for (int a = 0; a < 3; a++) res[a] = 9 + (int)(vx_test_rand() * 22);
    int deg = (int)(vx_test_rand() * 3);
    double lo[3], hi[3];
    for (int a = 0; a < 3; a++) { lo[a] = vx_test_uniform(-1.2, -0.6); hi[a] = vx_test_uniform(0.6, 1.2); }
    float bg[3] = {(float)vx_test_rand(), (float)vx_test_rand(), (float)vx_test_rand()};
    assert_int_equal(vx_fit_model_init_cpu(f, res, deg, lo, hi, (float)vx_test_uniform(0.3, 1.0),
                                           (float)vx_test_uniform(1, 4), bg, 0.1f), 0);
    double c[3], r = vx_test_uniform(0.25, 0.45) * fmin(res[0], fmin(res[1], res[2]));
    for (int a = 0; a < 3; a++) c[a] = vx_test_uniform(0.3, 0.7) * res[a];
    for (int z = 0; z < f->nz; z++)
        for (int y = 0; y < f->ny; y++)
            for (int x = 0; x < f->nx; x++) {
                size_t iv = ((size_t)z * f->ny + y) * f->nx + x;
                double d2 = (x - c[0]) * (x - c[0]) + (y - c[1]) * (y - c[1]) + (z - c[2]) * (z - c[2]);
                f->alive[iv] = d2 < r * r && (x >= 8 || y >= 8 || z >= 8); /* brick (0,0,0) always dead */
                for (int k = 0; k < f->nc; k++)
                    f->data[iv * f->nc + k] =
                        !f->alive[iv] ? 0.0f : k == 0 ? (float)vx_test_uniform(-0.5, 2.0) : (float)vx_test_uniform(-0.4, 0.4);
            }
}

/* A second model holding f's values: dense (bricked 0) or bricked, made by resampling onto
 * the same lattice (the identity map: every value and alive flag carries over exactly). */
static void copy_model(const vx_fit_model *f, vx_fit_model *g, int bricked) {
    int res[3] = {f->nx, f->ny, f->nz};
    assert_int_equal(vx_fit_model_init_cpu(g, res, f->sh_degree, f->box_lo, f->box_hi, f->step, f->density_scale,
                                           f->bg, 0.0f), 0);
    size_t nv = (size_t)f->nx * f->ny * f->nz;
    memcpy(g->data, f->data, nv * f->nc * sizeof(float));
    memcpy(g->alive, f->alive, nv);
    if (!bricked) return;
    g->sparse_fit = 1;
    assert_int_equal(vx_fit_resample_cpu(g, g->box_lo, g->box_hi, res), 0);
    assert_non_null(g->table);
}

/* Bricks of f's lattice holding an alive voxel (f dense). */
static size_t live_bricks(const vx_fit_model *f) {
    int bn[3] = {(f->nx + 7) / 8, (f->ny + 7) / 8, (f->nz + 7) / 8};
    size_t n = 0;
    for (int bz = 0; bz < bn[2]; bz++)
        for (int by = 0; by < bn[1]; by++)
            for (int bx = 0; bx < bn[0]; bx++) {
                int live = 0;
                for (int z = 8 * bz; z < 8 * bz + 8 && z < f->nz && !live; z++)
                    for (int y = 8 * by; y < 8 * by + 8 && y < f->ny && !live; y++)
                        for (int x = 8 * bx; x < 8 * bx + 8 && x < f->nx && !live; x++)
                            live = f->alive[((size_t)z * f->ny + y) * f->nx + x];
                n += live;
            }
    return n;
}

/* Per lattice point: values (channels of `a` and `b`, entries through each model's index)
 * within tol * scale, and the alive flags equal; only alive points when alive_only. */
static void compare_lattice(const vx_fit_model *d, const float *a, const vx_fit_model *s, const float *b, int nc,
                            double tol, int alive_only, const char *what) {
    vx_fit_index Ld, Ls;
    vx_fit_index_of(d, &Ld);
    vx_fit_index_of(s, &Ls);
    double scale = 0, worst = 0;
    for (int z = 0; z < d->nz; z++)
        for (int y = 0; y < d->ny; y++)
            for (int x = 0; x < d->nx; x++) {
                size_t i = vx_fit_vid(&Ld, x, y, z), j = vx_fit_vid(&Ls, x, y, z);
                if (d->alive[i] != s->alive[j]) fail_msg("%s: alive differs at (%d, %d, %d)", what, x, y, z);
                if (alive_only && !d->alive[i]) continue;
                for (int c = 0; c < nc; c++) {
                    scale = fmax(scale, fabs(a[i * nc + c]));
                    worst = fmax(worst, fabs((double)a[i * nc + c] - b[j * nc + c]));
                }
            }
    print_message("%s: max diff %.3g (scale %.3g)\n", what, worst, scale);
    if (worst > tol * scale) fail_msg("%s: max diff %.9g beyond %.3g x %.3g", what, worst, tol, scale);
}

static void random_batch(const vx_fit_model *f, vx_fit_batch *b, int n) {
    assert_int_equal(vx_fit_batch_alloc(b, n), 0);
    for (int r = 0; r < n; r++) {
        double p[3], e[3], az = vx_test_uniform(0, 2 * M_PI), el = vx_test_uniform(-1.2, 1.2);
        for (int a = 0; a < 3; a++) p[a] = 0.5 * (f->box_lo[a] + f->box_hi[a]) + vx_test_uniform(-0.4, 0.4);
        e[0] = p[0] + 3.5 * cos(el) * sin(az); e[1] = p[1] + 3.5 * sin(el); e[2] = p[2] + 3.5 * cos(el) * cos(az);
        vx_vec3 d = vx_norm(vx_v3((float)(p[0] - e[0]), (float)(p[1] - e[1]), (float)(p[2] - e[2])));
        b->origin[3 * r] = (float)e[0]; b->origin[3 * r + 1] = (float)e[1]; b->origin[3 * r + 2] = (float)e[2];
        b->dir[3 * r] = d.x; b->dir[3 * r + 1] = d.y; b->dir[3 * r + 2] = d.z;
        for (int q = 0; q < 3; q++) b->target[3 * r + q] = (float)vx_test_rand();
    }
}

static void test_bricked_storage(void **state) {
    (void)state;
    for (int trial = 0; trial < 6; trial++) {
        vx_fit_model src, d, s;
        random_ball_model(&src);
        copy_model(&src, &d, 0);
        copy_model(&src, &s, 1);
        size_t entries = (size_t)s.bn[0] * s.bn[1] * s.bn[2], live = live_bricks(&src);
        print_message("trial %d: %dx%dx%d, degree %d, %zu of %zu bricks live\n", trial, d.nx, d.ny, d.nz, d.sh_degree,
                      live, entries);
        assert_int_equal(s.nslots, live + 1); /* the live bricks and the null brick, nothing else */
        assert_true(live < entries);
        compare_lattice(&d, d.data, &s, s.data, d.nc, 0.0, 0, "identity resample");
        /* the null brick: zeros, dead */
        for (int k = 0; k < VX_BRICK_VOXELS; k++) {
            assert_int_equal(s.alive[k], 0);
            for (int c = 0; c < s.nc; c++) assert_true(s.data[(size_t)k * s.nc + c] == 0.0f);
        }
        /* rays: the same colours bit for bit (same fetch and blend), gradients up to the
         * order of the atomic sums */
        vx_fit_batch b;
        random_batch(&d, &b, 300);
        float *rd = malloc((size_t)b.n * 3 * sizeof(float)), *rs = malloc((size_t)b.n * 3 * sizeof(float));
        vx_fit_zero_grad_cpu(&d);
        vx_fit_zero_grad_cpu(&s);
        double ld = vx_fit_rays_backward_cpu(&d, &b, rd), ls = vx_fit_rays_backward_cpu(&s, &b, rs);
        assert_memory_equal(rd, rs, (size_t)b.n * 3 * sizeof(float));
        assert_true(fabs(ld - ls) <= 1e-12 * ld);
        compare_lattice(&d, d.grad, &s, s.grad, d.nc, 1e-5, 1, "ray gradient");
        /* TV over every voxel (fraction 1: the subset hash is per storage entry) */
        double td = vx_fit_tv_backward_cpu(&d, 1e-3f, 2e-3f, 1.0f, 7, 1e-6f);
        double ts = vx_fit_tv_backward_cpu(&s, 1e-3f, 2e-3f, 1.0f, 7, 1e-6f);
        assert_true(fabs(td - ts) <= 1e-9 * td);
        compare_lattice(&d, d.grad, &s, s.grad, d.nc, 1e-5, 1, "ray + TV gradient");
        /* Adam on the same gradient: the sums above agree only up to their order, and Adam's
         * first step is g / (|g| + eps), which turns a 5e-11 difference in a near-zero
         * gradient into a 1e-4 step difference (the CI run of f36a8f9: 1.3e-4 at scale 1.9). Given
         * equal gradients the two storages must step bit for bit alike. */
        vx_fit_index Ld, Ls;
        vx_fit_index_of(&d, &Ld);
        vx_fit_index_of(&s, &Ls);
        for (int z = 0; z < d.nz; z++)
            for (int y = 0; y < d.ny; y++)
                for (int x = 0; x < d.nx; x++)
                    memcpy(s.grad + vx_fit_vid(&Ls, x, y, z) * s.nc, d.grad + vx_fit_vid(&Ld, x, y, z) * d.nc,
                           (size_t)d.nc * sizeof(float));
        vx_fit_hparams hp;
        vx_fit_hparams_default(&hp);
        vx_fit_adam_step_cpu(&d, &hp, 0.1f, 0.01f);
        vx_fit_adam_step_cpu(&s, &hp, 0.1f, 0.01f);
        compare_lattice(&d, d.data, &s, s.data, d.nc, 0.0, 0, "parameters after Adam");
        /* occupancy: the same cells */
        assert_int_equal(vx_fit_occupancy_build_cpu(&d, 4), 0);
        assert_int_equal(vx_fit_occupancy_build_cpu(&s, 4), 0);
        assert_memory_equal(d.occ_n, s.occ_n, sizeof d.occ_n);
        assert_memory_equal(d.occ, s.occ, (size_t)d.occ_n[0] * d.occ_n[1] * d.occ_n[2]);
        /* pruning on the same weights, then bounds (the lattices and so Ld, Ls are unchanged) */
        for (int z = 0; z < d.nz; z++)
            for (int y = 0; y < d.ny; y++)
                for (int x = 0; x < d.nx; x++)
                    s.wmax[vx_fit_vid(&Ls, x, y, z)] = d.wmax[vx_fit_vid(&Ld, x, y, z)] = (float)vx_test_uniform(0, 2e-3);
        size_t pd = vx_fit_prune_cpu(&d, 1e-3f), ps = vx_fit_prune_cpu(&s, 1e-3f);
        assert_int_equal(pd, ps);
        compare_lattice(&d, d.data, &s, s.data, d.nc, 0.0, 0, "pruned parameters");
        int lo_d[3], hi_d[3], lo_s[3], hi_s[3];
        size_t ad = vx_fit_alive_bounds_cpu(&d, lo_d, hi_d), as = vx_fit_alive_bounds_cpu(&s, lo_s, hi_s);
        assert_int_equal(ad, as);
        if (ad) { assert_memory_equal(lo_d, lo_s, sizeof lo_d); assert_memory_equal(hi_d, hi_s, sizeof hi_d); }
        {
            size_t nl = (size_t)d.nx * d.ny * d.nz;
            unsigned char *md = malloc(nl), *ms = malloc(nl);
            assert_int_equal(vx_fit_alive_mask_cpu(&d, md), ad);
            assert_int_equal(vx_fit_alive_mask_cpu(&s, ms), ad);
            assert_memory_equal(md, ms, nl);
            free(md); free(ms);
        }
        /* resampling to a finer cropped lattice: dense stays dense, bricked keeps only live bricks */
        double lo[3], hi[3];
        int res[3];
        if (ad) {
            assert_int_equal(vx_fit_crop_box(&d, lo_d, hi_d, 1, (d.box_hi[0] - d.box_lo[0]) / d.nx / 1.7, lo, hi, res), 0);
            assert_int_equal(vx_fit_resample_cpu(&d, lo, hi, res), 0);
            assert_int_equal(vx_fit_resample_cpu(&s, lo, hi, res), 0);
            assert_null(d.table);
            assert_int_equal(s.nslots, live_bricks(&d) + 1);
            /* equal inputs, the same interpolation arithmetic: equal outputs */
            compare_lattice(&d, d.data, &s, s.data, d.nc, 0.0, 0, "resampled parameters");
        }
        /* the written scenes hold the same grid */
        char dd[512], ds[512], gd[600], gs[600];
        snprintf(dd, sizeof dd, "%s/dense%d", vx_test_tmpdir(), trial);
        snprintf(ds, sizeof ds, "%s/bricked%d", vx_test_tmpdir(), trial);
        assert_int_equal(vx_fit_write_scene(&d, dd, "d", NULL, VX_FIT_WRITE_SPARSE), 0);
        assert_int_equal(vx_fit_write_scene(&s, ds, "s", NULL, VX_FIT_WRITE_SPARSE), 0);
        snprintf(gd, sizeof gd, "%s/grid.sparse.npz", dd);
        snprintf(gs, sizeof gs, "%s/grid.sparse.npz", ds);
        vx_grid a, c, ad_, cd_;
        assert_int_equal(vx_sparse_load(gd, &a), 0);
        assert_int_equal(vx_sparse_load(gs, &c), 0);
        assert_int_equal(a.sparse->nbricks, c.sparse->nbricks);
        assert_memory_equal(a.sparse->table, c.sparse->table, (size_t)a.sparse->bn[0] * a.sparse->bn[1] * a.sparse->bn[2] * 4);
        assert_int_equal(vx_sparse_to_dense(&a, &ad_), 0);
        assert_int_equal(vx_sparse_to_dense(&c, &cd_), 0);
        size_t n = vx_grid_count(&ad_);
        double worst = 0;
        for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)ad_.data[i] - cd_.data[i]));
        assert_true(worst <= 1e-5);
        vx_grid_free(&a); vx_grid_free(&c); vx_grid_free(&ad_); vx_grid_free(&cd_);
        /* and a bricked model written dense is the same grid too */
        assert_int_equal(vx_fit_write_scene(&s, ds, "s", NULL, VX_FIT_WRITE_DENSE), 0);
        free(rd); free(rs);
        vx_fit_batch_free(&b);
        vx_fit_model_free(&src); vx_fit_model_free(&d); vx_fit_model_free(&s);
    }
}

/* Bricks that lose every alive voxel keep their slot until the next resample; a resample of
 * a model with nothing alive leaves the null brick alone. */
static void test_bricked_empty(void **state) {
    (void)state;
    vx_fit_model f;
    int res[3] = {10, 12, 9};
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    float bg[3] = {1, 1, 1};
    assert_int_equal(vx_fit_model_init_cpu(&f, res, 1, lo, hi, 0.5f, 2.0f, bg, 0.1f), 0);
    memset(f.alive, 0, (size_t)10 * 12 * 9);
    memset(f.data, 0, (size_t)10 * 12 * 9 * f.nc * sizeof(float));
    f.sparse_fit = 1;
    int up[3] = {20, 24, 18};
    assert_int_equal(vx_fit_resample_cpu(&f, lo, hi, up), 0);
    assert_int_equal(f.nslots, 1);
    int l[3], h[3];
    assert_int_equal(vx_fit_alive_bounds_cpu(&f, l, h), 0);
    vx_fit_batch b;
    random_batch(&f, &b, 50);
    float rgb[150];
    vx_fit_zero_grad_cpu(&f);
    vx_fit_rays_backward_cpu(&f, &b, rgb);
    for (int r = 0; r < 50; r++) /* nothing there: the background */
        for (int c = 0; c < 3; c++) assert_true(fabsf(rgb[3 * r + c] - 1.0f) < 1e-6f);
    vx_fit_batch_free(&b);
    vx_fit_model_free(&f);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bricked_storage),
        cmocka_unit_test(test_bricked_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
