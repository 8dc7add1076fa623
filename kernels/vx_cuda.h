/* vx_cuda.h - the one header through which C reaches the CUDA code: extern "C"
 * launchers for the fused renderer. Implemented in the kernels/ CUDA files; only compiled in
 * when VX_HAVE_CUDA is defined (the Makefile found nvcc). */
#ifndef VX_CUDA_H
#define VX_CUDA_H

#include <stddef.h>
#include "render.h"
#include "trilinear.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if a usable CUDA device exists (writes its name to info), else 0 and the reason
 * (no driver, no device, error string) to info. Never aborts. */
int vx_cuda_probe(char *info, size_t cap);

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

/* ---- device memory and timing (kernels/device.cu) ---------------------------------- */
int vx_cuda_alloc(void **d, size_t bytes, const char *what);
void vx_cuda_free(void *d);
int vx_cuda_upload(void *d, const void *h, size_t bytes);
int vx_cuda_download(void *h, const void *d, size_t bytes);
int vx_cuda_copy(void *d_dst, const void *d_src, size_t bytes); /* device to device */
int vx_cuda_zero(void *d, size_t bytes);
int vx_cuda_sync(void);
/* Fill n floats with uniform values in [lo, hi) from a counter hash of (seed, index). */
int vx_cuda_fill_uniform(float *d, size_t n, unsigned seed, float lo, float hi);
/* float32 -> float16 on the device (round to nearest even). */
int vx_cuda_to_half(const float *d_src, void *d_dst, size_t n);
typedef struct vx_cuda_timer vx_cuda_timer;
int vx_cuda_timer_create(vx_cuda_timer **t);
int vx_cuda_timer_start(vx_cuda_timer *t);
int vx_cuda_timer_stop(vx_cuda_timer *t, float *ms); /* waits for the work to finish */
void vx_cuda_timer_destroy(vx_cuda_timer *t);

/* ---- the trilinear op (kernels/trilinear.cu) ---------------------------------------- */
/* Versions 1..N (1 = the tutorial's 16x16 mapping); block_size 0 picks the default. */
#define VX_TRILINEAR_FWD_VERSIONS 4
#define VX_TRILINEAR_BWD_VERSIONS 5
const char *vx_trilinear_version_name(int backward, int version);
int vx_trilinear_forward_cuda(int version, const float *d_feats, const float *d_points, float *d_out,
                              int n, int f, int block_size);
int vx_trilinear_backward_cuda(int version, const float *d_dout, const float *d_points,
                               float *d_dfeats, int n, int f, int block_size);
/* Dense grid gather at m world points (d_pts (m,3) -> d_out (m,nc)); d_grid holds
 * float32, or float16 when half. Scatter adds the gradient into d_dgrid (float32 or
 * float16) with atomics; the caller zeroes it. */
int vx_grid_gather_cuda(const vx_grid_desc *g, const void *d_grid, int half, const float *d_pts,
                        int m, float *d_out);
int vx_grid_scatter_cuda(const vx_grid_desc *g, const float *d_dout, const float *d_pts, int m,
                         void *d_dgrid, int half);
/* The four launchers above on a given stream (a cudaStream_t; NULL = the default stream):
 * the shared library's entry points (src/voxray.h), so PyTorch can queue them on its own. */
int vx_trilinear_forward_stream_cuda(int version, const float *d_feats, const float *d_points, float *d_out,
                                     int n, int f, int block_size, void *stream);
int vx_trilinear_backward_stream_cuda(int version, const float *d_dout, const float *d_points,
                                      float *d_dfeats, int n, int f, int block_size, void *stream);
int vx_grid_gather_stream_cuda(const vx_grid_desc *g, const void *d_grid, int half, const float *d_pts,
                               int m, float *d_out, void *stream);
int vx_grid_scatter_stream_cuda(const vx_grid_desc *g, const float *d_dout, const float *d_pts, int m,
                                void *d_dgrid, int half, void *stream);

/* ---- viewer display (kernels/view_interop.cu; owned by the viewer, issue 4) ---------- */
/* Device pointers of the volume's frame buffers after vx_cuda_render_device: rgb (3 floats
 * per pixel) and alpha, rows top to bottom. Implemented in render.cu, next to the buffers. */
int vx_cuda_volume_frame(const vx_cuda_volume *cv, const float **d_rgb, const float **d_alpha);
/* d_rgb (w*h*3 floats) -> d_rgba8 (w*h*4 bytes, alpha 255), rounding as vx_image_quantize. */
int vx_cuda_quantize_rgba8(const float *d_rgb, int w, int h, unsigned char *d_rgba8);
/* Render a frame straight into device memory as RGBA8 (the fused renderer, then the
 * quantizer): the bytes `voxray render` writes, without a trip through the host. */
int vx_cuda_render_rgba8(vx_cuda_volume *cv, const vx_camera *c, unsigned char *d_rgba8,
                         long long *samples, long long *rays_hit);
/* CUDA-GL interop on a GL pixel buffer object (a GLuint): register once (write-discard),
 * map / unmap each frame, unregister before the buffer is resized. */
typedef struct vx_cuda_gl_buffer vx_cuda_gl_buffer;
int vx_cuda_gl_register(vx_cuda_gl_buffer **out, unsigned int gl_pbo);
int vx_cuda_gl_map(vx_cuda_gl_buffer *b, unsigned char **d_ptr, size_t *bytes);
int vx_cuda_gl_unmap(vx_cuda_gl_buffer *b);
void vx_cuda_gl_unregister(vx_cuda_gl_buffer *b);
/* ---- end of the viewer block -------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif
