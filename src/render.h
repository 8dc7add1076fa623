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

/* Pixel p of frame f from its ray: colour, opacity 1 - T and depth; the ray's samples and
 * whether it met the volume added to the CPU renderers' counters. */
static inline void vx_frame_put_ray(vx_frame *f, size_t p, const vx_ray_result *r, long long *samples, long long *hit) {
    f->rgb[3 * p] = r->rgb[0];
    f->rgb[3 * p + 1] = r->rgb[1];
    f->rgb[3 * p + 2] = r->rgb[2];
    f->alpha[p] = 1.0f - r->trans;
    if (f->depth) f->depth[p] = r->depth;
    *samples += r->samples;
    *hit += r->samples > 0 || r->trans < 1.0f;
}
/* The same for an mlp scene whose network sees the reflected direction (vx_render_cpu calls
 * it): march.h's reflect op, in a file of its own so that vx_render_cpu compiles as before. */
int vx_render_cpu_reflect(const vx_volume *v, const vx_camera *c, const vx_render_opts *o, vx_frame *f);

#ifdef __cplusplus
}
#endif

#endif
