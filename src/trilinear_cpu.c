/* trilinear_cpu.c - the CPU references of the standalone trilinear op (trilinear.h):
 * what every CUDA version in kernels/trilinear.cu is validated against. Plain loops,
 * double accumulation, no cleverness. */
#include "trilinear.h"

#include <stdlib.h>

#include "march.h"
#include "vx_common.h"

/* The eight corner weights of local point p in [-1,1]^3, corner k = 4ix + 2iy + iz. */
static void vx__cell_weights(const float *p, double w[8]) {
    double u = (p[0] + 1.0) * 0.5, v = (p[1] + 1.0) * 0.5, s = (p[2] + 1.0) * 0.5;
    for (int k = 0; k < 8; k++)
        w[k] = ((k & 4) ? u : 1.0 - u) * ((k & 2) ? v : 1.0 - v) * ((k & 1) ? s : 1.0 - s);
}

void vx_trilinear_forward_cpu(const float *feats, const float *points, float *out, int n, int f) {
    for (int i = 0; i < n; i++) {
        double w[8];
        vx__cell_weights(points + (size_t)i * 3, w);
        const float *fe = feats + (size_t)i * 8 * f;
        for (int c = 0; c < f; c++) {
            double acc = 0.0;
            for (int k = 0; k < 8; k++) acc += w[k] * fe[(size_t)k * f + c];
            out[(size_t)i * f + c] = (float)acc;
        }
    }
}

void vx_trilinear_backward_cpu(const float *dout, const float *points, float *dfeats, int n, int f) {
    for (int i = 0; i < n; i++) {
        double w[8];
        vx__cell_weights(points + (size_t)i * 3, w);
        for (int k = 0; k < 8; k++)
            for (int c = 0; c < f; c++)
                dfeats[((size_t)i * 8 + k) * f + c] = (float)(w[k] * dout[(size_t)i * f + c]);
    }
}

/* Lattice offsets (element index of channel 0) and weights of the 8 corners around
 * world point pw, in the order z, y, x of march.h's vx_trilinear_fetch. */
static void vx__grid_corners(const vx_grid_desc *g, const float *pw, size_t off[8], double w[8]) {
    vx_vec3 p = vx_affine_point(g->w2i, vx_v3(pw[0], pw[1], pw[2]));
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

void vx_grid_gather_cpu(const vx_grid_desc *g, const float *grid, const float *pts, int m, float *out) {
    for (int i = 0; i < m; i++) {
        size_t off[8];
        double w[8];
        vx__grid_corners(g, pts + (size_t)i * 3, off, w);
        for (int c = 0; c < g->nc; c++) {
            double acc = 0.0;
            for (int k = 0; k < 8; k++) acc += w[k] * grid[off[k] + c];
            out[(size_t)i * g->nc + c] = (float)acc;
        }
    }
}

int vx_grid_scatter_cpu(const vx_grid_desc *g, const float *dout, const float *pts, int m, float *dgrid) {
    size_t count;
    if (vx_mul_size4((size_t)g->nx, (size_t)g->ny, (size_t)g->nz, (size_t)g->nc, &count))
        return vx_error("grid scatter: %d x %d x %d x %d elements overflow", g->nx, g->ny, g->nz, g->nc);
    double *acc = vx_calloc(count, sizeof *acc, "grid scatter accumulator");
    if (!acc) return -1;
    for (size_t e = 0; e < count; e++) acc[e] = dgrid[e];
    for (int i = 0; i < m; i++) {
        size_t off[8];
        double w[8];
        vx__grid_corners(g, pts + (size_t)i * 3, off, w);
        for (int k = 0; k < 8; k++)
            for (int c = 0; c < g->nc; c++) acc[off[k] + c] += w[k] * dout[(size_t)i * g->nc + c];
    }
    for (size_t e = 0; e < count; e++) dgrid[e] = (float)acc[e];
    free(acc);
    return 0;
}
