/* fit_mlp.cuh - the mlp decoder's CUDA training step, included by fit.cu: one thread per
 * ray marches forward and backward as version 2 does for SH (fit_rays.cuh), with the
 * network's weights in constant memory; each composited sample's activations and deltas go
 * to a record buffer that a second kernel reduces into dL/dweights (no atomic per weight per
 * sample). A ray whose records do not fit in what is left of the buffer is put off to the
 * next pass (fit.cu's vx__rays_mlp drains the buffer in between). The maths is
 * fit_march.h's (vx_decode_mlp, vx_fit_mlp_backward), as on the CPU. */
#ifndef VX_FIT_MLP_CUH
#define VX_FIT_MLP_CUH

#include "fit_rays.cuh"

/* The weights the ray and render kernels read (fit.cu copies the device model's in before
 * each launch: Adam updates them on the device). */
__constant__ float vx_c_fit_mlp[VX_MLP_MAX_WEIGHTS];

/* Floats of a record (vx_fit_mlp_record) and the shared slot that holds 1 (bias terms). */
#define VX_FIT_REC_FLOATS ((int)(sizeof(vx_fit_mlp_record) / sizeof(float)))
#define VX_FIT_REC_ONE VX_FIT_REC_FLOATS

/* The op for vx_march_run: 16 channels (density + 15 features) read as four float4s per
 * corner, density first (a sample without density reads nothing else and runs no network).
 * Forward: counts the composited samples. Backward: per composited sample the network's
 * backward, its record (in the ray's reserved stretch of the buffer), and dL/dgrid
 * scattered with float4 atomics. */
template <int LAYERS, bool BWD, bool R = false> struct vx_fit_mlp_op {
    static constexpr bool pieces = false;
    const vx_march_params *m;
    const vx_fit_index *L;
    const float *data;
    vx_vec3 dir;                          /* the ray's */
    unsigned idx[8];
    float w[8], raw[VX_MLP_CHANNELS];
    int n;                                /* forward: composited samples */
    const float *C, *g;                   /* backward: forward colour, dL/dC */
    float *grad, *wmax;
    vx_fit_mlp_record *rec;               /* this ray's next record */

    static __device__ __forceinline__ float sample(void *op, const vx_sample *smp, vx_vec3 d, float *rgb) {
        vx_fit_mlp_op *f = (vx_fit_mlp_op *)op;
        size_t idx[8];
        vx_fit_corners(f->L, smp->p, idx, f->w);
        float raw0 = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            f->idx[j] = (unsigned)idx[j];
            raw0 += f->w[j] * __ldg(f->data + (size_t)f->idx[j] * VX_MLP_CHANNELS);
        }
        if (!(raw0 > 0.0f)) return 0.0f;
#pragma unroll
        for (int c = 0; c < VX_MLP_CHANNELS; c++) f->raw[c] = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float v[VX_MLP_CHANNELS];
            vx_fit_load<VX_MLP_CHANNELS>(f->data, f->idx[j], v);
#pragma unroll
            for (int c = 0; c < VX_MLP_CHANNELS; c++) f->raw[c] += f->w[j] * v[c];
        }
        f->raw[0] = raw0;
        if constexpr (R) /* the input reads the density's gradient (fit_march.h's probes) */
            return vx_decode_mlp_dir(&f->m->dec, vx_c_fit_mlp, LAYERS, f->raw, d, vx_fit_normal(f->m, f->L, f->data, smp->p),
                                     rgb);
        return vx_decode_mlp(&f->m->dec, vx_c_fit_mlp, LAYERS, f->raw, d, rgb);
    }

    static __device__ __forceinline__ void visit(void *op, const vx_composite *cs, const vx_sample *smp,
                                                 const float *rgb, float wk) {
        vx_fit_mlp_op *f = (vx_fit_mlp_op *)op;
        if constexpr (!BWD) {
            f->n++;
            return;
        }
        float dsig = 0.0f, drgb[3];
#pragma unroll
        for (int c = 0; c < 3; c++) {
            dsig += f->g[c] * (cs->T * rgb[c] - (f->C[c] - cs->acc[c]));
            drgb[c] = wk * f->g[c];
        }
        float draw[VX_MLP_CHANNELS];
        draw[0] = (smp->tb - smp->ta) * dsig * f->m->dec.density_scale; /* relu'(raw0) = 1: sigma > 0 */
        vx_fit_mlp_record a;
        static_assert(!(BWD && R), "the per-ray step has no backward for the reflected direction (fit.cu refuses it)");
        vx_fit_mlp_backward(vx_c_fit_mlp, LAYERS, f->raw, f->dir, drgb, &a, draw + 1);
        float4 *dst = (float4 *)f->rec++;
        const float4 *src = (const float4 *)&a;
        for (int q = 0; q < VX_FIT_REC_FLOATS / 4; q++) dst[q] = src[q];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (f->w[j] == 0.0f || vx_fit_is_null(f->L, f->idx[j])) continue;
            float *p = f->grad + (size_t)f->idx[j] * VX_MLP_CHANNELS, s = f->w[j];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
            for (int q = 0; q < VX_MLP_CHANNELS; q += 4)
                atomicAdd((float4 *)(p + q), make_float4(s * draw[q], s * draw[q + 1], s * draw[q + 2], s * draw[q + 3]));
#else
#pragma unroll
            for (int q = 0; q < VX_MLP_CHANNELS; q++)
                if (draw[q] != 0.0f) atomicAdd(p + q, s * draw[q]);
#endif
        }
        if (f->wmax && wk > 0.0f)
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (f->w[j] > 0.0f && !vx_fit_is_null(f->L, f->idx[j])) vx_fit_max(f->wmax + f->idx[j], wk);
    }
};

/* The ray step for rays list[0, n) (list NULL: rays 0 .. n-1): forward (colour, composited
 * samples), one atomic per ray to reserve its records, then, when they fit below cap, the
 * loss and the backward; a ray that does not fit goes to deferred[] and counts nothing (the
 * next pass runs it). rec_count[0] counts reservations, rec_count[1] ends the written
 * records. Per-block loss sums go to *loss_sum, as version 2's. */
template <int LAYERS>
__global__ void __launch_bounds__(128)
vx_fit_rays_mlp_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data,
                       const unsigned char *__restrict__ occ, vx_fit_ray_src src, const int *__restrict__ list, int n,
                       float scale, float *grad, float *wmax, float *rgb_out, double *loss_sum,
                       vx_fit_mlp_record *rec, unsigned long long cap, unsigned long long *rec_count, int *deferred,
                       unsigned *n_deferred) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float l = 0.0f;
    if (t < n) {
        int r = list ? list[t] : t;
        vx_vec3 o, d;
        const float *target;
        vx_fit_src_ray(src, r, &o, &d, &target);
        float tg[3] = {__ldg(target), __ldg(target + 1), __ldg(target + 2)}, C[3], g[3];
        vx_fit_mlp_op<LAYERS, false> fw;
        fw.m = &mp; fw.L = &L; fw.data = data; fw.dir = d; fw.n = 0;
        vx_ray_result res = vx_march_run(&mp, occ, o, d, 0.0f, &fw);
        unsigned long long at = fw.n ? atomicAdd(rec_count, (unsigned long long)fw.n) : 0ull;
        if (at + fw.n > cap) {
            deferred[atomicAdd(n_deferred, 1u)] = r;
        } else {
            if (fw.n) atomicMax(rec_count + 1, at + fw.n);
            for (int c = 0; c < 3; c++) C[c] = res.rgb[c];
            l = vx_fit_mse_backward(C, tg, scale, g);
            vx_fit_mlp_op<LAYERS, true> bw;
            bw.m = &mp; bw.L = &L; bw.data = data; bw.dir = d;
            bw.C = C; bw.g = g; bw.grad = grad; bw.wmax = wmax; bw.rec = rec + at;
            vx_march_run(&mp, occ, o, d, 0.0f, &bw);
            if (rgb_out)
                for (int c = 0; c < 3; c++) rgb_out[3 * r + c] = C[c];
            if (src.ray_err) src.ray_err[r] = vx_fit_ray_error(C, tg);
        }
    }
    vx_fit_block_loss(l, loss_sum);
}

/* Weight k (packed layout) is the sum over records of rec[a] * rec[b]: the two record
 * offsets (VX_FIT_REC_ONE for a bias). The twin of vx_fit_mlp_record_grad's loops. */
__device__ __forceinline__ void vx_fit_mlp_pair(int layers, int k, int *a, int *b) {
    const int W = VX_MLP_WIDTH;
    const int X = offsetof(vx_fit_mlp_record, x) / 4, H1 = offsetof(vx_fit_mlp_record, h1) / 4,
              D1 = offsetof(vx_fit_mlp_record, d1) / 4, H2 = offsetof(vx_fit_mlp_record, h2) / 4,
              D2 = offsetof(vx_fit_mlp_record, d2) / 4, DO = offsetof(vx_fit_mlp_record, dout) / 4;
    int oo = vx_mlp_out_offset(layers);
    if (k < VX_MLP_B0) { *a = D1 + k % W; *b = X + k / W; }                         /* W0^T [i][o] */
    else if (k < VX_MLP_L1) { *a = D1 + (k - VX_MLP_B0); *b = VX_FIT_REC_ONE; }    /* b0 */
    else if (k < oo) {
        int q = k - VX_MLP_L1;
        if (q < W * W) { *a = D2 + q / W; *b = H1 + q % W; }                        /* W1 [o][i] */
        else { *a = D2 + (q - W * W); *b = VX_FIT_REC_ONE; }                       /* b1 */
    } else {
        int q = k - oo;
        if (q < 3 * W) { *a = DO + q / W; *b = (layers == 2 ? H2 : H1) + q % W; }   /* W2 [c][o] */
        else { *a = DO + (q - 3 * W); *b = VX_FIT_REC_ONE; }                       /* b2 */
    }
}

/* dL/dweights from records [0, n): each block sums a slice of `per_block` records, each
 * thread its weights k = threadIdx.x + 256 q, then one atomic per weight per block. The
 * records are staged in shared memory VX_FIT_REC_STAGE at a time. */
#define VX_FIT_REC_STAGE 8
template <int LAYERS>
__global__ void __launch_bounds__(256)
vx_fit_mlp_wgrad_kernel(const vx_fit_mlp_record *__restrict__ rec, unsigned long long n, unsigned per_block,
                        float *wgrad) {
    constexpr int NW = LAYERS == 2 ? VX_MLP_L1 + VX_MLP_L1_SIZE + 3 * VX_MLP_WIDTH + 3
                                   : VX_MLP_L1 + 3 * VX_MLP_WIDTH + 3;
    constexpr int Q = (NW + 255) / 256, RF = VX_FIT_REC_FLOATS + 4; /* a record, its 1, padding */
    __shared__ float sr[VX_FIT_REC_STAGE][RF];
    int a[Q], b[Q];
    float acc[Q];
#pragma unroll
    for (int q = 0; q < Q; q++) {
        int k = threadIdx.x + 256 * q;
        if (k < NW) vx_fit_mlp_pair(LAYERS, k, &a[q], &b[q]);
        else a[q] = b[q] = VX_FIT_REC_ONE;
        acc[q] = 0.0f;
    }
    unsigned long long s0 = (unsigned long long)blockIdx.x * per_block, s1 = s0 + per_block;
    if (s1 > n) s1 = n;
    for (unsigned long long s = s0; s < s1; s += VX_FIT_REC_STAGE) {
        int m = s1 - s < VX_FIT_REC_STAGE ? (int)(s1 - s) : VX_FIT_REC_STAGE;
        __syncthreads();
        for (int t = threadIdx.x; t < m * (VX_FIT_REC_FLOATS / 4); t += blockDim.x) {
            int rr = t / (VX_FIT_REC_FLOATS / 4), q = t % (VX_FIT_REC_FLOATS / 4);
            float4 v = __ldg((const float4 *)(rec + s + rr) + q);
            sr[rr][4 * q] = v.x; sr[rr][4 * q + 1] = v.y; sr[rr][4 * q + 2] = v.z; sr[rr][4 * q + 3] = v.w;
        }
        if (threadIdx.x < VX_FIT_REC_STAGE) sr[threadIdx.x][VX_FIT_REC_ONE] = 1.0f;
        __syncthreads();
        for (int rr = 0; rr < m; rr++)
#pragma unroll
            for (int q = 0; q < Q; q++) acc[q] += sr[rr][a[q]] * sr[rr][b[q]];
    }
#pragma unroll
    for (int q = 0; q < Q; q++) {
        int k = threadIdx.x + 256 * q;
        if (k < NW && acc[q] != 0.0f) atomicAdd(wgrad + k, acc[q]);
    }
}

/* Adam on the weights (dense), consuming their gradient: the twin of vx_fit_adam_step_mlp_cpu. */
__global__ void vx_fit_mlp_adam_kernel(float *w, float *mom, float *var, float *grad, int n, int cut_lo, int cut_hi,
                                       float lr, float b1, float b2, float eps, float bc1, float bc2) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    if (k >= cut_lo && k < cut_hi) { /* vx_mlp_dir_cut: held at zero, as vx_fit_adam_step_mlp_cpu */
        w[k] = mom[k] = var[k] = grad[k] = 0.0f;
        return;
    }
    float gk = grad[k];
    grad[k] = 0.0f;
    vx_fit_adam_update(w + k, mom + k, var + k, gk, lr, b1, b2, eps, bc1, bc2, 0);
}

/* Forward render of one camera with the network (validation while training); R: the
 * network sees the reflected direction. */
template <int LAYERS, bool R = false>
__global__ void vx_fit_render_mlp_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data,
                                         const unsigned char *__restrict__ occ, vx_camera cam, float *rgb) {
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= cam.width || py >= cam.height) return;
    vx_vec3 o, d;
    vx_camera_ray(&cam, (float)px + 0.5f, (float)py + 0.5f, &o, &d);
    vx_fit_mlp_op<LAYERS, false, R> fw;
    fw.m = &mp; fw.L = &L; fw.data = data; fw.dir = d; fw.n = 0;
    vx_ray_result res = vx_march_run(&mp, occ, o, d, 0.0f, &fw);
    float *out = rgb + ((size_t)py * cam.width + px) * 3;
    out[0] = res.rgb[0]; out[1] = res.rgb[1]; out[2] = res.rgb[2];
}

#endif
