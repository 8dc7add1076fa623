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

/* Where a thread's ray comes from: a host-made batch (origin/dir/target) or random pixels
 * of the training photos on the device (images != NULL), picked by vx_fit_pick_pixel_map
 * from tiles (n_map 0: uniformly); with ray_err each ray's squared error is written there. */
typedef struct {
    const float *origin, *dir, *target;
    const float *images;
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

/* grad[v*NC + c] += s * val(c) for every channel; float4 atomics where the hardware has
 * them (sm_90) and the voxel stride keeps 16-byte alignment. */
template <int DEG>
__device__ __forceinline__ void vx_fit_scatter_voxel(float *grad, size_t v, float s, float draw0, const float *gc,
                                                     const float *b) {
    constexpr int nb = vx_fit_sh<DEG>::nb, NC = vx_fit_sh<DEG>::nc;
    float *p = grad + v * NC;
#define VX__VAL(ch) ((ch) == 0 ? s * draw0 : s * (gc[((ch) - 1) / nb] * b[((ch) - 1) % nb]))
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (NC % 4 == 0) {
#pragma unroll
        for (int q = 0; q < NC; q += 4)
            atomicAdd((float4 *)(p + q), make_float4(VX__VAL(q), VX__VAL(q + 1), VX__VAL(q + 2), VX__VAL(q + 3)));
    } else
#endif
    {
#pragma unroll
        for (int c = 0; c < NC; c++) {
            float val = VX__VAL(c);
            if (val != 0.0f) atomicAdd(p + c, val);
        }
    }
#undef VX__VAL
}

/* The fit's op for vx_march_run, specialised on the SH degree (relu density, plenoxels
 * colour). sample() reads density first: a sample with relu(raw0) = 0 has alpha = 0 and
 * changes neither the colour, T nor any gradient, so its colour channels are never read;
 * the colour is summed per corner (s_c = sum_j w_j sum_i k_jci b_i) so the interpolated
 * coefficients never materialise. visit() (backward) scatters dL/dgrid. REG: the ray
 * regularisers (fit_march.h) are on: the forward visit sums their terms, the backward adds
 * their density gradient (REG false compiles to the kernel without them). */
template <int DEG, bool BWD, bool REG> struct vx_fit_sh_op {
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
    float sig;                  /* REG: the last sample's sigma */
    vx_fit_reg reg;             /* REG: weights per ray */
    vx_fit_reg_sums sums;       /* REG: forward sums (written forward, read backward) */
    vx_fit_reg_run run;         /* REG backward: running sums */

    static __device__ __forceinline__ float sample(void *op, const vx_sample *smp, vx_vec3 d, float *rgb);
    static __device__ __forceinline__ void visit(void *op, const vx_composite *cs, const vx_sample *smp,
                                                 const float *rgb, float wk);
};

template <int DEG, bool BWD, bool REG>
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
        float v[NC];
        vx_fit_load<NC>(f->data, f->idx[j], v);
#pragma unroll
        for (int c = 0; c < 3; c++) {
            float t = 0.0f;
#pragma unroll
            for (int i = 0; i < nb; i++) t += v[1 + c * nb + i] * f->b[i];
            f->s[c] += f->w[j] * t;
        }
    }
#pragma unroll
    for (int c = 0; c < 3; c++) rgb[c] = vx_maxf(f->s[c] + 0.5f, 0.0f);
    if constexpr (REG) f->sig = raw0 * m->dec.density_scale;
    return raw0 * m->dec.density_scale;
}

template <int DEG, bool BWD, bool REG>
__device__ __forceinline__ void vx_fit_sh_op<DEG, BWD, REG>::visit(void *op, const vx_composite *cs,
                                                                   const vx_sample *smp, const float *rgb, float wk) {
    vx_fit_sh_op *f = (vx_fit_sh_op *)op;
    if constexpr (!BWD) {
        if constexpr (REG) vx_fit_reg_forward(&f->sums, f->sig, wk, smp->tm, smp->tb - smp->ta);
        return;
    }
    float dsig = 0.0f;
#pragma unroll
    for (int c = 0; c < 3; c++) dsig += f->g[c] * (cs->T * rgb[c] - (f->C[c] - cs->acc[c]));
    /* dsig is dL/d(sigma delta) here; the regularisers give dL/dsigma (fit_march.h) */
    float dsigma = (smp->tb - smp->ta) * dsig;
    if constexpr (REG) dsigma += vx_fit_reg_dsigma(&f->reg, &f->sums, &f->run, f->sig, wk, cs->T, smp->tm, smp->tb - smp->ta);
    float draw0 = dsigma * f->m->dec.density_scale;
    float gc[3];
#pragma unroll
    for (int c = 0; c < 3; c++) gc[c] = f->s[c] + 0.5f > 0.0f ? wk * f->g[c] : 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (f->w[j] != 0.0f && !vx_fit_is_null(f->L, f->idx[j]))
            vx_fit_scatter_voxel<DEG>(f->grad, f->idx[j], f->w[j], draw0, gc, f->b);
    if (f->wmax && wk > 0.0f)
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (f->w[j] > 0.0f && !vx_fit_is_null(f->L, f->idx[j])) vx_fit_max(f->wmax + f->idx[j], wk);
}

/* One ray. BWD false: forward only, writes the composited colour to C (and with REG the
 * regularisers' sums to *sums). Otherwise C is the forward colour and g = dL/dC: marches
 * again and scatters dL/dgrid into grad (and raises wmax when not NULL); with REG the
 * regularisers' gradient (weights reg, the forward's *sums) is included. */
template <int DEG, bool BWD, bool REG>
__device__ __forceinline__ void vx_fit_march_t(const vx_march_params &m, const vx_fit_index &L,
                                               const float *__restrict__ data,
                                               const unsigned char *__restrict__ occ, vx_vec3 o, vx_vec3 d, float *C,
                                               const float *g, float *grad, float *wmax, const vx_fit_reg &reg,
                                               vx_fit_reg_sums &sums) {
    vx_fit_sh_op<DEG, BWD, REG> f;
    f.m = &m;
    f.L = &L;
    f.data = data;
    vx_sh_basis(DEG, d, f.b);
    f.C = C;
    f.g = g;
    f.grad = grad;
    f.wmax = wmax;
    if constexpr (REG) {
        f.reg = reg;
        if constexpr (BWD) {
            f.sums = sums;
            f.run.W = f.run.S = f.run.P = 0.0f;
        } else {
            f.sums.sparse = f.sums.W = f.sums.S = f.sums.D = f.sums.m0 = 0.0f;
            f.sums.n = 0;
        }
    }
    vx_ray_result r = vx_march_run(&m, occ, o, d, 0.0f, &f);
    if (!BWD)
        for (int c = 0; c < 3; c++) C[c] = r.rgb[c];
    if constexpr (REG && !BWD) sums = f.sums;
}

/* The ray step: forward, loss, backward; per-block loss sums go to *loss_sum (the
 * photometric loss only; REG adds the regularisers' gradient, weights reg). The minimum
 * of 4 blocks per SM (3 for degree 3) keeps the occupancy of the hand-written loop this
 * replaced: through vx_march_run ptxas asked for 139 registers at degree 2 (was 113), i.e.
 * 3 blocks; capped at 128 it spills 48 bytes (sm_90, docs/BENCHMARKS.md has the timings). */
template <int DEG, bool REG>
__global__ void __launch_bounds__(128, DEG == 3 ? 3 : 4)
vx_fit_rays_v2_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data, const unsigned char *__restrict__ occ,
                      vx_fit_ray_src src, int n, float scale, vx_fit_reg reg, float *grad, float *wmax, float *rgb_out,
                      double *loss_sum) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float l = 0.0f;
    if (r < n) {
        vx_vec3 o, d;
        const float *target;
        if (src.images) {
            int v, i, j;
            vx_fit_tiles T = src.tiles;
            vx_fit_pick_pixel_map(&T, src.seed, (unsigned long long)r, &v, &i, &j);
            vx_camera_ray(&src.cams[v], (float)j + 0.5f, (float)i + 0.5f, &o, &d);
            target = src.images + (((size_t)v * T.h + i) * T.w + j) * 3;
        } else {
            o = vx_v3(src.origin[3 * r], src.origin[3 * r + 1], src.origin[3 * r + 2]);
            d = vx_v3(src.dir[3 * r], src.dir[3 * r + 1], src.dir[3 * r + 2]);
            target = src.target + 3 * r;
        }
        float C[3], g[3], tg[3] = {__ldg(target), __ldg(target + 1), __ldg(target + 2)};
        vx_fit_reg_sums sums;
        vx_fit_march_t<DEG, false, REG>(mp, L, data, occ, o, d, C, NULL, NULL, NULL, reg, sums);
        l = vx_fit_mse_backward(C, tg, scale, g);
        vx_fit_march_t<DEG, true, REG>(mp, L, data, occ, o, d, C, g, grad, wmax, reg, sums);
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
    vx_fit_reg reg = {0.0f, 0.0f};
    vx_fit_reg_sums sums;
    vx_fit_march_t<DEG, false, false>(mp, L, data, occ, o, d, C, NULL, NULL, NULL, reg, sums);
    float *out = rgb + ((size_t)py * cam.width + px) * 3;
    out[0] = C[0]; out[1] = C[1]; out[2] = C[2];
}

#endif
