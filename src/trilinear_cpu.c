/* trilinear_cpu.c - the CPU references of the standalone trilinear op (trilinear.h):
 * what every CUDA version in kernels/trilinear.cu is validated against, and the CPU path
 * of the Python ops (float32, plus float64 for gradcheck). Plain loops, double
 * accumulation, no cleverness; one type-generic body per op, float and double entry
 * points on top. */
#include "trilinear.h"

#include <stdlib.h>

#include "march.h"
#include "vx_common.h"

/* Element i of a float (f64 = 0) or double (f64 = 1) array, as double; and the store. */
static inline double vx__ld(const void *p, size_t i, int f64) {
    return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
static inline void vx__st(void *p, size_t i, int f64, double v) {
    if (f64) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

/* The eight corner weights of local point n in [-1,1]^3, corner k = 4ix + 2iy + iz. */
static void vx__cell_weights(const void *points, size_t n, int f64, double w[8]) {
    double u = (vx__ld(points, n * 3, f64) + 1.0) * 0.5, v = (vx__ld(points, n * 3 + 1, f64) + 1.0) * 0.5,
           s = (vx__ld(points, n * 3 + 2, f64) + 1.0) * 0.5;
    for (int k = 0; k < 8; k++)
        w[k] = ((k & 4) ? u : 1.0 - u) * ((k & 2) ? v : 1.0 - v) * ((k & 1) ? s : 1.0 - s);
}

/* Threads only pay off past this many output elements (a parallel region costs ~10 us, far
 * more on a loaded machine). */
#define VX__OMP_MIN ((size_t)1 << 16)

static void vx__trilinear_forward(const void *feats, const void *points, void *out, int n, int f, int f64) {
#pragma omp parallel for schedule(static) if ((size_t)n * f * 8 >= VX__OMP_MIN)
    for (int i = 0; i < n; i++) {
        double w[8];
        vx__cell_weights(points, (size_t)i, f64, w);
        size_t fe = (size_t)i * 8 * f;
        for (int c = 0; c < f; c++) {
            double acc = 0.0;
            for (int k = 0; k < 8; k++) acc += w[k] * vx__ld(feats, fe + (size_t)k * f + c, f64);
            vx__st(out, (size_t)i * f + c, f64, acc);
        }
    }
}

static void vx__trilinear_backward(const void *dout, const void *points, void *dfeats, int n, int f, int f64) {
#pragma omp parallel for schedule(static) if ((size_t)n * f * 8 >= VX__OMP_MIN)
    for (int i = 0; i < n; i++) {
        double w[8];
        vx__cell_weights(points, (size_t)i, f64, w);
        for (int k = 0; k < 8; k++)
            for (int c = 0; c < f; c++)
                vx__st(dfeats, ((size_t)i * 8 + k) * f + c, f64, w[k] * vx__ld(dout, (size_t)i * f + c, f64));
    }
}

void vx_trilinear_forward_cpu(const float *feats, const float *points, float *out, int n, int f) {
    vx__trilinear_forward(feats, points, out, n, f, 0);
}
void vx_trilinear_backward_cpu(const float *dout, const float *points, float *dfeats, int n, int f) {
    vx__trilinear_backward(dout, points, dfeats, n, f, 0);
}
void vx_trilinear_forward_f64_cpu(const double *feats, const double *points, double *out, int n, int f) {
    vx__trilinear_forward(feats, points, out, n, f, 1);
}
void vx_trilinear_backward_f64_cpu(const double *dout, const double *points, double *dfeats, int n, int f) {
    vx__trilinear_backward(dout, points, dfeats, n, f, 1);
}

/* Lattice offsets (element index of channel 0) and weights of the 8 corners around
 * world point pw, in the order z, y, x of march.h's vx_trilinear_fetch. The cell is
 * found in float, as the renderer finds it, for either element type. */
static void vx__grid_corners(const vx_grid_desc *g, const void *pts, size_t m, int f64, size_t off[8],
                             double w[8]) {
    vx_vec3 p = vx_affine_point(g->w2i, vx_v3((float)vx__ld(pts, m * 3, f64), (float)vx__ld(pts, m * 3 + 1, f64),
                                              (float)vx__ld(pts, m * 3 + 2, f64)));
    int x[2], y[2], z[2];
    float fx, fy, fz;
    vx_axis_cell(p.x, g->nx, &x[0], &x[1], &fx);
    vx_axis_cell(p.y, g->ny, &y[0], &y[1], &fy);
    vx_axis_cell(p.z, g->nz, &z[0], &z[1], &fz);
    for (int k = 0; k < 8; k++) {
        int iz = (k >> 2) & 1, iy = (k >> 1) & 1, ix = k & 1;
        off[k] = (((size_t)z[iz] * g->ny + y[iy]) * g->nx + x[ix]) * g->nc;
        w[k] = (iz ? (double)fz : 1.0 - fz) * (iy ? (double)fy : 1.0 - fy) * (ix ? (double)fx : 1.0 - fx);
    }
}

static void vx__grid_gather(const vx_grid_desc *g, const void *grid, const void *pts, int m, void *out, int f64) {
#pragma omp parallel for schedule(static) if ((size_t)m * g->nc * 8 >= VX__OMP_MIN)
    for (int i = 0; i < m; i++) {
        size_t off[8];
        double w[8];
        vx__grid_corners(g, pts, (size_t)i, f64, off, w);
        for (int c = 0; c < g->nc; c++) {
            double acc = 0.0;
            for (int k = 0; k < 8; k++) acc += w[k] * vx__ld(grid, off[k] + c, f64);
            vx__st(out, (size_t)i * g->nc + c, f64, acc);
        }
    }
}

static int vx__grid_scatter(const vx_grid_desc *g, const void *dout, const void *pts, int m, void *dgrid, int f64) {
    size_t count;
    if (vx_mul_size4((size_t)g->nx, (size_t)g->ny, (size_t)g->nz, (size_t)g->nc, &count))
        return vx_error("grid scatter: %d x %d x %d x %d elements overflow", g->nx, g->ny, g->nz, g->nc);
    double *acc = vx_calloc(count, sizeof *acc, "grid scatter accumulator");
    if (!acc) return -1;
    for (size_t e = 0; e < count; e++) acc[e] = vx__ld(dgrid, e, f64);
    for (int i = 0; i < m; i++) {
        size_t off[8];
        double w[8];
        vx__grid_corners(g, pts, (size_t)i, f64, off, w);
        for (int k = 0; k < 8; k++)
            for (int c = 0; c < g->nc; c++) acc[off[k] + c] += w[k] * vx__ld(dout, (size_t)i * g->nc + c, f64);
    }
    for (size_t e = 0; e < count; e++) vx__st(dgrid, e, f64, acc[e]);
    free(acc);
    return 0;
}

void vx_grid_gather_cpu(const vx_grid_desc *g, const float *grid, const float *pts, int m, float *out) {
    vx__grid_gather(g, grid, pts, m, out, 0);
}
int vx_grid_scatter_cpu(const vx_grid_desc *g, const float *dout, const float *pts, int m, float *dgrid) {
    return vx__grid_scatter(g, dout, pts, m, dgrid, 0);
}
void vx_grid_gather_f64_cpu(const vx_grid_desc *g, const double *grid, const double *pts, int m, double *out) {
    vx__grid_gather(g, grid, pts, m, out, 1);
}
int vx_grid_scatter_f64_cpu(const vx_grid_desc *g, const double *dout, const double *pts, int m, double *dgrid) {
    return vx__grid_scatter(g, dout, pts, m, dgrid, 1);
}
