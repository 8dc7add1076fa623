/* fit_coarse.h - the coarse levels of `voxray fit --coarse R1[,R2..]`: the colour channels of
 * the fitted grid (--coarse-density: and its density) are their own values plus dense coarse
 * grids' trilinear interpolations, so each step also moves whole regions together
 * (docs/FIT.md, sessions 18 and 21). The fine grid keeps the sum (renderers read it
 * unchanged); only the levels' gradients and moments exist. */
#ifndef VX_FIT_COARSE_H
#define VX_FIT_COARSE_H

#include <stdlib.h>

#include "fit.h"
#include "vx_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fine voxel i's centre in the coarse grid's index space (both cell-centred) is a*i + b per
 * axis; n: the coarse lattice. Made for the current fine lattice by vx_fit_coarse_map_of. */
typedef struct {
    int n[3];
    float a[3], b[3];
} vx_fit_coarse_map;

/* The coarse vertex k (0..n-2) below fine voxel i on axis `axis` and the weight f of k + 1
 * (k: 1 - f); outside the coarse centres the border value holds (f 0 or 1). fmaf keeps the
 * CPU and CUDA results bit-identical. */
VX_HD void vx_fit_coarse_axis(const vx_fit_coarse_map *m, int axis, int i, int *k, float *f) {
    float u = vx_clampf(fmaf(m->a[axis], (float)i, m->b[axis]), 0.0f, (float)(m->n[axis] - 1));
    int k0 = (int)u;
    if (k0 > m->n[axis] - 2) k0 = m->n[axis] - 2;
    *k = k0;
    *f = u - (float)k0;
}

/* The 8 coarse vertices (entries of the coarse lattice, x fastest) fine voxel (x, y, z)
 * interpolates from, and their weights (summing to 1). */
VX_HD void vx_fit_coarse_corners(const vx_fit_coarse_map *m, int x, int y, int z, size_t idx[8], float w[8]) {
    int k[3];
    float f[3];
    vx_fit_coarse_axis(m, 0, x, &k[0], &f[0]);
    vx_fit_coarse_axis(m, 1, y, &k[1], &f[1]);
    vx_fit_coarse_axis(m, 2, z, &k[2], &f[2]);
    for (int j = 0; j < 8; j++) {
        int dx = j & 1, dy = (j >> 1) & 1, dz = j >> 2;
        idx[j] = ((size_t)(k[2] + dz) * m->n[1] + (k[1] + dy)) * m->n[0] + (k[0] + dx);
        w[j] = (dx ? f[0] : 1.0f - f[0]) * (dy ? f[1] : 1.0f - f[1]) * (dz ? f[2] : 1.0f - f[2]);
    }
}

/* --coarse-decay's blend of a voxel's colour channel d toward the levels' value u: d + L (u -
 * d), fused so that the CPU and the CUDA kernel round alike. The residual d - u shrinks by
 * (1 - L) a step where no gradient holds it. */
VX_HD float vx_fit_coarse_blend(float d, float u, float lam) { return fmaf(lam, u - d, d); }

/* Give f (freshly initialised, either decoder) one more coarse level (up to VX_FIT_LEVELS):
 * res vertices along the box's longest edge (fewer along shorter ones, at least 2), zero
 * gradient and moments, not yet started. */
int vx_fit_coarse_init_cpu(vx_fit_model *f, int res);
/* Whether `fit --coarse` and `bench fit --coarse` put the density on the levels when neither
 * --coarse-density nor --no-coarse-density is given (docs/FIT.md, session 29). */
#define VX_FIT_COARSE_DENSITY_DEFAULT 1
/* The first channel the levels carry (0 with --coarse-density, else 1: the colour
 * channels) and how many, the channels of an entry. */
static inline int vx_fit_coarse_ch0(const vx_fit_model *f) { return f->coarse_density ? 0 : 1; }
static inline int vx_fit_coarse_nch(const vx_fit_model *f) { return f->nc - vx_fit_coarse_ch0(f); }
/* Entries of level l's gradient and each moment array. */
static inline size_t vx_fit_coarse_entries(const vx_fit_model *f, int l) {
    const vx_fit_level *c = &f->lv[l];
    return (size_t)c->n[0] * c->n[1] * c->n[2] * (size_t)vx_fit_coarse_nch(f);
}

/* Drop the levels (vx_fit_model_free calls it; inline, so fit_cpu.c and fit_coarse.c do not
 * call each other: tools/include_graph.sh forbids cycles). */
static inline void vx_fit_coarse_free(vx_fit_model *f) {
    for (int l = 0; l < VX_FIT_LEVELS; l++) {
        vx_fit_level *c = &f->lv[l];
        free(c->grad); free(c->m); free(c->v); free(c->val);
        c->grad = c->m = c->v = c->val = NULL;
        c->n[0] = c->n[1] = c->n[2] = 0;
    }
    f->nlevels = 0;
}
/* Whether level l takes steps in f's current lattice: its voxel at least twice the fine one
 * on every axis (the CUDA restriction's window assumes it; a coarser level is the point);
 * then its map into *m when m is not NULL. */
int vx_fit_coarse_active(const vx_fit_model *f, int l, vx_fit_coarse_map *m);
/* The first of the stages (lattices res[0..stages-1] over f's box: each stage's voxel, as
 * the crop keeps it) where level l is active, or -1 where it never is. */
int vx_fit_coarse_first_stage(const vx_fit_model *f, int l, const int (*res)[3], int stages);
/* Level l's map for f's current lattice; an error (saying so) where it is not active. */
int vx_fit_coarse_map_of(const vx_fit_model *f, int l, vx_fit_coarse_map *m);
/* Level l's Adam bias corrections for the model's step f->t, counted from the level's first
 * step; starts the level (sets t0) at its first call. */
void vx_fit_coarse_bias(vx_fit_model *f, int l, float beta1, float beta2, float *bc1, float *bc2);

/* The vertices of level l that f's current lattice reads, clamping at the level's border
 * included, with one vertex of margin each side (at least 2 an axis): k0[a] .. k0[a] + n[a] - 1. */
void vx_fit_coarse_window(const vx_fit_model *f, int l, int k0[3], int n[3]);
/* Cut level c (ncc channels an entry) to vertices k0 .. k0 + n - 1 on each axis: its
 * gradient, moments and value (where kept) there, its box shrunk to match (the same voxel
 * size), the rest freed. */
int vx_fit_coarse_cut(vx_fit_level *c, const int k0[3], const int n[3], int ncc);
/* After a crop: cut every level to the window its new lattice reads, so that its Adam step
 * covers the crop and not the first stage's whole box. Each fine voxel interpolates the
 * same vertices with the same weights (to float rounding of the map's offset). */
int vx_fit_coarse_rebox_cpu(vx_fit_model *f);
/* Give c the lattice and box of `like` (ncc channels an entry), its arrays reallocated and
 * zeroed: a host model taking a device model's cut levels (vx_fit_model_download_cuda). */
int vx_fit_coarse_reshape(vx_fit_level *c, const vx_fit_level *like, int ncc);

/* Before the fine Adam step consumes f->grad: add U_l^T dL/d(the levels' channels) of the
 * alive voxels into each active level's gradient (U_l: level l's interpolation above); then, with
 * f->coarse_only = C, zero the alive voxels' gradient in the last C colour channels, so
 * they move with the levels only (whether or not a level is active yet). */
int vx_fit_coarse_restrict_cpu(vx_fit_model *f);
/* After the fine Adam step: Adam on each active level with step size lr (--coarse-density:
 * lr_sigma for the density channel; val_l += step_l where the level keeps its value), then
 * add the sum of the U_l (step_l) to the alive voxels' channels the levels carry (one pass,
 * summing the levels in order, as the CUDA kernel) and, with f->coarse_decay = L > 0, blend
 * each colour channel toward sum_l U_l (val_l) by L (vx_fit_coarse_blend); clear the
 * levels' gradients. */
int vx_fit_coarse_apply_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr, float lr_sigma);

#ifdef __cplusplus
}
#endif

#endif
