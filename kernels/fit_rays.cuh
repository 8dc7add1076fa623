/* fit_rays.cuh - version 2 of the `voxray fit` ray step, included by fit.cu: one thread
 * per ray marches the grid forward (colour C) and again backward (dL/dgrid), with the
 * channel count a constant (one instantiation per SH degree) so the interpolated channels
 * live in registers; rays are drawn on the device (vx_fit_pick_pixel) or read from a batch.
 * The arithmetic is vx_march + vx_fit_march_backward's (fit_march.h), sample for sample. */
#ifndef VX_FIT_RAYS_CUH
#define VX_FIT_RAYS_CUH

#include "camera.h"
#include "fit_march.h"

/* Where a thread's ray comes from: a host-made batch (origin/dir/target) or random pixels
 * of the training photos on the device (images != NULL). */
typedef struct {
    const float *origin, *dir, *target;
    const float *images;
    const vx_camera *cams;
    int views, w, h;
    unsigned long long seed;
} vx_fit_ray_src;

template <int DEG> struct vx_fit_sh {
    static constexpr int nb = (DEG + 1) * (DEG + 1);
    static constexpr int nc = 1 + 3 * nb;
};

/* NC channels of voxel v (read-only path; the parameters do not change during the step). */
template <int NC> __device__ __forceinline__ void vx_fit_load(const float *__restrict__ data, size_t v, float *out) {
    const float *p = data + v * NC;
    if constexpr (NC % 4 == 0) {
#pragma unroll
        for (int q = 0; q < NC; q += 4) {
            float4 t = __ldg((const float4 *)(p + q));
            out[q] = t.x; out[q + 1] = t.y; out[q + 2] = t.z; out[q + 3] = t.w;
        }
    } else {
#pragma unroll
        for (int c = 0; c < NC; c++) out[c] = __ldg(p + c);
    }
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

/* One ray. g == NULL: forward only, writes the composited colour to C. Otherwise C is
 * the forward colour and g = dL/dC: marches again and scatters dL/dgrid into grad (and
 * raises wmax when not NULL). */
template <int DEG>
__device__ void vx_fit_march_t(const vx_march_params &m, const float *__restrict__ data,
                               const unsigned char *__restrict__ occ, vx_vec3 o, vx_vec3 d, float *C, const float *g,
                               float *grad, float *wmax) {
    constexpr int nb = vx_fit_sh<DEG>::nb, NC = vx_fit_sh<DEG>::nc;
    float acc[3] = {0.0f, 0.0f, 0.0f}, T = 1.0f, t0, t1;
    vx_vec3 oi = vx_affine_point(m.w2i, o), di = vx_affine_dir(m.w2i, d);
    if (vx_ray_box(m.box_lo, m.box_hi, oi, di, &t0, &t1)) {
        int n = vx_segment_count(t1 - t0, m.dt);
        float b[16];
        vx_sh_basis(DEG, d, b);
        const float scale = m.dec.density_scale;
        for (int k = 0; k < n; k++) {
            float ta, tb;
            vx_segment(&m, t0, t1, n, k, &ta, &tb);
            float tm = 0.5f * (ta + tb);
            vx_vec3 p = vx_add(oi, vx_scale(di, tm));
            if (occ && vx_occ_skip(&m, occ, oi, di, p, t0, n, &k)) continue;
            size_t idx[8];
            float w[8];
            vx_fit_corners(m.nx, m.ny, m.nz, p, idx, w);
            /* density first: a sample with relu(raw0) = 0 has alpha = 0 and changes neither
             * the colour, T nor any gradient, so its colour channels are never read */
            float raw0 = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; j++) raw0 += w[j] * __ldg(data + idx[j] * NC);
            if (!(raw0 > 0.0f)) continue;
            /* colour sums per corner: s_c = sum_j w_j (sum_i k_jci b_i), the interpolated
             * coefficients never materialise (fewer registers than raw[NC]) */
            float s[3] = {0.0f, 0.0f, 0.0f}, rgb[3];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                float v[NC];
                vx_fit_load<NC>(data, idx[j], v);
#pragma unroll
                for (int c = 0; c < 3; c++) {
                    float t = 0.0f;
#pragma unroll
                    for (int i = 0; i < nb; i++) t += v[1 + c * nb + i] * b[i];
                    s[c] += w[j] * t;
                }
            }
#pragma unroll
            for (int c = 0; c < 3; c++) rgb[c] = vx_maxf(s[c] + 0.5f, 0.0f);
            float sigma = raw0 * scale, delta = tb - ta;
            float alpha = 1.0f - expf(-sigma * delta);
            float wk = T * alpha;
            acc[0] += wk * rgb[0]; acc[1] += wk * rgb[1]; acc[2] += wk * rgb[2];
            T *= 1.0f - alpha;
            if (g) {
                float dsig = 0.0f;
#pragma unroll
                for (int c = 0; c < 3; c++) dsig += g[c] * (T * rgb[c] - (C[c] - acc[c]));
                float draw0 = delta * dsig * scale;
                float gc[3];
#pragma unroll
                for (int c = 0; c < 3; c++) gc[c] = s[c] + 0.5f > 0.0f ? wk * g[c] : 0.0f;
#pragma unroll
                for (int j = 0; j < 8; j++)
                    if (w[j] != 0.0f) vx_fit_scatter_voxel<DEG>(grad, idx[j], w[j], draw0, gc, b);
                if (wmax && wk > 0.0f)
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        if (w[j] > 0.0f) vx_fit_max(wmax + idx[j], wk);
            }
            if (T < m.stop) break;
        }
    }
    if (!g)
        for (int c = 0; c < 3; c++) C[c] = acc[c] + T * m.bg[c];
}

/* The ray step: forward, loss, backward; per-block loss sums go to *loss_sum. */
template <int DEG>
__global__ void __launch_bounds__(128)
vx_fit_rays_v2_kernel(vx_march_params mp, const float *__restrict__ data, const unsigned char *__restrict__ occ,
                      vx_fit_ray_src src, int n, float scale, float *grad, float *wmax, float *rgb_out,
                      double *loss_sum) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float l = 0.0f;
    if (r < n) {
        vx_vec3 o, d;
        const float *target;
        if (src.images) {
            int v, i, j;
            vx_fit_pick_pixel(src.seed, (unsigned long long)r, src.views, src.w, src.h, &v, &i, &j);
            vx_camera_ray(&src.cams[v], (float)j + 0.5f, (float)i + 0.5f, &o, &d);
            target = src.images + (((size_t)v * src.h + i) * src.w + j) * 3;
        } else {
            o = vx_v3(src.origin[3 * r], src.origin[3 * r + 1], src.origin[3 * r + 2]);
            d = vx_v3(src.dir[3 * r], src.dir[3 * r + 1], src.dir[3 * r + 2]);
            target = src.target + 3 * r;
        }
        float C[3], g[3], tg[3] = {__ldg(target), __ldg(target + 1), __ldg(target + 2)};
        vx_fit_march_t<DEG>(mp, data, occ, o, d, C, NULL, NULL, NULL);
        l = vx_fit_mse_backward(C, tg, scale, g);
        vx_fit_march_t<DEG>(mp, data, occ, o, d, C, g, grad, wmax);
        if (rgb_out)
            for (int c = 0; c < 3; c++) rgb_out[3 * r + c] = C[c];
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

/* Forward render of one camera, one thread per pixel (validation while training). */
template <int DEG>
__global__ void vx_fit_render_kernel(vx_march_params mp, const float *__restrict__ data,
                                     const unsigned char *__restrict__ occ, vx_camera cam, float *rgb) {
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= cam.width || py >= cam.height) return;
    vx_vec3 o, d;
    vx_camera_ray(&cam, (float)px + 0.5f, (float)py + 0.5f, &o, &d);
    float C[3];
    vx_fit_march_t<DEG>(mp, data, occ, o, d, C, NULL, NULL, NULL);
    float *out = rgb + ((size_t)py * cam.width + px) * 3;
    out[0] = C[0]; out[1] = C[1]; out[2] = C[2];
}

#endif
