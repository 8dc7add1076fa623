/* backend.h - chooses where frames are rendered (cpu, cuda, or auto) and says why on
 * stderr when auto falls back to the CPU. The CLI, bench and the viewer render through
 * vx_renderer, never through a backend directly. */
#ifndef VX_BACKEND_H
#define VX_BACKEND_H

#include <stddef.h>

#include "render.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { VX_BACKEND_AUTO = 0, VX_BACKEND_CPU, VX_BACKEND_CUDA } vx_backend_kind;

typedef struct vx_renderer vx_renderer;

/* Parse "auto" | "cpu" | "cuda". */
int vx_backend_parse(const char *s, vx_backend_kind *k);

/* The one place that decides where work runs (renderers, fit, bench): resolve auto/cuda
 * to what this build and machine can do, VX_BACKEND_CPU or VX_BACKEND_CUDA in *got.
 * When auto falls back to the CPU, one stderr line "voxray: FALLBACK: reason" says why
 * (FALLBACK e.g. "using the CPU backend"); --backend cuda that cannot be honoured is an
 * error (vx_error, -1), never a silent fallback. device (may be NULL) receives the CUDA
 * device's description. */
int vx_backend_resolve(vx_backend_kind want, const char *fallback, vx_backend_kind *got, char *device,
                       size_t cap);

/* Make GPU (index modulo the devices) the one this process uses, before any other CUDA
 * call: MPI ranks pick theirs by local rank. No-op without CUDA or without a device (the
 * backend's probe then says why). */
int vx_backend_use_device(int index);

/* Prepare the scene for rendering on the chosen backend (uploads the grid for CUDA). */
int vx_renderer_create(vx_renderer **r, const vx_scene *s, const vx_render_opts *o,
                       vx_backend_kind kind);
/* Render one frame into f (allocated by the caller at the camera's size). */
int vx_renderer_render(vx_renderer *r, const vx_camera *c, vx_frame *f);
/* Change options that need no re-upload (step, stop, background). */
int vx_renderer_set_opts(vx_renderer *r, const vx_render_opts *o);
const char *vx_renderer_backend_name(const vx_renderer *r);
const vx_volume *vx_renderer_volume(const vx_renderer *r);
/* The CUDA volume behind a CUDA renderer (NULL for the CPU backend); the viewer renders
 * from it straight into a GL pixel buffer (kernels/view_interop.cu). */
struct vx_cuda_volume *vx_renderer_cuda_volume(const vx_renderer *r);
void vx_renderer_destroy(vx_renderer *r);

#ifdef __cplusplus
}
#endif

#endif
