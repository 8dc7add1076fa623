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

/* Upload the grid, dense or sparse (as apron blocks; float32, or float16 when half), and build the
 * occupancy grid on the device from the decoded density (sparse: upload v->occ). v->mp
 * supplies the march parameters. */
int vx_volume_upload_cuda(vx_cuda_volume **out, const vx_volume *v, const vx_grid *g, int half);
/* Take v's march parameters (no re-upload); the occupancy grid is rebuilt when the
 * decoder or the cells changed (sparse: from v->occ, which vx_volume_update rebuilt). */
int vx_volume_update_cuda(vx_cuda_volume *cv, const vx_volume *v);
/* Render a frame; fills f->rgb, f->alpha, f->depth (when non-NULL) and the counters. */
int vx_render_cuda(vx_cuda_volume *cv, const vx_camera *c, vx_frame *f);
void vx_volume_free_cuda(vx_cuda_volume *cv);
/* Device memory the grid's storage takes: the dense values, or the apron blocks and their
 * table (sparse grids are uploaded as apron blocks: sparse_apron.h). */
size_t vx_volume_bytes_cuda(const vx_cuda_volume *cv);
/* The mlp decoder's colour: 1 (the default) deferred (the march keeps the composited
 * samples, the network runs over all of them as tiled products, render.cu), 0 in the
 * marching thread (fused). Same image either way, up to float rounding. */
void vx_volume_set_mlp_deferred_cuda(vx_cuda_volume *cv, int on);
/* The deferred colour's network with its hidden layers on the tensor cores (TF32 operands,
 * FP32 sums: colours within ~1e-4 of FP32's; render --mlp-tensor-cores). -1 (vx_error) when
 * turned on for a GPU below sm_80; off by default. */
int vx_volume_set_mlp_tc_cuda(vx_cuda_volume *cv, int on);
/* Render into the volume's device buffers only (no copy to the host), for benchmarks:
 * returns the kernel time from CUDA events and the frame's counters. */
int vx_render_device_cuda(vx_cuda_volume *cv, const vx_camera *c, int want_depth, float *ms,
                          long long *samples, long long *rays_hit);
/* Occupancy on the device, the twin of vx_occupancy_build_cpu: mp->occ_b / occ_n give the
 * cells; d_grid is (z,y,x,c) float32 or float16; d_occ receives one byte per cell. */
int vx_occupancy_build_cuda(const void *d_grid, int half, const vx_march_params *mp, unsigned char *d_occ);
/* Copy the device occupancy grid (count cells, 1 = may hold density) to occ. */
int vx_volume_occupancy_cuda(const vx_cuda_volume *cv, unsigned char *occ, size_t count);

/* Device pointers of the volume's frame buffers after vx_render_device_cuda: rgb (3 floats
 * per pixel) and alpha, rows top to bottom. Implemented in render.cu, next to the buffers. */
int vx_volume_frame_cuda(const vx_cuda_volume *cv, const float **d_rgb, const float **d_alpha);

#ifdef __cplusplus
}
#endif

#endif
