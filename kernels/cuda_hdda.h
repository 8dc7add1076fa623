/* cuda_hdda.h - NanoVDB's HDDA ray march on the device (kernels/hdda.cu), the twin of
 * vx_render_hdda_cpu (render_hdda.h): `voxray bench hdda` and tests/gpu call it. Built only
 * with nvcc and NanoVDB's headers (VX_HAVE_NANOVDB). */
#ifndef VX_CUDA_HDDA_H
#define VX_CUDA_HDDA_H

#include "render_hdda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vx_cuda_hdda vx_cuda_hdda;

/* Upload h's NanoVDB grid (one buffer, as NanoVDB lays it out) and keep m. */
int vx_hdda_upload_cuda(vx_cuda_hdda **out, const vx_hdda_grid *h, const vx_march_params *m);
/* Render into device buffers only: kernel time from CUDA events and the sample count. */
int vx_render_hdda_device_cuda(vx_cuda_hdda *d, const vx_camera *c, float *ms, long long *samples,
                               long long *rays_hit);
/* Render a frame and copy it back (rgb, alpha, counters). */
int vx_render_hdda_cuda(vx_cuda_hdda *d, const vx_camera *c, vx_frame *f);
void vx_hdda_free_cuda(vx_cuda_hdda *d);

#ifdef __cplusplus
}
#endif

#endif
