/* fit_rays.cuh - version 2 of the `voxray fit` ray step, included by fit.cu: one thread
 * per ray marches the grid forward (colour C) and again backward (dL/dgrid), with the
 * channel count a constant (one instantiation per SH degree) so the interpolated channels
 * live in registers; rays are drawn on the device (vx_fit_pick_pixel) or read from a batch.
 * The arithmetic is vx_march + vx_fit_march_backward's (fit_march.h), sample for sample. */
#ifndef VX_FIT_RAYS_CUH
#define VX_FIT_RAYS_CUH

#include "camera.h"
#include "fit_march.h"
#include "load.cuh"

/* Where a thread's ray comes from: a host-made batch (origin/dir/target, with bg its
 * random backgrounds or NULL) or random pixels of the training photos on the device
 * (images != NULL, alpha their coverage or NULL), picked by vx_fit_pick_pixel_map from
 * tiles (n_map 0: uniformly; tiles.random_bg: against random backgrounds); with ray_err
 * each ray's squared error is written there. */
typedef struct {
    const float *origin, *dir, *target, *bg;
    const float *images, *alpha;
    const vx_camera *cams;
    vx_fit_tiles tiles;
    unsigned long long seed;
    float *ray_err;
} vx_fit_ray_src;

template <int DEG> struct vx_fit_sh {
    static constexpr int nb = (DEG + 1) * (DEG + 1);
    static constexpr int nc = 1 + 3 * nb;
};

/* NC channels of voxel v (read-only path; the parameters do not change during the step). */
template <int NC> __device__ __forceinline__ void vx_fit_load(const float *__restrict__ data, size_t v, float *out) {
    vx_load_point<NC>(data + v * NC, out);
}

/* Channel counts that are not a multiple of 4 (degrees 1 and 3: 13 and 49 channels) put a
 * voxel's first channel a = (v*NC) mod 4 floats past a 16-byte boundary. Rather than
 * branch on a (a warp's rays hit voxels of all four phases, and a switch serialised them:
 * the degree-3 step ran 2x slower), every thread moves the same aligned window of
 * VX_FIT_WIN(NC) floats that covers the voxel, and shifts by a with two levels of selects
 * (by a's bit 0, then bit 1). The window reaches up to 3 floats past the last voxel, so
 * the parameter and gradient arrays carry VX_FIT_PAD floats of zeros (fit.cu). */
#define VX_FIT_WIN(NC) (((NC) + 3 + 3) / 4 * 4)
#define VX_FIT_PAD 4

/* grad[v*NC + c] += s * val(c) for every channel; float4 atomics where the hardware has
 * them (sm_90). With NC % 4 != 0 the window's floats outside the voxel receive +0.0 (the
 * neighbours' gradients, lazy Adam's exact-zero test and the null brick are unchanged). */
#define VX__VAL(ch) ((ch) == 0 ? s * draw0 : s * (gc[((ch) - 1) / nb] * b[((ch) - 1) % nb]))
template <int DEG>
__device__ __forceinline__ void vx_fit_scatter_voxel(float *grad, size_t v, float s, float draw0, const float *gc,
                                                     const float *b) {
    constexpr int nb = vx_fit_sh<DEG>::nb, NC = vx_fit_sh<DEG>::nc;
    float *p = grad + v * NC;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (NC % 4 == 0) {
#pragma unroll
        for (int q = 0; q < NC; q += 4)
            atomicAdd((float4 *)(p + q), make_float4(VX__VAL(q), VX__VAL(q + 1), VX__VAL(q + 2), VX__VAL(q + 3)));
    } else {
        constexpr int NW = VX_FIT_WIN(NC);
        unsigned a = (unsigned)(v * NC) & 3u;
        bool a1 = a & 1u, a2 = a & 2u;
        float m1[NW];
#pragma unroll
        for (int k = 0; k < NW; k++) { /* m1[k] = val(k - (a & 1)), zero outside [0, NC) */
            float x0 = k < NC ? VX__VAL(k) : 0.0f, x1 = k >= 1 && k - 1 < NC ? VX__VAL(k - 1) : 0.0f;
            m1[k] = a1 ? x1 : x0;
        }
        float *w = p - a; /* 16-byte aligned */
#pragma unroll
        for (int q = 0; q < NW; q += 4) {
            float u[4];
#pragma unroll
            for (int i = 0; i < 4; i++) u[i] = a2 ? (q + i >= 2 ? m1[q + i - 2] : 0.0f) : m1[q + i];
            atomicAdd((float4 *)(w + q), make_float4(u[0], u[1], u[2], u[3]));
        }
    }
#else
#pragma unroll
    for (int c = 0; c < NC; c++) {
        float val = VX__VAL(c);
        if (val != 0.0f) atomicAdd(p + c, val);
    }
#endif
}
#undef VX__VAL

/* One corner's colour sums t_c = sum_i k_ci b_i from voxel v's parameters, for a channel
 * count that is not a multiple of 4: the aligned window of VX_FIT_WIN(NC) floats in
 * float4 loads (degree 3: 13 instead of 49 scalar loads), shifted by a = (v*NC) mod 4 with
 * selects, the same instructions for every thread. The sums run over i in order, as the
 * multiple-of-4 path does. */
template <int DEG>
__device__ __forceinline__ void vx_fit_colour_window(const float *__restrict__ data, unsigned v, const float *b, float *t) {
    constexpr int nb = vx_fit_sh<DEG>::nb, NC = vx_fit_sh<DEG>::nc, NW = VX_FIT_WIN(NC);
    size_t e = (size_t)v * NC;
    unsigned a = (unsigned)e & 3u;
    bool a1 = a & 1u, a2 = a & 2u;
    const float *w = data + (e - a);
    float x[NW];
#pragma unroll
    for (int q = 0; q < NW; q += 4) {
        float4 y = __ldg((const float4 *)(w + q));
        x[q] = y.x; x[q + 1] = y.y; x[q + 2] = y.z; x[q + 3] = y.w;
    }
#pragma unroll
    for (int k = 0; k + 1 < NW; k++) x[k] = a1 ? x[k + 1] : x[k]; /* x[k] = window[k + (a & 1)] */
    t[0] = t[1] = t[2] = 0.0f;
#pragma unroll
    for (int c = 0; c < 3; c++)
#pragma unroll
        for (int i = 0; i < nb; i++) {
            int ch = 1 + c * nb + i;
            t[c] += (a2 ? x[ch + 2] : x[ch]) * b[i];
        }
}

/* The fit's op for vx_march_run, specialised on the SH degree (relu density, plenoxels
 * colour). sample() reads density first: a sample with relu(raw0) = 0 has alpha = 0 and
 * changes neither the colour, T nor any gradient, so its colour channels are never read;
 * the colour is summed per corner (s_c = sum_j w_j sum_i k_jci b_i) so the interpolated
 * coefficients never materialise. visit() (backward) scatters dL/dgrid. REG (VX_FIT_REG_*)
 * says which ray regularisers (fit_march.h) are compiled in. VX_FIT_REG_ALL: the forward
 * visit sums the density terms' parts, the backward adds their density gradient; PX and
 * ALL: the backward adds the per-point colour loss's colour gradient, 2 pw w_k (c_k -
 * target) (vx_fit_px_loss; pw 0: none). NONE compiles to the kernel without any. */
enum { VX_FIT_REG_NONE = 0, VX_FIT_REG_PX = 1, VX_FIT_REG_ALL = 2 };

/* The instantiation a step needs: the weights reg (per ray) and pw (a ray's per-point
 * colour weight) as the launcher passes them. */
VX_HD int vx_fit_reg_mode(const vx_fit_reg *reg, float pw) {
    return vx_fit_reg_on(reg) ? VX_FIT_REG_ALL : pw > 0.0f ? VX_FIT_REG_PX : VX_FIT_REG_NONE;
}
template <int DEG, bool BWD, int REG> struct vx_fit_sh_op {
    static constexpr bool pieces = false; /* training marches whole rays (march.h) */
    const vx_march_params *m;
    const vx_fit_index *L;
    const float *data;
    float b[16];                /* SH basis of the ray direction */
    unsigned idx[8];            /* the last sample's corners (32-bit entries: the storage holds
                                 * < 2^32 voxels, fit.cu checks), weights and colour sums */
    float w[8], s[3];
    const float *C, *g;         /* backward: forward colour and dL/dC */
    float *grad, *wmax;
    float sig;                  /* REG ALL: the last sample's sigma */
    vx_fit_reg reg;             /* REG ALL: weights per ray */
    vx_fit_reg_sums sums;       /* REG ALL: forward sums (written forward, read backward) */
    vx_fit_reg_run run;         /* REG ALL backward: running sums */
    float pw, tg[3];            /* REG PX or ALL, backward: per-point colour weight (a ray), target */

    static __device__ __forceinline__ float sample(void *op, const vx_sample *smp, vx_vec3 d, float *rgb);
    static __device__ __forceinline__ void visit(void *op, const vx_composite *cs, const vx_sample *smp,
                                                 const float *rgb, float wk);
};

template <int DEG, bool BWD, int REG>
__device__ __forceinline__ float vx_fit_sh_op<DEG, BWD, REG>::sample(void *op, const vx_sample *smp, vx_vec3 d,
                                                                float *rgb) {
    constexpr int nb = vx_fit_sh<DEG>::nb, NC = vx_fit_sh<DEG>::nc;
    vx_fit_sh_op *f = (vx_fit_sh_op *)op;
    const vx_march_params *m = f->m;
    {
        size_t idx[8];
        vx_fit_corners(f->L, smp->p, idx, f->w);
#pragma unroll
        for (int j = 0; j < 8; j++) f->idx[j] = (unsigned)idx[j];
    }
    float raw0 = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) raw0 += f->w[j] * __ldg(f->data + f->idx[j] * NC);
    if (!(raw0 > 0.0f)) return 0.0f;
    f->s[0] = f->s[1] = f->s[2] = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if constexpr (NC % 4 == 0) {
            float v[NC];
            vx_fit_load<NC>(f->data, f->idx[j], v);
#pragma unroll
            for (int c = 0; c < 3; c++) {
                float t = 0.0f;
#pragma unroll
                for (int i = 0; i < nb; i++) t += v[1 + c * nb + i] * f->b[i];
                f->s[c] += f->w[j] * t;
            }
        } else {
            float t[3];
            vx_fit_colour_window<DEG>(f->data, f->idx[j], f->b, t);
#pragma unroll
            for (int c = 0; c < 3; c++) f->s[c] += f->w[j] * t[c];
        }
    }
#pragma unroll
    for (int c = 0; c < 3; c++) rgb[c] = vx_maxf(f->s[c] + 0.5f, 0.0f);
    if constexpr (REG == VX_FIT_REG_ALL) f->sig = raw0 * m->dec.density_scale;
    return raw0 * m->dec.density_scale;
}

template <int DEG, bool BWD, int REG>
__device__ __forceinline__ void vx_fit_sh_op<DEG, BWD, REG>::visit(void *op, const vx_composite *cs,
                                                                   const vx_sample *smp, const float *rgb, float wk) {
    vx_fit_sh_op *f = (vx_fit_sh_op *)op;
    if constexpr (!BWD) {
        if constexpr (REG == VX_FIT_REG_ALL) vx_fit_reg_forward(&f->sums, f->sig, wk, smp->tm, smp->tb - smp->ta);
        return;
    }
    float dsig = 0.0f;
#pragma unroll
    for (int c = 0; c < 3; c++) dsig += f->g[c] * (cs->T * rgb[c] - (f->C[c] - cs->acc[c]));
    /* dsig is dL/d(sigma delta) here; the regularisers give dL/dsigma (fit_march.h) */
    float dsigma = (smp->tb - smp->ta) * dsig;
    if constexpr (REG == VX_FIT_REG_ALL) dsigma += vx_fit_reg_dsigma(&f->reg, &f->sums, &f->run, f->sig, wk, cs->T, smp->tm, smp->tb - smp->ta);
    float draw0 = dsigma * f->m->dec.density_scale;
    float gc[3];
#pragma unroll
    for (int c = 0; c < 3; c++) {
        float gcol = f->g[c];
        if constexpr (REG != VX_FIT_REG_NONE) gcol += 2.0f * f->pw * (rgb[c] - f->tg[c]);
        gc[c] = f->s[c] + 0.5f > 0.0f ? wk * gcol : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (f->w[j] != 0.0f && !vx_fit_is_null(f->L, f->idx[j]))
            vx_fit_scatter_voxel<DEG>(f->grad, f->idx[j], f->w[j], draw0, gc, f->b);
    if (f->wmax && wk > 0.0f)
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (f->w[j] > 0.0f && !vx_fit_is_null(f->L, f->idx[j])) vx_fit_max(f->wmax + f->idx[j], wk);
}

/* One ray. BWD false: forward only, writes the composited colour (against the model's
 * background) to C and the transmittance left to trans (and with REG ALL the regularisers'
 * sums to *sums). Otherwise C is the forward colour and g = dL/dC: marches
 * again and scatters dL/dgrid into grad (and raises wmax when not NULL); with REG ALL the
 * density regularisers' gradient (weights reg, the forward's *sums) is included, with PX
 * or ALL the per-point colour loss's (weight pw, the pixel tg). */
template <int DEG, bool BWD, int REG>
__device__ __forceinline__ void vx_fit_march_t(const vx_march_params &m, const vx_fit_index &L,
                                               const float *__restrict__ data,
                                               const unsigned char *__restrict__ occ, vx_vec3 o, vx_vec3 d, float *C,
                                               const float *g, float *grad, float *wmax, const vx_fit_reg &reg,
                                               vx_fit_reg_sums &sums, float pw, const float *tg, float &trans) {
    vx_fit_sh_op<DEG, BWD, REG> f;
    f.m = &m;
    f.L = &L;
    f.data = data;
    vx_sh_basis(DEG, d, f.b);
    f.C = C;
    f.g = g;
    f.grad = grad;
    f.wmax = wmax;
    if constexpr (REG == VX_FIT_REG_ALL) {
        f.reg = reg;
        if constexpr (BWD) {
            f.sums = sums;
            f.run.W = f.run.S = f.run.P = 0.0f;
        } else {
            vx_fit_reg_sums_zero(&f.sums);
        }
    }
    if constexpr (REG != VX_FIT_REG_NONE && BWD) {
        f.pw = pw;
        for (int c = 0; c < 3; c++) f.tg[c] = tg[c];
    }
    vx_ray_result r = vx_march_run(&m, occ, o, d, 0.0f, &f);
    if (!BWD) {
        for (int c = 0; c < 3; c++) C[c] = r.rgb[c];
        trans = r.trans;
    }
    if constexpr (REG == VX_FIT_REG_ALL && !BWD) sums = f.sums;
}

/* Ray r of src: origin, direction and where its target colour is (a pixel of a training
 * photo drawn from the seed, or ray r of a host batch), as vx_fit_rays_v2_kernel draws it
 * inline (left as it is: its SASS was timed; rewritten through these helpers its PTX
 * changes): the mlp kernels draw through it, so one index names the same ray in each of
 * a step's kernels. */
__device__ __forceinline__ void vx_fit_src_ray(const vx_fit_ray_src &src, int r, vx_vec3 *o, vx_vec3 *d,
                                               const float **target) {
    if (src.images) {
        int v, i, j;
        vx_fit_tiles T = src.tiles;
        vx_fit_pick_pixel_map(&T, src.seed, (unsigned long long)r, &v, &i, &j);
        float x, y;
        vx_fit_pixel_point(&T, src.seed, (unsigned long long)r, i, j, &x, &y);
        vx_camera_ray(&src.cams[v], x, y, o, d);
        *target = src.images + (((size_t)v * T.h + i) * T.w + j) * 3;
    } else {
        *o = vx_v3(src.origin[3 * r], src.origin[3 * r + 1], src.origin[3 * r + 2]);
        *d = vx_v3(src.dir[3 * r], src.dir[3 * r + 1], src.dir[3 * r + 2]);
        *target = src.target + 3 * r;
    }
}

/* Whether src's rays each have their own background (fit --random-bg): device-drawn rays
 * with tiles.random_bg, or a host batch that brings backgrounds. */
__host__ __device__ __forceinline__ bool vx_fit_src_own_bg(const vx_fit_ray_src *src) {
    return src->images ? src->tiles.random_bg != 0 : src->bg != NULL;
}

/* Ray r's background bg and target colour tg, target pointing at its pixel or batch entry:
 * with its own background (vx_fit_src_own_bg) a random colour (vx_fit_ray_background) and
 * the photo composited on it by its coverage, or a host batch's colour and target (composited
 * already); otherwise the model's background and the stored pixel. */
__device__ __forceinline__ void vx_fit_src_background(const vx_fit_ray_src &src, const vx_march_params &mp, int r,
                                                      const float *target, float *bg, float *tg) {
    for (int c = 0; c < 3; c++) tg[c] = __ldg(target + c);
    if (!vx_fit_src_own_bg(&src)) {
        for (int c = 0; c < 3; c++) bg[c] = mp.bg[c];
    } else if (src.images) {
        vx_fit_ray_background(src.seed, (unsigned long long)r, bg);
        float a = src.alpha ? __ldg(src.alpha + (target - src.images) / 3) : 1.0f;
        float px[3] = {tg[0], tg[1], tg[2]};
        vx_fit_target_on(px, a, bg, tg);
    } else {
        for (int c = 0; c < 3; c++) bg[c] = __ldg(src.bg + 3 * r + c);
    }
}

/* The block's sum of each thread's l into *loss_sum, one double atomic per block (blocks
 * of at most 128 threads; every thread of the block calls it), as version 2 sums inline. */
__device__ __forceinline__ void vx_fit_block_loss(float l, double *loss_sum) {
    for (int off = 16; off > 0; off >>= 1) l += __shfl_down_sync(0xffffffffu, l, off);
    __shared__ float part[4];
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = l;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) t += part[w];
        atomicAdd(loss_sum, t);
    }
}

/* The ray step: forward, loss, backward; per-block loss sums go to *loss_sum (the
 * photometric loss only; REG ALL adds the density regularisers' gradient, weights reg, PX
 * and ALL the per-point colour loss's, weight pw a ray). The minimum
 * of 4 blocks per SM keeps the occupancy of the hand-written loop this replaced: through
 * vx_march_run ptxas asked for 139 registers at degree 2 (was 113), i.e. 3 blocks; capped
 * at 128 it spills 48 bytes (sm_90, docs/BENCHMARKS.md has the timings). Degree 3 held 3
 * blocks (168 registers) until its colour loads went float4 (vx_fit_colour_window): now
 * 128 registers, 28 bytes of spill, and 10.4 ms against 12.6 ms for 3 blocks (H200). RBG:
 * each ray against its own background (fit --random-bg; vx_fit_src_background), a template
 * flag because at degree 3 the same code as a runtime test tripled the spills. */
template <int DEG, int REG, bool RBG>
__global__ void __launch_bounds__(128, 4)
vx_fit_rays_v2_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data, const unsigned char *__restrict__ occ,
                      vx_fit_ray_src src, int n, float scale, vx_fit_reg reg, float pw, float *grad, float *wmax,
                      float *rgb_out, double *loss_sum) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float l = 0.0f;
    if (r < n) {
        vx_vec3 o, d;
        const float *target;
        if (src.images) {
            int v, i, j;
            vx_fit_tiles T = src.tiles;
            vx_fit_pick_pixel_map(&T, src.seed, (unsigned long long)r, &v, &i, &j);
            float x, y;
            vx_fit_pixel_point(&T, src.seed, (unsigned long long)r, i, j, &x, &y);
            vx_camera_ray(&src.cams[v], x, y, &o, &d);
            target = src.images + (((size_t)v * T.h + i) * T.w + j) * 3;
        } else {
            o = vx_v3(src.origin[3 * r], src.origin[3 * r + 1], src.origin[3 * r + 2]);
            d = vx_v3(src.dir[3 * r], src.dir[3 * r + 1], src.dir[3 * r + 2]);
            target = src.target + 3 * r;
        }
        float C[3], g[3], tg[3] = {__ldg(target), __ldg(target + 1), __ldg(target + 2)}, T;
        vx_fit_reg_sums sums;
        vx_fit_march_t<DEG, false, REG>(mp, L, data, occ, o, d, C, NULL, NULL, NULL, reg, sums, pw, tg, T);
        if constexpr (RBG) { /* after the forward march: nothing of it is live across that */
            float bgr[3];
            vx_fit_src_background(src, mp, r, target, bgr, tg);
            for (int c = 0; c < 3; c++) C[c] += T * (bgr[c] - mp.bg[c]);
        }
        l = vx_fit_mse_backward(C, tg, scale, g);
        vx_fit_march_t<DEG, true, REG>(mp, L, data, occ, o, d, C, g, grad, wmax, reg, sums, pw, tg, T);
        if (rgb_out)
            for (int c = 0; c < 3; c++) rgb_out[3 * r + c] = C[c];
        if (src.ray_err) src.ray_err[r] = vx_fit_ray_error(C, tg);
    }
    /* block sum of the loss, one double atomic per block */
    for (int off = 16; off > 0; off >>= 1) l += __shfl_down_sync(0xffffffffu, l, off);
    __shared__ float part[4];
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = l;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) t += part[w];
        atomicAdd(loss_sum, t);
    }
}

/* Ray r's error (from a batch drawn with seed over T) into its tile's sum and count: the
 * device twin of vx_fit_errmap_add_cpu (fit_errmap.c). */
__global__ void vx_fit_errmap_add_kernel(vx_fit_tiles T, unsigned long long seed, int n, const float *__restrict__ ray_err,
                                         float *acc) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    int v, i, j;
    vx_fit_pick_pixel_map(&T, seed, (unsigned long long)r, &v, &i, &j);
    int k = vx_fit_tile_of(&T, v, i, j);
    atomicAdd(acc + 2 * k, ray_err[r]);
    atomicAdd(acc + 2 * k + 1, 1.0f);
}

/* Forward render of one camera, one thread per pixel (validation while training). */
template <int DEG>
__global__ void vx_fit_render_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data,
                                     const unsigned char *__restrict__ occ, vx_camera cam, float *rgb) {
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= cam.width || py >= cam.height) return;
    vx_vec3 o, d;
    vx_camera_ray(&cam, (float)px + 0.5f, (float)py + 0.5f, &o, &d);
    float C[3];
    vx_fit_reg reg = {0.0f, 0.0f, 0.0f};
    vx_fit_reg_sums sums;
    float T;
    vx_fit_march_t<DEG, false, VX_FIT_REG_NONE>(mp, L, data, occ, o, d, C, NULL, NULL, NULL, reg, sums, 0.0f, NULL, T);
    float *out = rgb + ((size_t)py * cam.width + px) * 3;
    out[0] = C[0]; out[1] = C[1]; out[2] = C[2];
}

#endif
