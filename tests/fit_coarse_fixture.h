/* fit_coarse_fixture.h - the random models with a coarse level that test_fit_coarse.c (the
 * CPU level against double precision) and tests/emu/test_fit_coarse_emu.cpp (its CUDA
 * kernels against the CPU) both draw. Needs cmocka and fit_coarse.h included first. */
#ifndef VX_FIT_COARSE_FIXTURE_H
#define VX_FIT_COARSE_FIXTURE_H

/* A random model (SH degree 0..3 or the mlp's 16 channels) with one or two coarse levels (of
 * the colour channels, or with --coarse-density of every channel) of
 * R = res / (2..3) vertices (active: at least twice the fine voxel) and, half the time, a
 * level too fine to be active yet (as a level waiting for a later stage), about a third of
 * its voxels dead (zero), optionally bricked; the coarse box is larger than the model's,
 * as after a crop. density: --coarse-density on (1), off (0) or drawn (-1). */
static void fc_random_model(vx_fit_model *f, int bricked, int density, double (*uniform)(double, double)) {
    int res[3];
    for (int a = 0; a < 3; a++) res[a] = 8 + (int)uniform(0, 14);
    int deg = (int)uniform(0, 4), mlp = uniform(0, 1) < 0.3;
    double lo[3], hi[3];
    for (int a = 0; a < 3; a++) { lo[a] = uniform(-1.2, -0.8); hi[a] = uniform(0.8, 1.2); }
    float bg[3] = {1, 1, 1};
    assert_int_equal(vx_fit_model_init_cpu(f, res, deg, lo, hi, 0.5f, 0.0f, bg, 0.1f), 0);
    if (mlp) assert_int_equal(vx_fit_model_use_mlp_cpu(f, 1, 7), 0);
    /* --coarse-density (density 1; -1: drawn): the levels carry channel 0 too */
    f->coarse_density = density < 0 ? uniform(0, 1) < 0.4 : density;
    int r = 2 + (int)(fmin(res[0], fmin(res[1], res[2])) / uniform(2.6, 4.0));
    /* the level over a box 1.3x the model's (the first stage's box, before a crop) */
    double c[3], half[3];
    for (int a = 0; a < 3; a++) { c[a] = 0.5 * (lo[a] + hi[a]); half[a] = 0.5 * (hi[a] - lo[a]); }
    for (int a = 0; a < 3; a++) { f->box_lo[a] = c[a] - 1.3 * half[a]; f->box_hi[a] = c[a] + 1.3 * half[a]; }
    assert_int_equal(vx_fit_coarse_init_cpu(f, r), 0);
    if (uniform(0, 1) < 0.5) { /* a second active level of another lattice */
        int r2 = 2 + (int)(fmin(res[0], fmin(res[1], res[2])) / uniform(2.6, 4.0));
        assert_int_equal(vx_fit_coarse_init_cpu(f, r2 == r ? r - 1 : r2), 0);
    }
    int inactive = uniform(0, 1) < 0.5; /* an inactive one, finer than the lattice */
    if (inactive) assert_int_equal(vx_fit_coarse_init_cpu(f, 3 * (int)fmax(res[0], fmax(res[1], res[2]))), 0);
    for (int a = 0; a < 3; a++) { f->box_lo[a] = lo[a]; f->box_hi[a] = hi[a]; }
    for (int l = 0; l < f->nlevels; l++)
        assert_int_equal(vx_fit_coarse_active(f, l, NULL), !(inactive && l == f->nlevels - 1));
    assert_int_equal(vx_fit_update_params(f, 1e-4f), 0);
    size_t nv = (size_t)res[0] * res[1] * res[2];
    for (size_t v = 0; v < nv; v++) {
        f->alive[v] = uniform(0, 1) < 0.67;
        for (int k = 0; k < f->nc; k++) f->data[v * f->nc + k] = f->alive[v] ? (float)uniform(-1, 1) : 0.0f;
    }
    if (bricked) { /* brick (0, 0, 0) dead, so the null brick serves it */
        for (int z = 0; z < 8; z++)
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++) {
                    size_t v = ((size_t)z * res[1] + y) * res[0] + x;
                    f->alive[v] = 0;
                    memset(f->data + v * f->nc, 0, f->nc * sizeof(float));
                }
        f->sparse_fit = 1;
        assert_int_equal(vx_fit_resample_cpu(f, f->box_lo, f->box_hi, res), 0);
        assert_true(f->table != NULL && f->table[0] == 0);
    }
    /* gradients everywhere, the dead voxels' too (the ray step scatters into them; the
     * level must read the alive ones only) */
    for (size_t i = 0; i < vx_fit_storage_voxels(f) * f->nc; i++) f->grad[i] = (float)uniform(-1, 1);
}

#endif
