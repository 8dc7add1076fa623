/* cuda_render.h - the fused CUDA renderer (kernels/render.cu) and its occupancy grid
 * (kernels/occupancy.cu), reached from backend.c, the bench, the viewer and the GPU tests. */
#ifndef VX_CUDA_RENDER_H
#define VX_CUDA_RENDER_H

#include <stddef.h>

#include "render.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vx_cuda_volume vx_cuda_volume;

/* Upload the grid (float32, or float16 when half) and build the occupancy grid on the
 * device from the decoded density. v->mp supplies the march parameters. */
int vx_cuda_volume_create(vx_cuda_volume **out, const vx_volume *v, const vx_grid *g, int half);
/* Update march parameters that need no re-upload (step, stop, background, decoder
 * values that keep the occupancy valid are the caller's responsibility). */
int vx_cuda_volume_set_params(vx_cuda_volume *cv, const vx_march_params *mp);
/* Render a frame; fills f->rgb, f->alpha, f->depth (when non-NULL) and the counters. */
int vx_cuda_render(vx_cuda_volume *cv, const vx_camera *c, vx_frame *f);
void vx_cuda_volume_destroy(vx_cuda_volume *cv);
/* Render into the volume's device buffers only (no copy to the host), for benchmarks:
 * returns the kernel time from CUDA events and the frame's counters. */
int vx_cuda_render_device(vx_cuda_volume *cv, const vx_camera *c, int want_depth, float *ms,
                          long long *samples, long long *rays_hit);
/* Occupancy on the device, the twin of vx_occupancy_build_cpu: mp->occ_b / occ_n give the
 * cells; d_grid is (z,y,x,c) float32 or float16; d_occ receives one byte per cell. */
int vx_occupancy_build_cuda(const void *d_grid, int half, const vx_march_params *mp, unsigned char *d_occ);
/* Copy the device occupancy grid (count cells, 1 = may hold density) to occ. */
int vx_cuda_volume_occupancy(const vx_cuda_volume *cv, unsigned char *occ, size_t count);

/* Device pointers of the volume's frame buffers after vx_cuda_render_device: rgb (3 floats
 * per pixel) and alpha, rows top to bottom. Implemented in render.cu, next to the buffers. */
int vx_cuda_volume_frame(const vx_cuda_volume *cv, const float **d_rgb, const float **d_alpha);

#ifdef __cplusplus
}
#endif

#endif
