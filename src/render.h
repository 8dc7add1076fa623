/* render.h - the reference renderer: marches every pixel of a camera through a prepared
 * volume (volume.h) with vx_march_run, OpenMP over rows. The CUDA twin is in
 * kernels/render.cu; backend.h picks one. */
#ifndef VX_RENDER_H
#define VX_RENDER_H

#include "camera.h"
#include "volume.h"

#ifdef __cplusplus
extern "C" {
#endif

int vx_render_cpu(const vx_volume *v, const vx_camera *c, const vx_render_opts *o, vx_frame *f);
/* The same for an mlp scene whose network sees the reflected direction (vx_render_cpu calls
 * it): march.h's reflect op, in a file of its own so that vx_render_cpu compiles as before. */
int vx_render_cpu_reflect(const vx_volume *v, const vx_camera *c, const vx_render_opts *o, vx_frame *f);

#ifdef __cplusplus
}
#endif

#endif
