/* trilinear.h - the trilinear op on its own, outside the renderer: the tutorial's
 * per-point cell form (feats (N,8,F), points (N,3) -> (N,F)) and the dense-grid
 * gather / gradient scatter. CPU references here; CUDA twins in kernels/trilinear.cu. */
#ifndef VX_TRILINEAR_H
#define VX_TRILINEAR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Cell form. points[n] in [-1,1]^3 local cell coordinates, u,v,w = (p+1)/2 from x,y,z;
 * corner k = 4*ix + 2*iy + iz has weight (ix?u:1-u)(iy?v:1-v)(iz?w:1-w).
 * Forward: out[n][f] = sum_k w_k feats[n][k][f]. Backward: dfeats[n][k][f] =
 * w_k dout[n][f]. Accumulation in double. */
void vx_trilinear_forward_cpu(const float *feats, const float *points, float *out, int n, int f);
void vx_trilinear_backward_cpu(const float *dout, const float *points, float *dfeats, int n, int f);
/* The same in float64 (the Python ops' CPU path, for gradcheck). */
void vx_trilinear_forward_f64_cpu(const double *feats, const double *points, double *out, int n, int f);
void vx_trilinear_backward_f64_cpu(const double *dout, const double *points, double *dfeats, int n, int f);

/* A dense grid (Z, Y, X, C), channel innermost, placed by a world->index affine. */
typedef struct {
    int nx, ny, nz, nc;
    float w2i[12]; /* row-major 3x4: index = M * world + t */
} vx_grid_desc;

/* Gather: out[m][c] = trilinear value of channel c at world point pts[m] (border clamp,
 * the same cell rule as vx_trilinear_fetch in march.h). Double accumulation. */
void vx_grid_gather_cpu(const vx_grid_desc *g, const float *grid, const float *pts, int m, float *out);
/* Scatter (the gather's adjoint): dgrid[corner][c] += w_corner * dout[m][c]. dgrid must be
 * zeroed by the caller; accumulates in double through a temporary copy. */
int vx_grid_scatter_cpu(const vx_grid_desc *g, const float *dout, const float *pts, int m, float *dgrid);
/* float64 twins (grid, points, values and gradients all double; the cell is found in float). */
void vx_grid_gather_f64_cpu(const vx_grid_desc *g, const double *grid, const double *pts, int m, double *out);
int vx_grid_scatter_f64_cpu(const vx_grid_desc *g, const double *dout, const double *pts, int m, double *dgrid);

#ifdef __cplusplus
}
#endif

#endif
