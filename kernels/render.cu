/* render.cu - the fused renderer: one thread per pixel generates its ray, clips it to
 * the box, marches segments, interpolates, decodes and composites in registers, the
 * same march as the CPU reference: vx_march_run (march.h) with this file's op.
 * backend.c reaches it through cuda_render.h (vx_volume_upload_cuda, vx_render_cuda).
 *
 * Speed: kernels are instantiated per storage (dense, or sparse bricks in the apron layout of
 * sparse_apron.h; float32 or float16) and decoder (rgba, sh degree 0..3, scalar, mlp with 1
 * or 2 hidden layers, its weights in constant memory), so the
 * channel count is a constant and the raw channels live in registers; empty space is crossed one occupancy cell at a time (the
 * same cell-exit jump as march.h, i.e. a DDA over the occupancy grid); rays stop when
 * T < stop. Pixels are 8x8 tiles so neighbouring rays share cache lines. */
#include <cuda_fp16.h>
#include <string.h>

#include "common.cuh"
#include "cuda_device.h"
#include "cuda_render.h"
#include "load.cuh"
#include "render_mlpd.cuh"
#include "render_store.cuh"
#include "sparse_apron.h"

struct vx_cuda_volume {
    vx_march_params mp;
    void *d_grid;             /* dense: (z,y,x,c); sparse: apron blocks, the background block last */
    int half;                 /* float16 storage */
    int sparse;               /* apron blocks: d_table + d_grid */
    int32_t *d_table;         /* block slot of every brick (sparse_apron.h) */
    int bn[3];
    size_t nblocks;           /* apron blocks with data (the pool holds one more) */
    int apron_nc;             /* channels an apron voxel keeps: the decoder's */
    size_t grid_bytes;        /* device memory of the grid's storage (values and table) */
    unsigned char *d_occ;     /* occupancy cells, NULL when skipping is off */
    size_t occ_count;
    float *d_rgb, *d_alpha, *d_depth;
    size_t npix_cap;
    unsigned long long *d_counters; /* samples, rays that sampled the volume; deferred mlp: samples kept */
    vx_cuda_timer *timer;
    /* the mlp decoder's deferred colour (vx_volume_set_mlp_deferred_cuda): each pixel's first
     * kept sample and count, the samples' network inputs, weights and colours, the weights */
    int mlp_deferred;
    unsigned long long *d_px_start;
    int *d_px_n;
    size_t px_cap;
    float *d_mx, *d_mw;
    float4 *d_mrgb;
    unsigned long long ms_cap;
    float *d_mlp;
    unsigned d_mlp_gen;
    int mlp_tc;               /* the network's hidden layers on the tensor cores (vx_volume_set_mlp_tc_cuda) */
    int mlp_blocks[2][2];     /* persistent blocks of the network kernel [layers - 1][tc] (0: not set up) */
    float h_mlp[VX_MLP_MAX_WEIGHTS]; /* mlp decoder: the packed weights, copied at upload/update */
    unsigned mlp_gen;         /* which copy: constant memory is reloaded when another is there */
};

/* The mlp decoder's weights: every thread of a warp reads the same weight at the same time,
 * so constant memory serves them as operands of the FMAs themselves (no load instruction,
 * no shared memory taken from occupancy). One set per process: a launch reloads it when
 * the last one came from another volume or an older copy (25 KB, microseconds). */
__constant__ float vx_c_mlp[VX_MLP_MAX_WEIGHTS];
static unsigned vx__mlp_loaded, vx__mlp_next = 1;

/* Copy the decoder's weights into the volume (host side) under a new generation. */
static int vx__mlp_take(vx_cuda_volume *cv, const vx_decoder *d) {
    if (d->type != VX_DEC_MLP) return 0;
    int layers = vx_decoder_mlp_layers(d);
    const float *w = vx_decoder_mlp_weights(d);
    if (!w || layers < 1 || layers > 2)
        return vx_error("cuda render: the mlp decoder has no weights or %d hidden layers (1 or 2)", layers);
    memcpy(cv->h_mlp, w, (size_t)vx_mlp_weight_count(layers) * sizeof(float));
    cv->mlp_gen = vx__mlp_next++;
    return 0;
}

static int vx__mlp_bind(const vx_cuda_volume *cv) {
    if (cv->mp.dec.type != VX_DEC_MLP || vx__mlp_loaded == cv->mlp_gen) return 0;
    VX_CUDA_CHECK(cudaMemcpyToSymbol(vx_c_mlp, cv->h_mlp, (size_t)vx_mlp_weight_count(vx_decoder_mlp_layers(&cv->mp.dec)) * sizeof(float)));
    vx__mlp_loaded = cv->mlp_gen;
    return 0;
}

// ----------------------------------------------------------------------------------------
// per-sample pieces, specialised

/* The mlp decoder's DEG is its hidden layers (1, 2), plus this flag when the network's input
 * reads the density gradient (vx_decoder_mlp_reflect: the reflected direction, alone or
 * beside the view direction): kernels of their own, so the view direction's kernels are
 * the ones timed before. */
#define VX_MLP_DEG_REFLECT 4

/* The renderer's op for vx_march_run: march.h's trilinear cell and blend with NC a
 * constant (the channels stay in registers), and decode.h's decoder chosen at compile time.
 * vx_march_run<vx_render_op> calls sample() and visit() directly (march.h). */
template <class S, int DEC, int DEG, bool P> struct vx_render_op {
    static constexpr bool pieces = P; /* false: whole frames, no ownership test (march.h) */
    const vx_march_params *m;
    S store;
    vx_brick_cache cache; /* sparse storage: the ray's current block */

    static __device__ __forceinline__ float sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb) {
        constexpr int NC = vx_dec_traits<DEC, DEG>::nc;
        vx_render_op *r = (vx_render_op *)op;
        const vx_march_params *m = r->m;
        vx_cell c;
        float v[8][NC], raw[NC];
        const typename S::elem *cp[8];
        vx_trilinear_cell(m->nx, m->ny, m->nz, s->p, &c);
        r->store.template corners<NC>(c, cp, r->cache);
        const float *vp[8] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
        if constexpr ((DEC == VX_DEC_SH || DEC == VX_DEC_MLP) && NC > 4) {
            /* density first: a sample without density (a third to two thirds of those in
             * occupied cells) reads channel 0 of its corners, not all NC. The same blend
             * and activation as vx_decode_sh's, so a sample it passes decodes as before. */
#pragma unroll
            for (int k = 0; k < 8; k++) vx_load_point<1>(cp[k], v[k]);
            vx_cell_blend(&c, vp, 1, raw);
            if (!(vx_density_activate(m->dec.density_act, raw[0]) * m->dec.density_scale > 0.0f)) return 0.0f;
        }
#pragma unroll
        for (int k = 0; k < 8; k++) vx_load_point<NC>(cp[k], v[k]);
        vx_cell_blend(&c, vp, NC, raw);
        if constexpr (DEC == VX_DEC_SCALAR) {
            float sigma = vx_decode_scalar(&m->dec, raw, rgb);
            if (m->dec.shade && sigma > 0.0f) { /* march.h's gradient probes, channel 0 (vx_store_probes' loop, kept
                                                 * inline here: with the helper the timed kernels' code changes) */
                float f[6];
                for (int q = 0; q < 6; q++) {
                    vx_trilinear_cell(m->nx, m->ny, m->nz, vx_gradient_probe(s->p, q), &c);
                    r->store.template corners<NC>(c, cp, r->cache);
#pragma unroll
                    for (int k = 0; k < 8; k++) vx_load_point<1>(cp[k], v[k]);
                    vx_cell_blend(&c, vp, 1, f + q);
                }
                vx_shade(m, f, d, rgb);
            }
            return sigma;
        } else if constexpr (DEC == VX_DEC_SH) {
            return vx_decode_sh(&m->dec, DEG, raw, d, rgb);
        } else if constexpr (DEC == VX_DEC_MLP) { /* DEG: hidden layers, + VX_MLP_DEG_REFLECT */
            if constexpr ((DEG & VX_MLP_DEG_REFLECT) != 0) { /* sigma > 0 here: the density-first read passed */
                float f[6];
                vx_store_probes<NC>(r->store, r->cache, m, s->p, f);
                return vx_decode_mlp_dir(&m->dec, vx_c_mlp, DEG & ~VX_MLP_DEG_REFLECT, raw, d, vx_mlp_normal(m, f), rgb);
            }
            return vx_decode_mlp(&m->dec, vx_c_mlp, DEG & ~VX_MLP_DEG_REFLECT, raw, d, rgb);
        } else {
            return vx_decode_rgba(&m->dec, raw, rgb);
        }
    }
    static __device__ __forceinline__ void visit(void *, const vx_composite *, const vx_sample *, const float *,
                                                 float) {}
};

// ----------------------------------------------------------------------------------------
// the fused kernel: one thread per pixel runs vx_march_run with the renderer's op

/* Blocks of 128 threads an SM that ptxas must fit (0: its own choice, which every kernel
 * but one gets; forcing more spills them). Sparse float32 SH degree 2 (sh-glass, the fitted
 * scenes) asks for 5: left alone ptxas gives it 104 registers (4 blocks, 16 warps an SM)
 * where dense gets 90 (5 blocks); at 5 it takes 96 and reloads two loop constants from the
 * stack (8 bytes) per sample. */
template <class S, int DEC, int DEG> struct vx_min_blocks { static constexpr int n = 0; };
template <> struct vx_min_blocks<vx_apron_store<float>, VX_DEC_SH, 2> { static constexpr int n = 5; };

template <class S, int DEC, int DEG, bool P>
__global__ void __launch_bounds__(128, vx_min_blocks<S, DEC, DEG>::n)
vx_render_kernel(const __grid_constant__ vx_march_params m, const __grid_constant__ vx_camera cam, const S store,
                 const unsigned char *__restrict__ occ, float *__restrict__ out_rgb,
                 float *__restrict__ out_alpha, float *__restrict__ out_depth,
                 unsigned long long *__restrict__ counters) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    int inside = j < cam.width && i < cam.height;
    int samples = 0, hit = 0;
    if (inside) {
        vx_vec3 o, d;
        vx_camera_ray(&cam, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
        vx_render_op<S, DEC, DEG, P> op = {&m, store, {~0u, 0}};
        float u = vx_pixel_jitter(m.jitter_seed, (unsigned long long)i * cam.width + j);
        vx_ray_result r = vx_march_run(&m, occ, o, d, u, &op);
        samples = r.samples;
        hit = r.samples > 0 || r.trans < 1.0f; /* as render_cpu.c counts it */
        size_t px = (size_t)i * cam.width + j;
        for (int c = 0; c < 3; c++) out_rgb[px * 3 + c] = r.rgb[c];
        out_alpha[px] = 1.0f - r.trans;
        if (out_depth) out_depth[px] = r.depth;
    }
    vx_frame_counters_add(counters, (unsigned)samples, (unsigned)hit);
}

// ----------------------------------------------------------------------------------------
// launch

/* 8 x 8 pixels a block (a warp is an 8 x 4 tile): measured best of 16x8, 8x8, 8x16,
 * 32x4, 4x8 and 32x1 on shell, cloud and sh-glass (docs/BENCHMARKS.md). */
#define VX_BLOCK_X 8
#define VX_BLOCK_Y 8

/* The deferred mlp colour's device arrays: per pixel (grow only), and per kept sample
 * (grown to the frame's count with a quarter to spare), and the weights' global copy
 * (the network kernel reads them into shared memory; constant memory is for the fused
 * kernel's uniform reads). */
static int vx__mlpd_pixels(vx_cuda_volume *cv, size_t npix) {
    if (npix <= cv->px_cap) return 0;
    vx_cuda_free(cv->d_px_start);
    vx_cuda_free(cv->d_px_n);
    cv->d_px_start = NULL;
    cv->d_px_n = NULL;
    cv->px_cap = 0;
    if (vx_cuda_alloc((void **)&cv->d_px_start, npix * sizeof(unsigned long long), "deferred mlp: pixel starts") ||
        vx_cuda_alloc((void **)&cv->d_px_n, npix * sizeof(int), "deferred mlp: pixel counts"))
        return -1;
    cv->px_cap = npix;
    return 0;
}
static int vx__mlpd_samples(vx_cuda_volume *cv, unsigned long long S) {
    if (S <= cv->ms_cap) return 0;
    vx_cuda_free(cv->d_mx);
    vx_cuda_free(cv->d_mw);
    vx_cuda_free(cv->d_mrgb);
    cv->d_mx = cv->d_mw = NULL;
    cv->d_mrgb = NULL;
    cv->ms_cap = 0;
    unsigned long long cap = S + S / 4;
    if (vx_cuda_alloc((void **)&cv->d_mx, cap * 32 * sizeof(float), "deferred mlp: sample inputs") ||
        vx_cuda_alloc((void **)&cv->d_mw, cap * sizeof(float), "deferred mlp: sample weights") ||
        vx_cuda_alloc((void **)&cv->d_mrgb, cap * sizeof(float4), "deferred mlp: sample colours"))
        return -1;
    cv->ms_cap = cap;
    return 0;
}

/* The network kernel of 1 or 2 hidden layers, FP32 or on the tensor cores, and how many of
 * its blocks an SM holds with the dynamic shared memory it asks for. */
typedef void (*vx__mlpd_network_fn)(const float *, const float *, float4 *, unsigned long long);
static vx__mlpd_network_fn vx__mlpd_network_pick(int layers, int tc) {
    if (layers == 1) return tc ? vx_mlpd_network_kernel<1, true> : vx_mlpd_network_kernel<1, false>;
    return tc ? vx_mlpd_network_kernel<2, true> : vx_mlpd_network_kernel<2, false>;
}
static int vx__mlpd_network_blocks(vx__mlpd_network_fn fn, int *k) {
    VX_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)VX_MLPB_SMEM));
    VX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(k, fn, VX_MLPB_THREADS, VX_MLPB_SMEM));
    return 0;
}
static int vx__mlpd_weights(vx_cuda_volume *cv, int layers) {
    if (!cv->d_mlp && vx_cuda_alloc((void **)&cv->d_mlp, VX_MLP_MAX_WEIGHTS * sizeof(float), "deferred mlp: weights"))
        return -1;
    if (cv->d_mlp_gen != cv->mlp_gen) {
        if (vx_cuda_upload(cv->d_mlp, cv->h_mlp, (size_t)vx_mlp_weight_count(layers) * sizeof(float))) return -1;
        cv->d_mlp_gen = cv->mlp_gen;
    }
    int tc = cv->mlp_tc;
    if (!cv->mlp_blocks[layers - 1][tc]) {
        int dev = 0, sms = 0, k = 0;
        VX_CUDA_CHECK(cudaGetDevice(&dev));
        VX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        if (vx__mlpd_network_blocks(vx__mlpd_network_pick(layers, tc), &k)) return -1;
        if (k < 1) return vx_error("cuda render: the mlp network kernel does not fit an SM (%zu B of shared memory)", VX_MLPB_SMEM);
        cv->mlp_blocks[layers - 1][tc] = k * sms;
    }
    return 0;
}

/* The deferred mlp colour: count, (grow), write, network, resolve. One host wait, for the
 * frame's sample count. */
template <class S>
static int vx__launch_mlpd(vx_cuda_volume *cv, const S &store, const vx_camera *c, float *depth) {
    const vx_march_params &m = cv->mp;
    int layers = vx_decoder_mlp_layers(&m.dec);
    size_t npix = (size_t)c->width * c->height;
    if (layers < 1 || layers > 2) return vx_error("cuda render: mlp decoder with %d hidden layers (1 or 2)", layers);
    if (vx__mlpd_pixels(cv, npix) || vx__mlpd_weights(cv, layers)) return -1;
    dim3 threads(VX_BLOCK_X, VX_BLOCK_Y);
    dim3 blocks(vx_ceil_div(c->width, VX_BLOCK_X), vx_ceil_div(c->height, VX_BLOCK_Y));
    if (m.own)
        vx_mlpd_count_kernel<S, true><<<blocks, threads>>>(m, *c, store, cv->d_occ, cv->d_rgb, cv->d_alpha, depth,
                                                          cv->d_counters, cv->d_px_start, cv->d_px_n);
    else
        vx_mlpd_count_kernel<S, false><<<blocks, threads>>>(m, *c, store, cv->d_occ, cv->d_rgb, cv->d_alpha, depth,
                                                           cv->d_counters, cv->d_px_start, cv->d_px_n);
    VX_LAUNCH_CHECK("vx_mlpd_count_kernel");
    unsigned long long kept = 0;
    if (vx_cuda_download(&kept, cv->d_counters + 2, sizeof kept)) return -1;
    if (!kept) return 0;
    if (vx__mlpd_samples(cv, kept)) return -1;
#define VX__WRITE(P, R)                                                                                        \
    vx_mlpd_write_kernel<S, P, R><<<blocks, threads>>>(m, *c, store, cv->d_occ, cv->d_px_start, cv->d_px_n, cv->d_mx, \
                                                       cv->d_mw)
    bool refl = vx_decoder_mlp_reflect(&m.dec);
    if (m.own) {
        if (refl) VX__WRITE(true, true);
        else VX__WRITE(true, false);
    } else {
        if (refl) VX__WRITE(false, true);
        else VX__WRITE(false, false);
    }
#undef VX__WRITE
    VX_LAUNCH_CHECK("vx_mlpd_write_kernel");
    unsigned long long tiles = (kept + VX_MLPB_TILE - 1) / VX_MLPB_TILE;
    int most = cv->mlp_blocks[layers - 1][cv->mlp_tc];
    unsigned nb = (unsigned)(tiles < (unsigned long long)most ? tiles : (unsigned long long)most);
    vx__mlpd_network_pick(layers, cv->mlp_tc)<<<nb, VX_MLPB_THREADS, VX_MLPB_SMEM>>>(cv->d_mlp, cv->d_mx, cv->d_mrgb,
                                                                                   kept);
    VX_LAUNCH_CHECK("vx_mlpd_network_kernel");
    vx_mlpd_resolve_kernel<<<(unsigned)vx_ceil_div(npix, 256), 256>>>(npix, cv->d_px_start, cv->d_px_n, cv->d_mw,
                                                                       cv->d_mrgb, cv->d_rgb);
    VX_LAUNCH_CHECK("vx_mlpd_resolve_kernel");
    return 0;
}

template <class S>
static int vx__launch_render(vx_cuda_volume *cv, const S &store, const vx_camera *c, float *depth) {
    dim3 threads(VX_BLOCK_X, VX_BLOCK_Y);
    dim3 blocks(vx_ceil_div(c->width, VX_BLOCK_X), vx_ceil_div(c->height, VX_BLOCK_Y));
    const vx_march_params &m = cv->mp;
/* a sort-last piece (m.own) takes the kernel with the ownership test, a whole frame the one without */
#define VX_GO(DEC, DEG)                                                                                        \
    do {                                                                                                       \
        if (m.own)                                                                                             \
            vx_render_kernel<S, DEC, DEG, true><<<blocks, threads>>>(m, *c, store, cv->d_occ, cv->d_rgb,       \
                                                                     cv->d_alpha, depth, cv->d_counters);      \
        else                                                                                                   \
            vx_render_kernel<S, DEC, DEG, false><<<blocks, threads>>>(m, *c, store, cv->d_occ, cv->d_rgb,      \
                                                                      cv->d_alpha, depth, cv->d_counters);     \
    } while (0)
    switch (m.dec.type) {
    case VX_DEC_RGBA: VX_GO(VX_DEC_RGBA, 0); break;
    case VX_DEC_SCALAR: VX_GO(VX_DEC_SCALAR, 0); break;
    case VX_DEC_SH:
        switch (m.dec.sh_degree) {
        case 0: VX_GO(VX_DEC_SH, 0); break;
        case 1: VX_GO(VX_DEC_SH, 1); break;
        case 2: VX_GO(VX_DEC_SH, 2); break;
        case 3: VX_GO(VX_DEC_SH, 3); break;
        default: return vx_error("cuda render: sh degree %d is not in 0..3", m.dec.sh_degree);
        }
        break;
    case VX_DEC_MLP:
        if (cv->mlp_deferred) return vx__launch_mlpd(cv, store, c, depth);
        if (vx__mlp_bind(cv)) return -1;
        if (vx_decoder_mlp_reflect(&m.dec)) {
            if (vx_decoder_mlp_layers(&m.dec) == 1) VX_GO(VX_DEC_MLP, 1 | VX_MLP_DEG_REFLECT);
            else if (vx_decoder_mlp_layers(&m.dec) == 2) VX_GO(VX_DEC_MLP, 2 | VX_MLP_DEG_REFLECT);
            else return vx_error("cuda render: mlp decoder with %d hidden layers (1 or 2)", vx_decoder_mlp_layers(&m.dec));
        } else if (vx_decoder_mlp_layers(&m.dec) == 1) VX_GO(VX_DEC_MLP, 1);
        else if (vx_decoder_mlp_layers(&m.dec) == 2) VX_GO(VX_DEC_MLP, 2);
        else return vx_error("cuda render: mlp decoder with %d hidden layers (1 or 2)", vx_decoder_mlp_layers(&m.dec));
        break;
    default: return vx_error("cuda render: unknown decoder type %d", m.dec.type);
    }
#undef VX_GO
    VX_LAUNCH_CHECK("vx_render_kernel");
    return 0;
}

/* The store of the uploaded grid, typed. */
template <typename T> static int vx__launch_typed(vx_cuda_volume *cv, const vx_camera *c, float *depth) {
    const vx_march_params &m = cv->mp;
    if (cv->sparse) {
        if (vx_decoder_channels(&m.dec) != cv->apron_nc)
            return vx_error("cuda render: the decoder reads %d channels, the device's bricks hold %d (upload again)",
                            vx_decoder_channels(&m.dec), cv->apron_nc);
        vx_apron_store<T> st = {cv->d_table, (const T *)cv->d_grid, {cv->bn[0], cv->bn[1], cv->bn[2]}};
        return vx__launch_render(cv, st, c, depth);
    }
    size_t sy = (size_t)m.nx * m.nc;
    vx_dense_store<T> st = {(const T *)cv->d_grid, sy, sy * m.ny, (size_t)m.nc};
    return vx__launch_render(cv, st, c, depth);
}

/* Check that the march parameters fit the uploaded grid and the specialised kernels. */
static int vx__check_params(const vx_march_params *mp, int nx, int ny, int nz, int nc) {
    if (mp->nx != nx || mp->ny != ny || mp->nz != nz || mp->nc != nc)
        return vx_error("cuda render: march parameters (%d x %d x %d x %d) do not match the grid "
                        "(%d x %d x %d x %d)", mp->nx, mp->ny, mp->nz, mp->nc, nx, ny, nz, nc);
    int need = vx_decoder_channels(&mp->dec);
    if (mp->dec.type == VX_DEC_SH && (mp->dec.sh_degree < 0 || mp->dec.sh_degree > 3))
        return vx_error("cuda render: sh degree %d is not in 0..3", mp->dec.sh_degree);
    if (mp->dec.type == VX_DEC_MLP && (vx_decoder_mlp_layers(&mp->dec) < 1 || vx_decoder_mlp_layers(&mp->dec) > 2))
        return vx_error("cuda render: mlp decoder with %d hidden layers (1 or 2)", vx_decoder_mlp_layers(&mp->dec));
    if (need > nc) return vx_error("cuda render: the decoder needs %d channels, the grid has %d", need, nc);
    if (need % 4 == 0 && nc % 4 != 0)
        return vx_error("cuda render: %d channels with a %d-channel decoder is not supported "
                        "(channel stride must be a multiple of 4)", nc, need);
    if (!(mp->dt > 0.0f)) return vx_error("cuda render: step %g is not positive", mp->dt);
    if (mp->dec.type == VX_DEC_SCALAR && (mp->dec.tf_n < 2 || mp->dec.tf_n > VX_TF_MAX))
        return vx_error("cuda render: transfer function has %d points (2..%d)", mp->dec.tf_n, VX_TF_MAX);
    return 0;
}

/* (Re)build the device occupancy grid: on the device from a dense grid, or, for sparse
 * bricks, copied from the host grid volume.c built (its sparse path reads an absent
 * brick's background once, so it stays cheap at 4096^3). */
static int vx__occ_update(vx_cuda_volume *cv, const vx_volume *v) {
    const vx_march_params *mp = &cv->mp;
    if (mp->occ_b <= 0) {
        vx_cuda_free(cv->d_occ);
        cv->d_occ = NULL;
        cv->occ_count = 0;
        return 0;
    }
    size_t count = (size_t)mp->occ_n[0] * mp->occ_n[1] * mp->occ_n[2];
    if (count != cv->occ_count) {
        vx_cuda_free(cv->d_occ);
        cv->d_occ = NULL;
        cv->occ_count = 0;
        if (vx_cuda_alloc((void **)&cv->d_occ, count, "occupancy grid")) return -1;
        cv->occ_count = count;
    }
    if (!cv->sparse) return vx_occupancy_build_cuda(cv->d_grid, cv->half, mp, cv->d_occ);
    if (!v->occ || v->occ_count != count)
        return vx_error("cuda render: the sparse volume has no host occupancy grid to upload");
    return vx_cuda_upload(cv->d_occ, v->occ, count);
}

/* Upload n floats to element offset `at` of d_dst as float32, or as float16 through the
 * float32 staging buffer d_tmp (n floats at least). */
static int vx__upload_values(void *d_dst, size_t at, const float *h_src, size_t n, int half, float *d_tmp) {
    if (!half) return vx_cuda_upload((float *)d_dst + at, h_src, n * sizeof(float));
    return vx_cuda_upload(d_tmp, h_src, n * sizeof(float)) || vx_cuda_to_half(d_tmp, (__half *)d_dst + at, n) ? -1 : 0;
}

/* Staging for float16 uploads of up to n floats (none for float32). */
static int vx__staging(float **d_tmp, size_t n, int half) {
    *d_tmp = NULL;
    return half ? vx_cuda_alloc((void **)d_tmp, n * sizeof(float), "float16 upload buffer") : 0;
}

/* A sparse grid as apron blocks (sparse_apron.h) of the decoder's channels: the block table,
 * then the blocks, built on the host a chunk at a time (64 MiB of float32) and streamed up,
 * so the device holds only the blocks and the host one chunk more than the grid. */
static int vx__upload_apron(vx_cuda_volume *cv, const vx_grid *g) {
    const vx_sparse *sp = g->sparse;
    int nc = vx_decoder_channels(&cv->mp.dec);
    size_t es = cv->half ? 2 : 4, bsize = (size_t)VX_APRON_VOXELS * nc;
    size_t ntab = (size_t)sp->bn[0] * sp->bn[1] * sp->bn[2];
    if (ntab >= ((size_t)1 << 32))
        return vx_error("cuda render: a brick table of %zu entries is past the 2^32 the renderer indexes", ntab);
    vx_apron a;
    if (vx_apron_plan(sp, g->nx, g->ny, g->nz, nc, &a, "sparse grid for the device")) return -1;
    cv->sparse = 1;
    cv->apron_nc = nc;
    memcpy(cv->bn, sp->bn, sizeof cv->bn);
    cv->nblocks = a.nblocks;
    size_t nall = a.nblocks + 1;
    size_t chunk = ((size_t)64 << 20) / (bsize * sizeof(float));
    if (chunk < 1) chunk = 1;
    if (chunk > nall) chunk = nall;
    cv->grid_bytes = ntab * sizeof(int32_t) + nall * bsize * es;
    float *h_buf = (float *)vx_malloc(chunk * bsize * sizeof(float), "apron blocks for the device"), *d_tmp = NULL;
    int rc = !h_buf || vx_cuda_alloc((void **)&cv->d_table, ntab * sizeof(int32_t), "block table on the device") ||
             vx_cuda_upload(cv->d_table, a.table, ntab * sizeof(int32_t)) ||
             vx_cuda_alloc(&cv->d_grid, nall * bsize * es, "apron blocks on the device") ||
             vx__staging(&d_tmp, chunk * bsize, cv->half);
    for (size_t first = 0; !rc && first < nall; first += chunk) {
        size_t n = nall - first < chunk ? nall - first : chunk;
        vx_apron_fill_cpu(sp, &a, first, n, h_buf);
        rc = vx__upload_values(cv->d_grid, first * bsize, h_buf, n * bsize, cv->half, d_tmp);
    }
    rc = rc || vx_cuda_sync();
    vx_cuda_free(d_tmp);
    free(h_buf);
    vx_apron_free(&a);
    return rc ? -1 : 0;
}

/* The grid's storage on the device: dense values, or the apron blocks of a sparse grid. */
static int vx__upload_grid(vx_cuda_volume *cv, const vx_grid *g) {
    if (g->sparse) return vx__upload_apron(cv, g);
    size_t count = vx_grid_count(g), es = cv->half ? 2 : 4;
    cv->grid_bytes = count * es;
    float *d_tmp = NULL;
    int rc = vx_cuda_alloc(&cv->d_grid, count * es, "grid on the device") || vx__staging(&d_tmp, count, cv->half) ||
             vx__upload_values(cv->d_grid, 0, g->data, count, cv->half, d_tmp) || vx_cuda_sync();
    vx_cuda_free(d_tmp);
    return rc ? -1 : 0;
}

extern "C" int vx_volume_upload_cuda(vx_cuda_volume **out, const vx_volume *v, const vx_grid *g, int half) {
    *out = NULL;
    if (vx__check_params(&v->mp, g->nx, g->ny, g->nz, g->nc)) return -1;
    if (g->sparse && g->sparse->nc != g->nc)
        return vx_error("cuda render: sparse grid has %d channels, the grid says %d", g->sparse->nc, g->nc);
    vx_cuda_volume *cv = (vx_cuda_volume *)vx_calloc(1, sizeof *cv, "CUDA volume");
    if (!cv) return -1;
    cv->mp = v->mp;
    if (cv->mp.dec.type == VX_DEC_MLP) /* the kernels read vx_c_mlp; the host pointer may not outlive the scene */
        vx_decoder_set_mlp(&cv->mp.dec, vx_decoder_mlp_layers(&cv->mp.dec), NULL);
    cv->half = half;
    cv->mlp_deferred = 1; /* 262 against 91 frames/s on a fitted mic scene (docs/BENCHMARKS.md) */
    if (vx__mlp_take(cv, &v->mp.dec) || vx__upload_grid(cv, g) ||
        vx_cuda_alloc((void **)&cv->d_counters, 3 * sizeof(unsigned long long), "frame counters") ||
        vx_cuda_timer_create(&cv->timer) || vx__occ_update(cv, v) || vx_cuda_sync()) {
        vx_volume_free_cuda(cv);
        return -1;
    }
    *out = cv;
    return 0;
}

extern "C" int vx_volume_update_cuda(vx_cuda_volume *cv, const vx_volume *v) {
    const vx_march_params *mp = &v->mp;
    if (vx__check_params(mp, cv->mp.nx, cv->mp.ny, cv->mp.nz, cv->mp.nc)) return -1;
    vx_decoder was = cv->mp.dec;
    if (was.type == VX_DEC_MLP) /* the volume keeps its own copy of the weights, not the pointer */
        vx_decoder_set_mlp(&was, vx_decoder_mlp_layers(&was), vx_decoder_mlp_weights(&mp->dec));
    int rebuild = memcmp(&mp->dec, &was, sizeof mp->dec) || mp->occ_b != cv->mp.occ_b ||
                  memcmp(mp->occ_n, cv->mp.occ_n, sizeof mp->occ_n);
    if (vx__mlp_take(cv, &mp->dec)) return -1;
    cv->mp = *mp;
    if (cv->mp.dec.type == VX_DEC_MLP) vx_decoder_set_mlp(&cv->mp.dec, vx_decoder_mlp_layers(&cv->mp.dec), NULL);
    return rebuild ? vx__occ_update(cv, v) : 0;
}

/* Size the device frame buffers for w x h (grow only). */
static int vx__frame_buffers(vx_cuda_volume *cv, int w, int h) {
    size_t npix = (size_t)w * h;
    if (npix > cv->npix_cap) {
        vx_cuda_free(cv->d_rgb);
        vx_cuda_free(cv->d_alpha);
        vx_cuda_free(cv->d_depth);
        cv->d_rgb = cv->d_alpha = cv->d_depth = NULL;
        cv->npix_cap = 0;
        size_t cap = npix;
        if (vx_cuda_alloc((void **)&cv->d_rgb, cap * 3 * sizeof(float), "frame colour") ||
            vx_cuda_alloc((void **)&cv->d_alpha, cap * sizeof(float), "frame opacity") ||
            vx_cuda_alloc((void **)&cv->d_depth, cap * sizeof(float), "frame depth"))
            return -1;
        cv->npix_cap = cap;
    }
    return 0;
}

static int vx__render(vx_cuda_volume *cv, const vx_camera *c, int want_depth, float *ms) {
    if (c->width < 1 || c->height < 1 || c->width > 65536 || c->height > 65536)
        return vx_error("cuda render: frame size %d x %d is not valid", c->width, c->height);
    if (vx__frame_buffers(cv, c->width, c->height)) return -1;
    float *depth = want_depth ? cv->d_depth : NULL, t;
    if (vx_cuda_zero(cv->d_counters, 3 * sizeof(unsigned long long)) || vx_cuda_timer_start(cv->timer)) return -1;
    if (cv->half ? vx__launch_typed<__half>(cv, c, depth) : vx__launch_typed<float>(cv, c, depth)) return -1;
    if (vx_cuda_timer_stop(cv->timer, &t)) return -1;
    if (ms) *ms = t;
    return 0;
}

static int vx__counters(vx_cuda_volume *cv, long long *samples, long long *rays_hit) {
    unsigned long long h[2];
    if (vx_cuda_download(h, cv->d_counters, sizeof h)) return -1;
    *samples = (long long)h[0];
    *rays_hit = (long long)h[1];
    return 0;
}

extern "C" int vx_render_cuda(vx_cuda_volume *cv, const vx_camera *c, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("cuda render: frame %d x %d does not match the camera's %d x %d", f->width,
                        f->height, c->width, c->height);
    if (vx__render(cv, c, f->depth != NULL, NULL)) return -1;
    size_t npix = (size_t)c->width * c->height;
    if (vx_cuda_download(f->rgb, cv->d_rgb, npix * 3 * sizeof(float)) ||
        vx_cuda_download(f->alpha, cv->d_alpha, npix * sizeof(float)) ||
        (f->depth && vx_cuda_download(f->depth, cv->d_depth, npix * sizeof(float))))
        return -1;
    return vx__counters(cv, &f->samples, &f->rays_hit);
}

extern "C" int vx_render_device_cuda(vx_cuda_volume *cv, const vx_camera *c, int want_depth, float *ms,
                                     long long *samples, long long *rays_hit) {
    if (vx__render(cv, c, want_depth, ms)) return -1;
    return vx__counters(cv, samples, rays_hit);
}

extern "C" int vx_volume_occupancy_cuda(const vx_cuda_volume *cv, unsigned char *occ, size_t count) {
    if (count != cv->occ_count)
        return vx_error("cuda occupancy: asked for %zu cells, the device grid has %zu", count, cv->occ_count);
    return count ? vx_cuda_download(occ, cv->d_occ, count) : 0;
}

extern "C" size_t vx_volume_bytes_cuda(const vx_cuda_volume *cv) { return cv->grid_bytes; }

extern "C" void vx_volume_set_mlp_deferred_cuda(vx_cuda_volume *cv, int on) { cv->mlp_deferred = on != 0; }

extern "C" int vx_volume_set_mlp_tc_cuda(vx_cuda_volume *cv, int on) {
    /* the device is asked when the flag turns on, not at every frame */
    if (on && !cv->mlp_tc && vx_cuda_mlp_tc_resolve(1, "cuda render") < 0) return -1;
    cv->mlp_tc = on != 0;
    return 0;
}

extern "C" void vx_volume_free_cuda(vx_cuda_volume *cv) {
    if (!cv) return;
    vx_cuda_free(cv->d_grid);
    vx_cuda_free(cv->d_occ);
    vx_cuda_free(cv->d_rgb);
    vx_cuda_free(cv->d_alpha);
    vx_cuda_free(cv->d_depth);
    vx_cuda_free(cv->d_counters);
    vx_cuda_free(cv->d_table);
    vx_cuda_free(cv->d_px_start);
    vx_cuda_free(cv->d_px_n);
    vx_cuda_free(cv->d_mx);
    vx_cuda_free(cv->d_mw);
    vx_cuda_free(cv->d_mrgb);
    vx_cuda_free(cv->d_mlp);
    vx_cuda_timer_destroy(cv->timer);
    free(cv);
}

/* The device frame buffers of the last render (the viewer's interop reads them). */
extern "C" int vx_volume_frame_cuda(const vx_cuda_volume *cv, const float **d_rgb, const float **d_alpha) {
    if (!cv->d_rgb) return vx_error("cuda render: no frame has been rendered into this volume yet");
    *d_rgb = cv->d_rgb;
    *d_alpha = cv->d_alpha;
    return 0;
}
