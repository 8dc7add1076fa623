/* volume.h - what every backend renders from: the render options, and the prepared volume
 * (march parameters with the step-to-dt rule and the per-ray bound, the grid's dense or
 * sparse storage, the occupancy grid). volume.c builds it; render_cpu.c and
 * kernels/render.cu march it; backend.c picks which. */
#ifndef VX_VOLUME_H
#define VX_VOLUME_H

#include "frame.h"
#include "march.h"
#include "scene.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float step;             /* fraction of the smallest voxel spacing (<= 0: the scene's) */
    float stop;             /* early termination threshold on T (0 = off) */
    int has_background;
    float background[3];    /* overrides the scene's when has_background */
    int want_depth;         /* fill frame.depth */
    int threads;            /* CPU threads (0: all cores) */
    int no_skip;            /* disable empty-space skipping (tests, benchmarks) */
    int occ_cell;           /* occupancy cell size in voxels (0: default 8) */
    int half;               /* CUDA: store the grid as float16 */
    int mlp_tc;             /* CUDA, mlp decoder: the network's hidden layers on the tensor cores:
                             * 0 where the GPU has them (sm_80 and up), 1 always, -1 never (FP32) */
    unsigned jitter;        /* per-pixel sample offsets from this seed (0: off, midpoints) */
    int own;                /* sort-last piece (src/piece.h): march only samples in [own_lo, own_hi) */
    float own_lo[3], own_hi[3]; /* index space, half-open */
} vx_render_opts;

void vx_render_opts_default(vx_render_opts *o);

/* Everything a backend needs to march rays through a scene. */
typedef struct {
    vx_march_params mp;
    const float *data;      /* the scene grid's floats (not owned), NULL when sparse */
    const vx_sparse *sparse;/* the scene grid's bricks (not owned), or NULL */
    unsigned char *occ;     /* occupancy cells, 1 = may hold density; NULL if disabled */
    size_t occ_count;
    double occ_empty_fraction;
} vx_volume;

int vx_volume_prepare(vx_volume *v, const vx_scene *s, const vx_render_opts *o);
/* Re-derive the march parameters after the options or the scene's decoder changed,
 * rebuilding the occupancy grid only when the decoder or the cell size did. On error v
 * is unchanged. */
int vx_volume_update(vx_volume *v, const vx_scene *s, const vx_render_opts *o);
void vx_volume_free(vx_volume *v);

/* Occupancy from decoded density: a cell is empty only if every value its samples can
 * interpolate (trilinear footprint, one lattice point of margin) decodes to sigma 0.
 * Dense or sparse grids; for sparse ones a cell whose footprint touches only absent
 * bricks reads the background once. */
int vx_occupancy_build_cpu(const vx_grid *g, const vx_decoder *d, int cell, unsigned char **occ,
                           int dims[3]);

#ifdef __cplusplus
}
#endif

#endif
