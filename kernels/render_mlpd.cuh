/* render_mlpd.cuh - the mlp decoder's deferred colour for render.cu (and the emulated
 * test, tests/emu/test_render_mlpd_emu.cpp): the march op and the count, write, network
 * and resolve kernels. render.cu launches them (vx__launch_mlpd). */
#ifndef VX_RENDER_MLPD_CUH
#define VX_RENDER_MLPD_CUH

#include "camera.h"
#include "load.cuh"
#include "mlp_tile.cuh"
#include "render_store.cuh"

/* The mlp decoder's deferred colour: a sample's weight T alpha, the stop, depth and opacity
 * follow from density alone, so the march needs no colour. One march counts each pixel's
 * composited samples (and writes everything but their colour), a second keeps their
 * network inputs and weights, the network runs over all of them as tiled products
 * (mlp_tile.cuh: every lane busy, where the fused kernel runs it in the few lanes of a warp
 * whose ray has density), and each pixel adds its samples' weighted colours in march order:
 * the CPU's sum, term for term. */

template <class S, bool WRITE, bool P, bool R = false> struct vx_mlpd_op {
    static constexpr bool pieces = P;
    const vx_march_params *m;
    S store;
    vx_brick_cache cache;
    vx_vec3 dir;                  /* the ray's */
    float raw[VX_MLP_CHANNELS];
    int n;                        /* samples counted (count pass) or written (write pass) */
    int cap;                      /* write pass: the count pass's n, never exceeded */
    unsigned long long at;        /* write pass: the pixel's first sample */
    float *x, *w;
    vx_vec3 g;                    /* R (the decoder's input reads it): the sample's density gradient;
                                   * last, so the view direction's instantiations keep their layout */

    /* The fetch is vx_render_op's density-first one (render.cu) without the decode: kept as
     * its own copy so that the fused kernels, whose registers were tuned and timed, are not
     * touched by this opt-in path until the device has timed both. */
    static __device__ __forceinline__ float sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb) {
        constexpr int NC = VX_MLP_CHANNELS;
        vx_mlpd_op *r = (vx_mlpd_op *)op;
        const vx_march_params *m = r->m;
        (void)d;
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        vx_cell c;
        float v[8][NC], d0;
        const typename S::elem *cp[8];
        vx_trilinear_cell(m->nx, m->ny, m->nz, s->p, &c);
        r->store.template corners<NC>(c, cp, r->cache);
        const float *vp[8] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
#pragma unroll
        for (int k = 0; k < 8; k++) vx_load_point<1>(cp[k], v[k]);
        vx_cell_blend(&c, vp, 1, &d0);
        float sigma = vx_density_activate(m->dec.density_act, d0) * m->dec.density_scale;
        if (!(sigma > 0.0f)) return 0.0f;
        if constexpr (WRITE) {
#pragma unroll
            for (int k = 0; k < 8; k++) vx_load_point<NC>(cp[k], v[k]);
            vx_cell_blend(&c, vp, NC, r->raw);
            if constexpr (R) { /* as render.cu's fused op */
                float f[6];
                vx_store_probes<NC>(r->store, r->cache, m, s->p, f);
                r->g = vx_mlp_normal(m, f);
            }
        }
        return sigma;
    }
    static __device__ __forceinline__ void visit(void *op, const vx_composite *, const vx_sample *, const float *,
                                                 float wk) {
        vx_mlpd_op *r = (vx_mlpd_op *)op;
        if constexpr (!WRITE) {
            r->n++;
        } else if (r->n < r->cap) {
            unsigned long long s = r->at + (unsigned long long)r->n++;
            float x[VX_MLP_IN + 1];
            if constexpr (R) vx_mlp_input_dir(r->raw, r->dir, r->g, r->m->dec.shade, x);
            else vx_mlp_input(r->raw, r->dir, x);
            x[VX_MLP_IN] = 0.0f;
            float4 *dst = (float4 *)(r->x + s * 32);
#pragma unroll
            for (int q = 0; q < 8; q++) dst[q] = make_float4(x[4 * q], x[4 * q + 1], x[4 * q + 2], x[4 * q + 3]);
            r->w[s] = wk;
        }
    }
};

/* Count pass: the fused kernel's outputs with colour 0 (so rgb holds T bg), each pixel's
 * composited samples and their place: a warp reserves its pixels' samples with one atomic
 * (counters[2] ends up the frame's total). */
template <class S, bool P>
__global__ void __launch_bounds__(128)
vx_mlpd_count_kernel(const __grid_constant__ vx_march_params m, const __grid_constant__ vx_camera cam, const S store,
                     const unsigned char *__restrict__ occ, float *__restrict__ out_rgb, float *__restrict__ out_alpha,
                     float *__restrict__ out_depth, unsigned long long *__restrict__ counters,
                     unsigned long long *__restrict__ px_start, int *__restrict__ px_n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    int inside = j < cam.width && i < cam.height;
    unsigned samples = 0, hit = 0, kept = 0;
    size_t px = (size_t)i * cam.width + j;
    if (inside) {
        vx_vec3 o, d;
        vx_camera_ray(&cam, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
        vx_mlpd_op<S, false, P> op;
        op.m = &m; op.store = store; op.cache.key = ~0u; op.cache.slot = 0; op.n = 0;
        float u = vx_pixel_jitter(m.jitter_seed, (unsigned long long)i * cam.width + j);
        vx_ray_result r = vx_march_run(&m, occ, o, d, u, &op);
        samples = (unsigned)r.samples;
        hit = r.samples > 0 || r.trans < 1.0f;
        kept = (unsigned)op.n;
        for (int c = 0; c < 3; c++) out_rgb[px * 3 + c] = r.rgb[c];
        out_alpha[px] = 1.0f - r.trans;
        if (out_depth) out_depth[px] = r.depth;
    }
    unsigned lane = (threadIdx.y * blockDim.x + threadIdx.x) & 31, incl = kept;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= (unsigned)o) incl += y;
    }
    unsigned long long base = 0;
    if (lane == 31 && incl) base = atomicAdd(counters + 2, (unsigned long long)incl);
    base = __shfl_sync(0xffffffffu, base, 31);
    if (inside) {
        px_start[px] = base + (incl - kept);
        px_n[px] = (int)kept;
    }
    vx_frame_counters_add(counters, samples, hit);
}

/* Write pass: the same march (same jitter), keeping each composited sample's network
 * input and weight at the pixel's place; it never writes more than the count pass
 * reserved and says how many it wrote. R: the network's input reads the density gradient. */
template <class S, bool P, bool R = false>
__global__ void __launch_bounds__(128)
vx_mlpd_write_kernel(const __grid_constant__ vx_march_params m, const __grid_constant__ vx_camera cam, const S store,
                     const unsigned char *__restrict__ occ, const unsigned long long *__restrict__ px_start,
                     int *__restrict__ px_n, float *__restrict__ x, float *__restrict__ w) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (j >= cam.width || i >= cam.height) return;
    size_t px = (size_t)i * cam.width + j;
    int cap = px_n[px];
    if (!cap) return;
    vx_vec3 o, d;
    vx_camera_ray(&cam, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
    vx_mlpd_op<S, true, P, R> op;
    op.m = &m; op.store = store; op.cache.key = ~0u; op.cache.slot = 0; op.dir = d;
    op.n = 0; op.cap = cap; op.at = px_start[px]; op.x = x; op.w = w;
    float u = vx_pixel_jitter(m.jitter_seed, (unsigned long long)i * cam.width + j);
    vx_march_run(&m, occ, o, d, u, &op);
    if (op.n < cap) px_n[px] = op.n;
}

/* The network over the frame's kept samples (TC: its hidden layers on the tensor cores in
 * TF32, render --mlp-tensor-cores; sm_80 and up, vx_volume_set_mlp_tc_cuda checks). */
template <int LAYERS, bool TC = false>
__global__ void __launch_bounds__(VX_MLPB_THREADS)
vx_mlpd_network_kernel(const float *__restrict__ wts, const float *__restrict__ x, float4 *rgb, unsigned long long S) {
    vx_mlpt_forward<LAYERS, TC>(wts, x, rgb, S);
}

/* Each pixel: its samples' weighted colours in march order, added to T bg. */
__global__ void __launch_bounds__(256)
vx_mlpd_resolve_kernel(size_t npix, const unsigned long long *__restrict__ px_start, const int *__restrict__ px_n,
                       const float *__restrict__ w, const float4 *__restrict__ rgb, float *__restrict__ out_rgb) {
    size_t px = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (px >= npix) return;
    int n = px_n[px];
    if (!n) return;
    unsigned long long s0 = px_start[px];
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f;
    for (int k = 0; k < n; k++) {
        float wk = w[s0 + k];
        float4 q = rgb[s0 + k];
        a0 += wk * q.x;
        a1 += wk * q.y;
        a2 += wk * q.z;
    }
    out_rgb[px * 3] = a0 + out_rgb[px * 3];
    out_rgb[px * 3 + 1] = a1 + out_rgb[px * 3 + 1];
    out_rgb[px * 3 + 2] = a2 + out_rgb[px * 3 + 2];
}

#endif
