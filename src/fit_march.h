/* fit_march.h - the per-ray maths of `voxray fit`, shared (VX_HD) by fit_cpu.c and the
 * CUDA twin kernels/fit.cu: the backward of vx_march() for the sh decoder (relu density,
 * plenoxels colour) through compositing, decoding and the trilinear gather, scattered
 * into a grid-shaped gradient. docs/FIT.md derives every line. */
#ifndef VX_FIT_MARCH_H
#define VX_FIT_MARCH_H

#include "march.h"

#ifndef __CUDACC__
#include <string.h>
#endif

/* ---- scatter helpers: atomics on the GPU, OpenMP atomics on the CPU --------------------- */
#ifdef __CUDACC__
static __host__ __device__ __forceinline__ void vx_fit_add(float *p, float v) {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v; /* host code in a .cu file is single-threaded here */
#endif
}
static __host__ __device__ __forceinline__ void vx_fit_max(float *p, float v) {
#ifdef __CUDA_ARCH__
    if (v > *p) atomicMax((int *)p, __float_as_int(v)); /* non-negative floats order like ints */
#else
    if (v > *p) *p = v;
#endif
}
#else
static inline void vx_fit_add(float *p, float v) {
    _Pragma("omp atomic") *p += v;
}
static inline void vx_fit_max(float *p, float v) {
    /* non-negative floats order like their bit patterns: compare-and-swap on ints */
    int *ip = (int *)p, want, cur = __atomic_load_n(ip, __ATOMIC_RELAXED);
    memcpy(&want, &v, sizeof want);
    while (want > cur && !__atomic_compare_exchange_n(ip, &cur, want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
#endif

/* ---- pieces (each has its own gradient check in tests/test_fit.c) ----------------------- */

/* One compositing step's backward. Forward: alpha = 1 - exp(-sigma*delta), w = T*alpha,
 * colour += w*c, T' = T*(1 - alpha), final C = sum w c + T_end*bg.
 * Given g = dL/dC, acc = sum_{j<=k} w_j c_j (this sample included), T' = T after this
 * sample and the final C: dL/dc = w*g and dL/dsigma = delta*g.(T'*c - (C - acc)). */
VX_HD float vx_fit_composite_dsigma(const float *g, const float *c, float t_after, const float *acc,
                                    const float *C, float delta) {
    float s = 0.0f;
    for (int k = 0; k < 3; k++) s += g[k] * (t_after * c[k] - (C[k] - acc[k]));
    return delta * s;
}

/* Backward of the sh decoder (relu density x scale, colour max(0, SH.basis + 0.5)) at raw
 * channels `raw`, basis b (nb functions): draw = dL/draw from dsigma and drgb. */
VX_HD void vx_fit_decode_sh_backward(const vx_decoder *dec, const float *raw, const float *b, int nb,
                                     float dsigma, const float *drgb, float *draw) {
    draw[0] = raw[0] > 0.0f ? dsigma * dec->density_scale : 0.0f;
    for (int c = 0; c < 3; c++) {
        const float *k = raw + 1 + c * nb;
        float s = 0.0f;
        for (int i = 0; i < nb; i++) s += k[i] * b[i];
        float gc = s + 0.5f > 0.0f ? drgb[c] : 0.0f;
        for (int i = 0; i < nb; i++) draw[1 + c * nb + i] = gc * b[i];
    }
}

/* The eight corners (voxel indices, not channel offsets) and weights of the trilinear
 * cell at index-space point p, in vx_trilinear_cell's corner order. */
VX_HD void vx_fit_corners(int nx, int ny, int nz, vx_vec3 p, size_t *idx, float *w) {
    vx_cell c;
    vx_trilinear_cell(nx, ny, nz, p, &c);
    for (int k = 0; k < 8; k++) {
        int x, y, z;
        vx_cell_corner(&c, k, &x, &y, &z);
        idx[k] = ((size_t)z * ny + y) * nx + x;
        w[k] = c.w[k];
    }
}

/* Adjoint of the trilinear gather: grad[corner][c] += w_corner * draw[c]. Corners that
 * coincide at the border (n == 1) simply receive both shares, as the gather read both. */
VX_HD void vx_fit_trilinear_scatter(float *grad, int nx, int ny, int nz, int nc, vx_vec3 p,
                                    const float *draw) {
    size_t idx[8];
    float w[8];
    vx_fit_corners(nx, ny, nz, p, idx, w);
    for (int j = 0; j < 8; j++) {
        if (w[j] == 0.0f) continue;
        float *gp = grad + idx[j] * (size_t)nc;
        for (int c = 0; c < nc; c++)
            if (draw[c] != 0.0f) vx_fit_add(gp + c, w[j] * draw[c]);
    }
}

/* ---- the whole ray --------------------------------------------------------------------- */

/* The backward op: the dense fetch and decode of vx_march() (vx_grid_op_sample keeps the
 * raw channels), and a visit that turns each composited sample into dL/d(grid). */
VX_HD void vx_fit_backward_visit(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w);

typedef struct vx_fit_backward_op {
    vx_grid_op fwd;         /* first: its op head is this op's, vx_grid_op_sample fetches */
    const float *C, *g;     /* the forward colour and dL/dC */
    float *grad, *wmax;
    float b[16];            /* SH basis of the ray direction */
    int nb;
    VX_MARCH_OP_FUNCS(vx_grid_op_sample, vx_fit_backward_visit)
} vx_fit_backward_op;

VX_HD void vx_fit_backward_visit(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w) {
    vx_fit_backward_op *f = (vx_fit_backward_op *)op;
    const vx_march_params *m = f->fwd.m;
    float draw[VX_MAX_CHANNELS];
    float drgb[3] = {w * f->g[0], w * f->g[1], w * f->g[2]};
    float dsigma = vx_fit_composite_dsigma(f->g, rgb, c->T, c->acc, f->C, s->tb - s->ta);
    vx_fit_decode_sh_backward(&m->dec, f->fwd.raw, f->b, f->nb, dsigma, drgb, draw);
    vx_fit_trilinear_scatter(f->grad, m->nx, m->ny, m->nz, m->nc, s->p, draw);
    if (f->wmax && w > 0.0f) {
        size_t idx[8];
        float cw[8];
        vx_fit_corners(m->nx, m->ny, m->nz, s->p, idx, cw);
        for (int j = 0; j < 8; j++)
            if (cw[j] > 0.0f) vx_fit_max(f->wmax + idx[j], w);
    }
}

/* Backward of vx_march() for the sh decoder. `fwd` is vx_march(m, data, occ, o, d) (the
 * caller runs it; its colour is C), `g` = dL/dC. vx_march_run marches the same samples
 * again (same segments, occupancy skips and early stop) while the visit accumulates
 * dL/d(grid) into grad (atomics). If wmax is not NULL each touched voxel's entry is raised
 * to the sample's weight T*alpha (pruning statistics). Writes the colour recomputed by
 * this pass (equals fwd) to recomputed when not NULL. */
VX_HD void vx_fit_march_backward(const vx_march_params *m, const float *data, const unsigned char *occ,
                                 vx_vec3 o, vx_vec3 d, const vx_ray_result *fwd, const float *g,
                                 float *grad, float *wmax, float *recomputed) {
    vx_fit_backward_op f;
    f.fwd = vx_grid_op_make(m, data, NULL);
    VX_MARCH_OP_INIT(&f.fwd.op, vx_grid_op_sample, vx_fit_backward_visit);
    f.C = fwd->rgb;
    f.g = g;
    f.grad = grad;
    f.wmax = wmax;
    f.nb = vx_sh_basis(m->dec.sh_degree, d, f.b);
    vx_ray_result r = vx_march_run(m, occ, o, d, 0.0f, VX_MARCH_OP_OF(&f));
    if (recomputed)
        for (int c = 0; c < 3; c++) recomputed[c] = r.rgb[c];
}

/* Photometric loss of one ray: sum over rgb of (C - target)^2 times `scale` (the caller
 * passes 1/(3*batch) for the mean); writes g = dL/dC and returns the ray's term. */
VX_HD float vx_fit_mse_backward(const float *C, const float *target, float scale, float *g) {
    float l = 0.0f;
    for (int c = 0; c < 3; c++) {
        float e = C[c] - target[c];
        l += e * e;
        g[c] = 2.0f * e * scale;
    }
    return l * scale;
}

/* A 64-bit hash of (seed, i) (splitmix64's finaliser): the per-element random numbers
 * both backends draw without sharing a generator's state. */
VX_HD unsigned long long vx_fit_hash(unsigned long long seed, unsigned long long i) {
    return vx_mix64(seed + (i + 1ull) * 0x9E3779B97F4A7C15ull);
}

/* Whether voxel i takes part in this step's TV (a hash of (seed, i) below fraction):
 * the CPU and the GPU pick the same subset. */
VX_HD int vx_fit_tv_selected(unsigned long long seed, unsigned long long i, float fraction) {
    if (fraction >= 1.0f) return 1;
    unsigned long long z = vx_fit_hash(seed, i);
    return (float)(z >> 40) * (1.0f / 16777216.0f) < fraction; /* top 24 bits, uniform in [0,1) */
}

/* Training pixel of ray r in a batch drawn with `seed`: view v (of views) and pixel row i,
 * column j of a w x h photo, uniform over all training pixels. */
VX_HD void vx_fit_pick_pixel(unsigned long long seed, unsigned long long r, int views, int w, int h, int *v, int *i,
                             int *j) {
    unsigned long long z = vx_fit_hash(seed, r);
    unsigned long long p = ((z >> 32) * (unsigned long long)w * (unsigned long long)h) >> 32; /* < w h */
    *v = (int)((z & 0xffffffffull) % (unsigned long long)views);
    *i = (int)(p / (unsigned long long)w);
    *j = (int)(p % (unsigned long long)w);
}

/* Occupancy cells c0..c1 (one axis) whose footprint holds lattice index i: cell c covers
 * indices c*b - 1 .. c*b + b (vx_occupancy_build_cpu's one-point margin), n cells. */
VX_HD void vx_fit_occ_cells(int i, int b, int n, int *c0, int *c1) {
    int lo = i - b <= 0 ? 0 : (i - b + b - 1) / b; /* ceil((i - b) / b), at least 0 */
    int hi = (i + 1) / b;
    *c0 = lo;
    *c1 = hi < n - 1 ? hi : n - 1;
}

/* ---- optimiser and regulariser, per element ---------------------------------------------- */

/* One Adam update of parameter x with gradient gr; t is the 1-based step. lazy: a zero
 * gradient leaves x and both moments as they are (sparse Adam: a voxel no ray of the batch
 * touched does not drift on its stale momentum, as Plenoxels updates only touched voxels). */
VX_HD void vx_fit_adam_update(float *x, float *mom, float *var, float gr, float lr, float b1, float b2,
                              float eps, float bc1, float bc2, int lazy) {
    /* bc1 = 1 - b1^t, bc2 = 1 - b2^t (computed once per step by the caller) */
    if (lazy && gr == 0.0f) return;
    *mom = b1 * *mom + (1.0f - b1) * gr;
    *var = b2 * *var + (1.0f - b2) * gr * gr;
    float mh = *mom / bc1, vh = *var / bc2;
    *x -= lr * mh / (sqrtf(vh) + eps);
}

/* Isotropic total variation at voxel (x, y, z), channel c, Plenoxels style:
 * tv = sqrt(dx^2 + dy^2 + dz^2 + eps) with forward differences (zero past the last voxel).
 * Adds weight * d tv / d value to the voxel and its +x, +y, +z neighbours; returns tv. */
VX_HD float vx_fit_tv_voxel(const float *data, float *grad, int nx, int ny, int nz, int nc, int x, int y,
                            int z, int c, float weight, float eps) {
    size_t i = (((size_t)z * ny + y) * nx + x) * nc + c;
    size_t sx = (size_t)nc, sy = (size_t)nx * nc, sz = (size_t)ny * nx * nc;
    float v = data[i];
    float dx = x + 1 < nx ? data[i + sx] - v : 0.0f;
    float dy = y + 1 < ny ? data[i + sy] - v : 0.0f;
    float dz = z + 1 < nz ? data[i + sz] - v : 0.0f;
    float tv = sqrtf(dx * dx + dy * dy + dz * dz + eps);
    if (grad && weight != 0.0f) {
        float s = weight / tv;
        vx_fit_add(grad + i, -s * (dx + dy + dz));
        if (x + 1 < nx) vx_fit_add(grad + i + sx, s * dx);
        if (y + 1 < ny) vx_fit_add(grad + i + sy, s * dy);
        if (z + 1 < nz) vx_fit_add(grad + i + sz, s * dz);
    }
    return tv;
}

#endif
