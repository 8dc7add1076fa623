/* render.h - frames, render options, and the prepared volume (march parameters +
 * occupancy grid) that both backends render from. render_cpu.c is the reference;
 * backend.h picks CPU or CUDA. */
#ifndef VX_RENDER_H
#define VX_RENDER_H

#include "camera.h"
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
} vx_render_opts;

void vx_render_opts_default(vx_render_opts *o);

typedef struct {
    int width, height;
    float *rgb;      /* width*height*3, colour with background composited */
    float *alpha;    /* width*height, opacity = 1 - T_end */
    float *depth;    /* width*height expected depth, or NULL */
    long long samples;   /* samples evaluated in the frame */
    long long rays_hit;  /* rays that met the box */
} vx_frame;

int vx_frame_alloc(vx_frame *f, int width, int height, int want_depth);
void vx_frame_free(vx_frame *f);

/* Everything a backend needs to march rays through a scene. */
typedef struct {
    vx_march_params mp;
    const float *data;      /* the scene grid's floats (not owned) */
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
 * interpolate (trilinear footprint, one lattice point of margin) decodes to sigma 0. */
int vx_occupancy_build_cpu(const vx_grid *g, const vx_decoder *d, int cell, unsigned char **occ,
                           int dims[3]);

/* Reference renderer: OpenMP over rows. */
int vx_render_cpu(const vx_volume *v, const vx_camera *c, const vx_render_opts *o, vx_frame *f);

#ifdef __cplusplus
}
#endif

#endif
