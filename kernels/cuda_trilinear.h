/* cuda_trilinear.h - the CUDA twins of trilinear.h (kernels/trilinear.cu): the op in
 * benchmarked versions and the dense-grid gather/scatter, for `voxray bench kernels` and
 * tests/gpu/test_kernels_cuda.c. */
#ifndef VX_CUDA_TRILINEAR_H
#define VX_CUDA_TRILINEAR_H

#include "trilinear.h"

#ifdef __cplusplus
extern "C" {
#endif

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
int vx_grid_gather_stream_cuda(const vx_grid_desc *g, const void *d_grid, int half, const float *d_pts, int m,
                               float *d_out, void *stream);
int vx_grid_scatter_stream_cuda(const vx_grid_desc *g, const float *d_dout, const float *d_pts, int m,
                                void *d_dgrid, int half, void *stream);

#ifdef __cplusplus
}
#endif

#endif
