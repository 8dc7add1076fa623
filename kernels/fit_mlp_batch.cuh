/* fit_mlp_batch.cuh - the mlp decoder's batched CUDA training step, included by fit.cu
 * after fit_mlp.cuh: the network leaves the march and runs as tiled matrix products over
 * all of a step's samples. Which samples a ray composites depends on density alone (T is
 * a product of exp(-sigma dt)), so: gather (march, keep each composited sample's network
 * input, point, sigma and dt) -> network forward (64-sample tiles) -> composite per ray
 * (colour, loss, each sample's dL/d(output) and dL/dsigma) -> network backward (dL/dinput,
 * dL/dweights summed per block) -> scatter to the grid. Same maths as fit_mlp.cuh's fused
 * kernel (the CPU's vx_fit_decode_mlp_backward), other summation order. */
#ifndef VX_FIT_MLP_BATCH_CUH
#define VX_FIT_MLP_BATCH_CUH

#include "fit_mlp.cuh"
#include "fit_mlp_arrays.cuh"
#include "mlp_tile.cuh"


/* The ray of list entry t (vx_fit_src_ray): its index r. */
__device__ __forceinline__ int vx_fit_mlpb_ray(const vx_fit_ray_src *src, const int *list, int t, vx_vec3 *o,
                                               vx_vec3 *d, const float **target) {
    int r = list ? list[t] : t;
    vx_fit_src_ray(*src, r, o, d, target);
    return r;
}

/* The gather op: sample() interpolates the density first, the features only where there
 * is density (WRITE) and returns sigma as vx_decode_mlp does; visit() counts (!WRITE) or
 * writes the sample. rgb is left 0: only T matters here, and it does not depend on it.
 * SLOT (gather version 2): the rows end at `lim`; a sample past it is counted, not
 * written, so n > lim - first says the ray did not fit its slot. */
template <bool WRITE, bool SLOT = false, bool R = false> struct vx_fit_mlpb_op {
    static constexpr bool pieces = false;
    const vx_march_params *m;
    const vx_fit_index *L;
    const float *data;
    vx_vec3 dir;          /* the ray's */
    float raw[VX_MLP_CHANNELS];
    int n;
    vx_fit_mlp_batch B;
    unsigned long long next, lim;
    vx_vec3 g;            /* R (the decoder's input reads it): the sample's density gradient; last, so
                           * the view direction's instantiations keep their layout */

    static __device__ __forceinline__ float sample(void *op, const vx_sample *smp, vx_vec3 d, float *rgb) {
        vx_fit_mlpb_op *f = (vx_fit_mlpb_op *)op;
        (void)d;
        size_t idx[8];
        float w[8];
        vx_fit_corners(f->L, smp->p, idx, w);
        float raw0 = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) raw0 += w[j] * __ldg(f->data + idx[j] * VX_MLP_CHANNELS);
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        if (!(raw0 > 0.0f)) return 0.0f;
        if constexpr (WRITE) {
#pragma unroll
            for (int c = 0; c < VX_MLP_CHANNELS; c++) f->raw[c] = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                float v[VX_MLP_CHANNELS];
                vx_fit_load<VX_MLP_CHANNELS>(f->data, idx[j], v);
#pragma unroll
                for (int c = 0; c < VX_MLP_CHANNELS; c++) f->raw[c] += w[j] * v[c];
            }
            if constexpr (R) f->g = vx_fit_normal(f->m, f->L, f->data, smp->p); /* fit_march.h's */
        }
        f->raw[0] = raw0;
        return vx_density_activate(f->m->dec.density_act, raw0) * f->m->dec.density_scale;
    }

    static __device__ __forceinline__ void visit(void *op, const vx_composite *cs, const vx_sample *smp,
                                                 const float *rgb, float wk) {
        vx_fit_mlpb_op *f = (vx_fit_mlpb_op *)op;
        (void)cs; (void)rgb; (void)wk;
        if constexpr (!WRITE) {
            f->n++;
        } else {
            if constexpr (SLOT) {
                f->n++;
                if (f->next >= f->lim) return; /* past the slot: counted only */
            }
            unsigned long long s = f->next++;
            float x[VX_MLP_IN + 1];
            if constexpr (R) vx_mlp_input_dir(f->raw, f->dir, f->g, f->m->dec.shade, x);
            else vx_mlp_input(f->raw, f->dir, x);
            x[VX_MLP_IN] = 0.0f;
            float4 *dst = (float4 *)(f->B.x + s * 32);
#pragma unroll
            for (int q = 0; q < 8; q++) dst[q] = make_float4(x[4 * q], x[4 * q + 1], x[4 * q + 2], x[4 * q + 3]);
            float sigma = vx_density_activate(f->m->dec.density_act, f->raw[0]) * f->m->dec.density_scale;
            f->B.pt[s] = make_float4(smp->p.x, smp->p.y, smp->p.z, sigma);
            f->B.dt[s] = smp->tb - smp->ta;
        }
    }
};

/* Gather for list entries [0, n): march once to count the composited samples, reserve
 * them with one atomic, march again to write them; a ray that finds the arrays full is put
 * off (deferred, ray_n -1). rec_count[0] counts reservations, rec_count[1] ends the written
 * samples. R: the rows' direction terms read the density gradient (vx_decoder_mlp_reflect). */
template <bool R>
__global__ void __launch_bounds__(128)
vx_fit_mlpb_gather_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data,
                          const unsigned char *__restrict__ occ, vx_fit_ray_src src, const int *__restrict__ list,
                          int n, vx_fit_mlp_batch B, unsigned long long cap, unsigned long long *rec_count,
                          int *deferred, unsigned *n_deferred) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    vx_vec3 o, d;
    const float *target;
    int r = vx_fit_mlpb_ray(&src, list, t, &o, &d, &target);
    vx_fit_mlpb_op<false> cnt;
    cnt.m = &mp; cnt.L = &L; cnt.data = data; cnt.dir = d; cnt.n = 0;
    vx_march_run(&mp, occ, o, d, 0.0f, &cnt);
    unsigned long long at = cnt.n ? atomicAdd(rec_count, (unsigned long long)cnt.n) : 0ull;
    if (at + cnt.n > cap) {
        deferred[atomicAdd(n_deferred, 1u)] = r;
        B.ray_n[t] = -1;
        return;
    }
    B.ray_start[t] = at;
    B.ray_n[t] = cnt.n;
    if (!cnt.n) return;
    atomicMax(rec_count + 1, at + cnt.n);
    vx_fit_mlpb_op<true, false, R> wr;
    wr.m = &mp; wr.L = &L; wr.data = data; wr.dir = d; wr.B = B; wr.next = at;
    vx_march_run(&mp, occ, o, d, 0.0f, &wr);
}

/* Gather version 2's least slot (rows a ray): a pass whose slots would be smaller runs version 1. */
#define VX_MLPB_SLOT_MIN 8ull

/* Gather version 2 (opt-in, vx_fit_set_mlpb_gather_cuda; not yet timed on a device): one
 * march instead of two. List entry t writes its composited samples into its own slot of the
 * staging arrays S (rows t * K .. t * K + K - 1, K = the staging rows / the pass's rays),
 * then reserves its count in B with one atomic, as version 1, and copies the rows there, so
 * the network kernels see the same contiguous rows. A ray past its slot or past B's capacity
 * is put off (ray_n -1): the next pass has fewer rays and so larger slots. Version 1 marches
 * every ray twice (count, then write), and its gather is the largest part of lego's batched
 * step (2.0 of 3.9 ms, docs/BENCHMARKS.md session 30); this one pays a write and a read of
 * the staging rows instead of the second march. */
template <bool R>
__global__ void __launch_bounds__(128)
vx_fit_mlpb_gather1_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data,
                           const unsigned char *__restrict__ occ, vx_fit_ray_src src, const int *__restrict__ list,
                           int n, vx_fit_mlp_batch S, unsigned long long K, vx_fit_mlp_batch B, unsigned long long cap,
                           unsigned long long *rec_count, int *deferred, unsigned *n_deferred) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    vx_vec3 o, d;
    const float *target;
    int r = vx_fit_mlpb_ray(&src, list, t, &o, &d, &target);
    unsigned long long base = (unsigned long long)t * K;
    vx_fit_mlpb_op<true, true, R> wr;
    wr.m = &mp; wr.L = &L; wr.data = data; wr.dir = d; wr.B = S; wr.next = base; wr.lim = base + K; wr.n = 0;
    vx_march_run(&mp, occ, o, d, 0.0f, &wr);
    unsigned long long cnt = (unsigned long long)wr.n;
    unsigned long long at = cnt && cnt <= K ? atomicAdd(rec_count, cnt) : 0ull;
    if (cnt > K || at + cnt > cap) {
        deferred[atomicAdd(n_deferred, 1u)] = r;
        B.ray_n[t] = -1;
        return;
    }
    B.ray_start[t] = at;
    B.ray_n[t] = (int)cnt;
    if (!cnt) return;
    atomicMax(rec_count + 1, at + cnt);
    for (unsigned long long k = 0; k < cnt; k++) {
        const float4 *src4 = (const float4 *)(S.x + (base + k) * 32);
        float4 *dst4 = (float4 *)(B.x + (at + k) * 32);
#pragma unroll
        for (int q = 0; q < 8; q++) dst4[q] = src4[q];
        B.pt[at + k] = S.pt[base + k];
        B.dt[at + k] = S.dt[base + k];
    }
}

/* The gather kernels fit.cu launches (and the emulated test): the reflected direction's
 * where the decoder reflects it, else those timed before it existed. */
typedef void (*vx_fit_mlpb_gather_fn)(vx_march_params, vx_fit_index, const float *, const unsigned char *,
                                      vx_fit_ray_src, const int *, int, vx_fit_mlp_batch, unsigned long long,
                                      unsigned long long *, int *, unsigned *);
typedef void (*vx_fit_mlpb_gather1_fn)(vx_march_params, vx_fit_index, const float *, const unsigned char *,
                                       vx_fit_ray_src, const int *, int, vx_fit_mlp_batch, unsigned long long,
                                       vx_fit_mlp_batch, unsigned long long, unsigned long long *, int *, unsigned *);
static inline vx_fit_mlpb_gather_fn vx_fit_mlpb_gather_pick(const vx_march_params *mp) {
    return vx_decoder_mlp_reflect(&mp->dec) ? vx_fit_mlpb_gather_kernel<true> : vx_fit_mlpb_gather_kernel<false>;
}
static inline vx_fit_mlpb_gather1_fn vx_fit_mlpb_gather1_pick(const vx_march_params *mp) {
    return vx_decoder_mlp_reflect(&mp->dec) ? vx_fit_mlpb_gather1_kernel<true> : vx_fit_mlpb_gather1_kernel<false>;
}

/* Network forward over samples [0, S): rgb = sigmoid(out) (mlp_tile.cuh; TC: the hidden
 * layers on the tensor cores, fit --mlp-tensor-cores). */
template <int LAYERS, bool TC = false>
__global__ void __launch_bounds__(VX_MLPB_THREADS)
vx_fit_mlpb_forward_kernel(const float *__restrict__ w, vx_fit_mlp_batch B, unsigned long long S) {
    vx_mlpt_forward<LAYERS, TC>(w, B.x, B.rgb, S);
}

/* Composite each ray of the pass from its samples in order (vx_composite_step, as the
 * march did), then per sample dL/d(output pre-activation) and dL/d(raw density) as
 * fit_mlp.cuh's visit computes them, and the sample's weight into pt.w. Loss sums per
 * block into *loss_sum. PX adds the per-point colour loss (vx_fit_px_loss, weight pw a
 * ray): 2 pw w_k (c_k - target) to each sample's dL/dc, nothing to its density. PX is a
 * template flag, not a test of pw, so the kernel without it is the one measured before the
 * term existed (the term as a runtime zero cost 16% of this kernel on the H100). REG adds
 * the density regularisers (--sparsity, --distortion; weights reg a ray) to each sample's
 * dL/dsigma as the CPU's backward visit does (vx_fit_reg_forward, vx_fit_reg_dsigma): the
 * forward loop sums them, the backward keeps their running sums. A sample's midpoint along
 * the ray comes back from its point (p = o + d tm in index space), which the batch keeps. */
template <bool PX, bool REG>
__global__ void __launch_bounds__(128)
vx_fit_mlpb_composite_kernel(vx_march_params mp, vx_fit_ray_src src, const int *__restrict__ list, int n, float scale,
                             float pw, vx_fit_reg reg, vx_fit_mlp_batch B, float *rgb_out, double *loss_sum) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float l = 0.0f;
    if (t < n && B.ray_n[t] >= 0) {
        vx_vec3 o, d;
        const float *target;
        int r = vx_fit_mlpb_ray(&src, list, t, &o, &d, &target);
        unsigned long long s0 = B.ray_start[t];
        int ns = B.ray_n[t];
        vx_composite c = {{0.0f, 0.0f, 0.0f}, 1.0f, 0.0f, 0};
        vx_sample smp;
        smp.ta = 0.0f; smp.tm = 0.0f; smp.p = vx_v3(0.0f, 0.0f, 0.0f);
        vx_fit_reg_sums sums;
        vx_vec3 oi = vx_v3(0.0f, 0.0f, 0.0f), di = oi;
        float idd = 0.0f;
        if constexpr (REG) {
            vx_fit_reg_sums_zero(&sums);
            oi = vx_affine_point(mp.w2i, o);
            di = vx_affine_dir(mp.w2i, d);
            idd = 1.0f / vx_dot(di, di);
        }
        for (int k = 0; k < ns; k++) {
            float4 q = B.rgb[s0 + k];
            float rgb[3] = {q.x, q.y, q.z};
            smp.tb = B.dt[s0 + k];
            float4 p = B.pt[s0 + k];
            float wk = vx_composite_step(&c, p.w, rgb, &smp);
            if constexpr (REG) {
                float tm = vx_dot(vx_sub(vx_v3(p.x, p.y, p.z), oi), di) * idd;
                vx_fit_reg_forward(&sums, p.w, wk, tm, smp.tb);
            }
        }
        float C[3], g[3], tg[3], bgr[3];
        vx_fit_src_background(src, mp, r, target, bgr, tg);
        for (int k = 0; k < 3; k++) C[k] = c.acc[k] + c.T * bgr[k];
        l = vx_fit_mse_backward(C, tg, scale, g);
        vx_composite c2 = {{0.0f, 0.0f, 0.0f}, 1.0f, 0.0f, 0};
        vx_fit_reg_run run;
        run.W = run.S = run.P = 0.0f;
        for (int k = 0; k < ns; k++) {
            float4 q = B.rgb[s0 + k], p = B.pt[s0 + k];
            float rgb[3] = {q.x, q.y, q.z}, dt = B.dt[s0 + k];
            smp.tb = dt;
            float wk = vx_composite_step(&c2, p.w, rgb, &smp), dsig = 0.0f, dout[3];
            for (int ch = 0; ch < 3; ch++) {
                dsig += g[ch] * (c2.T * rgb[ch] - (C[ch] - c2.acc[ch]));
                float gc = PX ? g[ch] + 2.0f * pw * (rgb[ch] - tg[ch]) : g[ch];
                dout[ch] = wk * gc * rgb[ch] * (1.0f - rgb[ch]);
            }
            float dsigma = dt * dsig;
            if constexpr (REG) {
                float tm = vx_dot(vx_sub(vx_v3(p.x, p.y, p.z), oi), di) * idd;
                dsigma += vx_fit_reg_dsigma(&reg, &sums, &run, p.w, wk, c2.T, tm, dt);
            }
            B.dout[s0 + k] = make_float4(dout[0], dout[1], dout[2], dsigma * mp.dec.density_scale);
            B.pt[s0 + k] = make_float4(p.x, p.y, p.z, wk);
        }
        if (rgb_out)
            for (int ch = 0; ch < 3; ch++) rgb_out[3 * r + ch] = C[ch];
        if (src.ray_err) src.ray_err[r] = vx_fit_ray_error(C, tg);
    }
    vx_fit_block_loss(l, loss_sum);
}

/* The composite kernel's instantiation for a step: the per-point colour loss when pw > 0,
 * the density regularisers when reg is on (fit.cu launches it; the emulator test runs the
 * same one). */
typedef void (*vx_fit_mlpb_composite_fn)(vx_march_params, vx_fit_ray_src, const int *, int, float, float, vx_fit_reg,
                                         vx_fit_mlp_batch, float *, double *);
static inline vx_fit_mlpb_composite_fn vx_fit_mlpb_composite_pick(float pw, const vx_fit_reg *reg) {
    if (vx_fit_reg_on(reg)) return pw > 0.0f ? vx_fit_mlpb_composite_kernel<true, true> : vx_fit_mlpb_composite_kernel<false, true>;
    return pw > 0.0f ? vx_fit_mlpb_composite_kernel<true, false> : vx_fit_mlpb_composite_kernel<false, false>;
}

/* Network backward over samples [0, S): recomputes the hidden layers (TC: on the tensor
 * cores, as the forward did), then the deltas, dL/dweights (each thread its share, summed
 * over the block's tiles, one atomic per weight per block at the end) and dL/d(raw)
 * (density from the composite, features from the first layer) written over the sample's x
 * row (16 floats). The deltas and sums stay in FP32 either way. */
template <int LAYERS, bool TC = false>
__global__ void __launch_bounds__(VX_MLPB_THREADS)
vx_fit_mlpb_backward_kernel(const float *__restrict__ w, vx_fit_mlp_batch B, unsigned long long S, float *wgrad) {
    VX_DYN_SHARED(float4, vx_mlpb_smem4);
    float *sm = (float *)vx_mlpb_smem4;
    const int W = VX_MLP_WIDTH, t = threadIdx.x, tx = t & 15, ty = t >> 4;
    vx_mlpt_load_weights<LAYERS>(w, sm);
    float *sx = sm + VX_MLPB_X, *h1 = sm + VX_MLPB_H1, *h2 = sm + VX_MLPB_H2, *sdo = sm + VX_MLPB_DO;
    float *hl = LAYERS == 2 ? h2 : h1;
    float *sdf = h2; /* [64][16] dL/d(raw) rows, once h2 (or d2) is no longer read */
    /* this thread's sums: dW1[4ty+a][4tx+b]; dW0[4ty+a][2tx+b] (b < 2); dW2[t/64][t%64]
     * (t < 192); b0[t] (t < 64), b1[t-64] (64 <= t < 128), b2[t-128] (128 <= t < 131).
     * Contiguous units and inputs: a sample's share is one float4 (and one float4 or
     * float2) from shared memory for 16 (8) multiply-adds. */
    float gw1[4][4], gw0[4][2], gw2 = 0.0f, gb = 0.0f;
#pragma unroll
    for (int a = 0; a < 4; a++) {
#pragma unroll
        for (int b = 0; b < 4; b++) gw1[a][b] = 0.0f;
        gw0[a][0] = gw0[a][1] = 0.0f;
    }
    /* TC: dW1 and dW0 as the tensor cores' 16x8 tiles instead, warp w holding units (rows)
     * 16 (w % 4) .. + 15 and inputs (columns) 32 (w / 4) .. + 31 of dW1, 16 (w / 4) .. + 15
     * of dW0 (vx_mma_tiles_tf32's fragments: entry e of tile j is row g + 8 (e / 2),
     * column 8 j + 2 q + e % 2) */
    const int wm0 = 16 * ((t >> 5) & 3), wn1 = 32 * (t >> 7), wn0 = 16 * (t >> 7);
    float tw1[4][4], tw0[2][4];
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) tw1[j][e] = tw0[j & 1][e] = 0.0f;
    unsigned long long tiles = (S + VX_MLPB_TILE - 1) / VX_MLPB_TILE;
    for (unsigned long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        unsigned long long s0 = tile * VX_MLPB_TILE;
        __syncthreads(); /* the weights, or the last tile's readers of sdf */
        vx_mlpt_load_x(B.x, s0, S, sx);
        if (t < VX_MLPB_TILE) {
            float4 v = s0 + t < S ? B.dout[s0 + t] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            *(float4 *)(sdo + 4 * t) = v;
        }
        __syncthreads();
        vx_mlpt_hidden<LAYERS, TC>(sm);
        /* dW2 and b2 (the last hidden layer is read before it becomes its delta) */
        if (t < 3 * W) {
            int c = t / W, o = t % W;
            for (int s = 0; s < VX_MLPB_TILE; s++) gw2 = fmaf(sdo[4 * s + c], hl[s * VX_MLPB_HS + o], gw2);
        }
        if (t >= 128 && t < 131)
            for (int s = 0; s < VX_MLPB_TILE; s++) gb += sdo[4 * s + t - 128];
        /* the last hidden layer's delta: dout . W2 where the unit is on */
        float dl[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int s = ty + 16 * i, o = tx + 16 * j;
                float gs = sdo[4 * s] * sm[VX_MLPB_W2 + o];
                gs = fmaf(sdo[4 * s + 1], sm[VX_MLPB_W2 + VX_MLPB_HS + o], gs);
                gs = fmaf(sdo[4 * s + 2], sm[VX_MLPB_W2 + 2 * VX_MLPB_HS + o], gs);
                dl[i][j] = hl[s * VX_MLPB_HS + o] > 0.0f ? gs : 0.0f;
            }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) hl[(ty + 16 * i) * VX_MLPB_HS + tx + 16 * j] = dl[i][j];
        __syncthreads();
        if (LAYERS == 2 && TC) { /* the same on the tensor cores */
            /* dW1[o][i] += sum_s d2[s][o] h1[s][i]: A(o, s) = h2[s][o], B(s, i) = h1[s][i] */
            vx_mma_tiles_tf32<4, VX_MLPB_TILE>(tw1, h2 + wm0, 1, VX_MLPB_HS, h1 + wn1, VX_MLPB_HS, 1);
            if (t >= 64 && t < 128)
                for (int s = 0; s < VX_MLPB_TILE; s++) gb += h2[s * VX_MLPB_HS + t - 64];
            /* d1[s][i] = sum_o d2[s][o] W1[o][i] where h1[s][i] is on: A(s, o) = h2[s][o], B(o, i) = W1[o][i] */
            float d1[4][4];
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) d1[j][e] = 0.0f;
            vx_mma_tiles_tf32<4, VX_MLP_WIDTH>(d1, h2 + wm0 * VX_MLPB_HS, VX_MLPB_HS, 1, sm + VX_MLPB_W1 + wn1,
                                               VX_MLPB_HS, 1);
            const int g = (t & 31) >> 2, q = t & 3;
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (!(h1[(wm0 + g + 8 * (e >> 1)) * VX_MLPB_HS + wn1 + 8 * j + 2 * q + (e & 1)] > 0.0f)) d1[j][e] = 0.0f;
            __syncthreads();
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) h1[(wm0 + g + 8 * (e >> 1)) * VX_MLPB_HS + wn1 + 8 * j + 2 * q + (e & 1)] = d1[j][e];
            __syncthreads();
        } else if (LAYERS == 2) { /* h2 holds d2: dW1, b1, then d1 = d2 . W1 where h1 is on */
            for (int s = 0; s < VX_MLPB_TILE; s++) {
                float4 d4 = *(const float4 *)(h2 + s * VX_MLPB_HS + 4 * ty), h4 = *(const float4 *)(h1 + s * VX_MLPB_HS + 4 * tx);
                float dv[4] = {d4.x, d4.y, d4.z, d4.w}, hv[4] = {h4.x, h4.y, h4.z, h4.w};
#pragma unroll
                for (int a = 0; a < 4; a++)
#pragma unroll
                    for (int b = 0; b < 4; b++) gw1[a][b] = fmaf(dv[a], hv[b], gw1[a][b]);
            }
            if (t >= 64 && t < 128)
                for (int s = 0; s < VX_MLPB_TILE; s++) gb += h2[s * VX_MLPB_HS + t - 64];
            float d1[4][4]; /* samples ty + 16 i, units 4 tx + j: a float4 of W1's row o */
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) d1[i][j] = 0.0f;
            for (int o = 0; o < W; o++) {
                float4 w4 = *(const float4 *)(sm + VX_MLPB_W1 + o * VX_MLPB_HS + 4 * tx);
                float wv[4] = {w4.x, w4.y, w4.z, w4.w}, dv[4];
#pragma unroll
                for (int i = 0; i < 4; i++) dv[i] = h2[(ty + 16 * i) * VX_MLPB_HS + o];
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) d1[i][j] = fmaf(dv[i], wv[j], d1[i][j]);
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (!(h1[(ty + 16 * i) * VX_MLPB_HS + 4 * tx + j] > 0.0f)) d1[i][j] = 0.0f;
            __syncthreads();
#pragma unroll
            for (int i = 0; i < 4; i++)
                *(float4 *)(h1 + (ty + 16 * i) * VX_MLPB_HS + 4 * tx) = make_float4(d1[i][0], d1[i][1], d1[i][2], d1[i][3]);
            __syncthreads();
        }
        /* h1 holds d1: dW0, b0, then dL/d(input) = d1 . W0 for the 15 features */
        if (TC) { /* dW0[o][i] += sum_s d1[s][o] x[s][i]: A(o, s) = h1[s][o], B(s, i) = x[s][i] */
            vx_mma_tiles_tf32<2, VX_MLPB_TILE>(tw0, h1 + wm0, 1, VX_MLPB_HS, sx + wn0, VX_MLPB_XS, 1);
        } else {
            for (int s = 0; s < VX_MLPB_TILE; s++) {
                float4 d4 = *(const float4 *)(h1 + s * VX_MLPB_HS + 4 * ty);
                float2 x2 = *(const float2 *)(sx + s * VX_MLPB_XS + 2 * tx);
                float dv[4] = {d4.x, d4.y, d4.z, d4.w}, xv[2] = {x2.x, x2.y};
    #pragma unroll
                for (int a = 0; a < 4; a++) {
                    gw0[a][0] = fmaf(dv[a], xv[0], gw0[a][0]);
                    gw0[a][1] = fmaf(dv[a], xv[1], gw0[a][1]);
                }
            }
        }
        if (t < 64)
            for (int s = 0; s < VX_MLPB_TILE; s++) gb += h1[s * VX_MLPB_HS + t];
        {
            int s = t >> 2, i0 = 4 * (t & 3); /* inputs i0 .. i0+3 of sample s */
            float g[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int o = 0; o < W; o++) {
                float dv = h1[s * VX_MLPB_HS + o];
                float4 wv = *(const float4 *)(sm + VX_MLPB_W0 + o * VX_MLPB_XS + i0);
                g[0] = fmaf(dv, wv.x, g[0]);
                g[1] = fmaf(dv, wv.y, g[1]);
                g[2] = fmaf(dv, wv.z, g[2]);
                g[3] = fmaf(dv, wv.w, g[3]);
            }
            __syncthreads(); /* every reader of h2 (d2) is done: sdf may take its place */
            /* raw channel 1 + i is input i (i < 15); channel 0 is the density's */
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (i0 + q < VX_MLP_FEATURES) sdf[s * 16 + 1 + i0 + q] = g[q];
            if (i0 == 0) sdf[s * 16] = sdo[4 * s + 3];
        }
        __syncthreads();
        {
            int s = t >> 2, q = t & 3;
            if (s0 + s < S) *(float4 *)(B.x + (s0 + s) * 32 + 4 * q) = *(const float4 *)(sdf + s * 16 + 4 * q);
        }
    }
    /* one atomic per weight per block */
    const int oo = vx_mlp_out_offset(LAYERS);
    if (TC) {
        const int g = (t & 31) >> 2, q = t & 3;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int o = wm0 + g + 8 * (e >> 1);
#pragma unroll
            for (int j = 0; j < 2; j++) {
                int i = wn0 + 8 * j + 2 * q + (e & 1);
                if (i < VX_MLP_IN) atomicAdd(wgrad + i * W + o, tw0[j][e]);
            }
            if (LAYERS == 2)
#pragma unroll
                for (int j = 0; j < 4; j++) atomicAdd(wgrad + VX_MLP_L1 + o * W + wn1 + 8 * j + 2 * q + (e & 1), tw1[j][e]);
        }
    } else {
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int b = 0; b < 2; b++) {
                int o = 4 * ty + a, i = 2 * tx + b;
                if (i < VX_MLP_IN) atomicAdd(wgrad + i * W + o, gw0[a][b]);
            }
        if (LAYERS == 2)
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int b = 0; b < 4; b++) atomicAdd(wgrad + VX_MLP_L1 + (4 * ty + a) * W + 4 * tx + b, gw1[a][b]);
    }
    if (t < 3 * W) atomicAdd(wgrad + oo + t, gw2); /* [c][o]: c = t / 64, o = t % 64 */
    if (t < 64) atomicAdd(wgrad + VX_MLP_B0 + t, gb);
    else if (t < 128) { if (LAYERS == 2) atomicAdd(wgrad + VX_MLP_L1 + W * W + t - 64, gb); }
    else if (t < 131) atomicAdd(wgrad + oo + 3 * W + t - 128, gb);
}

/* The network kernels' instantiations for a model of `layers` hidden layers, with the
 * products on the tensor cores (tc, fit --mlp-tensor-cores) or in FP32 (fit.cu launches
 * them; the emulator test runs the same ones). */
typedef void (*vx_fit_mlpb_fwd_fn)(const float *, vx_fit_mlp_batch, unsigned long long);
typedef void (*vx_fit_mlpb_bwd_fn)(const float *, vx_fit_mlp_batch, unsigned long long, float *);
static inline vx_fit_mlpb_fwd_fn vx_fit_mlpb_forward_pick(int layers, int tc) {
    if (tc) return layers == 1 ? vx_fit_mlpb_forward_kernel<1, true> : vx_fit_mlpb_forward_kernel<2, true>;
    return layers == 1 ? vx_fit_mlpb_forward_kernel<1, false> : vx_fit_mlpb_forward_kernel<2, false>;
}
static inline vx_fit_mlpb_bwd_fn vx_fit_mlpb_backward_pick(int layers, int tc) {
    if (tc) return layers == 1 ? vx_fit_mlpb_backward_kernel<1, true> : vx_fit_mlpb_backward_kernel<2, true>;
    return layers == 1 ? vx_fit_mlpb_backward_kernel<1, false> : vx_fit_mlpb_backward_kernel<2, false>;
}

/* dL/d(raw) of each sample (its x row after the backward) to the grid's eight corners,
 * float4 atomics, and the max weights, as fit_mlp.cuh's visit does. */
__global__ void vx_fit_mlpb_scatter_kernel(vx_fit_index L, vx_fit_mlp_batch B, unsigned long long S, float *grad,
                                           float *wmax) {
    unsigned long long s = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= S) return;
    float4 p = B.pt[s];
    float draw[VX_MLP_CHANNELS];
    const float4 *row = (const float4 *)(B.x + s * 32);
#pragma unroll
    for (int q = 0; q < 4; q++) {
        float4 v = row[q];
        draw[4 * q] = v.x; draw[4 * q + 1] = v.y; draw[4 * q + 2] = v.z; draw[4 * q + 3] = v.w;
    }
    size_t idx[8];
    float w[8];
    vx_fit_corners(&L, vx_v3(p.x, p.y, p.z), idx, w);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if (w[j] == 0.0f || vx_fit_is_null(&L, idx[j])) continue;
        float *g = grad + idx[j] * VX_MLP_CHANNELS, sw = w[j];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
        for (int q = 0; q < VX_MLP_CHANNELS; q += 4)
            atomicAdd((float4 *)(g + q), make_float4(sw * draw[q], sw * draw[q + 1], sw * draw[q + 2], sw * draw[q + 3]));
#else
#pragma unroll
        for (int q = 0; q < VX_MLP_CHANNELS; q++)
            if (draw[q] != 0.0f) atomicAdd(g + q, sw * draw[q]);
#endif
        if (wmax && p.w > 0.0f && w[j] > 0.0f) vx_fit_max(wmax + idx[j], p.w);
    }
}

#endif
