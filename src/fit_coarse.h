/* fit_coarse.h - the coarse level of `voxray fit --coarse R`: the colour channels of the
 * fitted grid are their own values plus a dense coarse grid's trilinear interpolation, so
 * each step also moves whole regions together (docs/FIT.md, session 18). The fine grid keeps
 * the sum (renderers read it unchanged); only the coarse grid's gradient and moments exist. */
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

/* Give f (freshly initialised, either decoder) a coarse level: res vertices along the box's
 * longest edge (fewer along shorter ones, at least 2), zero gradient and moments. */
int vx_fit_coarse_init_cpu(vx_fit_model *f, int res);
/* Entries of the coarse grid's gradient and each moment array (0 without a level). */
static inline size_t vx_fit_coarse_entries(const vx_fit_model *f) {
    return (size_t)f->cn[0] * f->cn[1] * f->cn[2] * (size_t)(f->nc - 1);
}

/* Drop the level (vx_fit_model_free calls it; inline, so fit_cpu.c and fit_coarse.c do not
 * call each other: tools/include_graph.sh forbids cycles). */
static inline void vx_fit_coarse_free(vx_fit_model *f) {
    free(f->coarse_grad); free(f->coarse_m); free(f->coarse_v);
    f->coarse_grad = f->coarse_m = f->coarse_v = NULL;
    f->cn[0] = f->cn[1] = f->cn[2] = 0;
}
/* The map for f's current lattice; an error when a coarse voxel is less than twice a fine
 * one on some axis (the CUDA restriction's window assumes it; a coarser level is the point). */
int vx_fit_coarse_map_of(const vx_fit_model *f, vx_fit_coarse_map *m);

/* Before the fine Adam step consumes f->grad: add U^T dL/d(colour channels) of the alive
 * voxels into f->coarse_grad (U: the interpolation above). */
int vx_fit_coarse_restrict_cpu(vx_fit_model *f);
/* After the fine Adam step (whose step count it shares): Adam on the coarse grid with step
 * size lr, then add U (its step) to the alive voxels' colour channels, and clear the
 * coarse gradient. */
int vx_fit_coarse_apply_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr);

#ifdef __cplusplus
}
#endif

#endif
