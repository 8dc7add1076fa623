/* cuda_view.h - the viewer's display path on the device (kernels/view_interop.cu, owned by
 * the viewer): RGBA8 quantising, a render straight to RGBA8, CUDA-GL buffer interop. */
#ifndef VX_CUDA_VIEW_H
#define VX_CUDA_VIEW_H

#include <stddef.h>

#include "cuda_render.h"

#ifdef __cplusplus
extern "C" {
#endif

/* d_rgb (w*h*3 floats) -> d_rgba8 (w*h*4 bytes, alpha 255), rounding as vx_image_quantize. */
int vx_cuda_quantize_rgba8(const float *d_rgb, int w, int h, unsigned char *d_rgba8);
/* Render a frame straight into device memory as RGBA8 (the fused renderer, then the
 * quantizer): the bytes `voxray render` writes, without a trip through the host. */
int vx_render_rgba8_cuda(vx_cuda_volume *cv, const vx_camera *c, unsigned char *d_rgba8,
                         long long *samples, long long *rays_hit);
/* CUDA-GL interop on a GL pixel buffer object (a GLuint): register once (write-discard),
 * map / unmap each frame, unregister before the buffer is resized. */
typedef struct vx_cuda_gl_buffer vx_cuda_gl_buffer;
int vx_cuda_gl_register(vx_cuda_gl_buffer **out, unsigned int gl_pbo);
int vx_cuda_gl_map(vx_cuda_gl_buffer *b, unsigned char **d_ptr, size_t *bytes);
int vx_cuda_gl_unmap(vx_cuda_gl_buffer *b);
void vx_cuda_gl_unregister(vx_cuda_gl_buffer *b);

#ifdef __cplusplus
}
#endif

#endif
