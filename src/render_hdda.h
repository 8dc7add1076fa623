/* render_hdda.h - the NanoVDB side of `voxray bench hdda`: a NanoVDB float grid built from
 * a one-channel sparse grid (one leaf per brick, index space = voxray's lattice), and the
 * CPU twin of kernels/hdda.cu's renderer (every pixel through hdda_march.h). Built only
 * with VX_HAVE_NANOVDB; render_hdda_cpu.cpp implements it, the bench and the tests call it. */
#ifndef VX_RENDER_HDDA_H
#define VX_RENDER_HDDA_H

#include <stddef.h>

#include "camera.h"
#include "frame.h"
#include "grid.h"
#include "march.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vx_hdda_grid vx_hdda_grid;

/* NanoVDB grid of g (sparse, one channel): every brick becomes a leaf holding its 512
 * values (lattice points past the lattice's far faces take the nearest lattice point's
 * value, as voxray's border clamp reads them), background = the sparse background. */
int vx_hdda_grid_build(vx_hdda_grid **out, const vx_grid *g);
void vx_hdda_grid_free(vx_hdda_grid *h);
/* The grid's bytes (what kernels/hdda.cu uploads) and its leaf count. */
const void *vx_hdda_grid_data(const vx_hdda_grid *h, size_t *bytes);
size_t vx_hdda_grid_leaves(const vx_hdda_grid *h);

/* Render a frame on the CPU (OpenMP over rows) with m's segments, decoder and background
 * (m->jitter_seed must be 0); fills f->rgb, f->alpha and the counters. */
int vx_render_hdda_cpu(const vx_hdda_grid *h, const vx_march_params *m, const vx_camera *c, vx_frame *f);

#ifdef __cplusplus
}
#endif

#endif
