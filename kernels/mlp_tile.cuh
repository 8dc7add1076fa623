/* mlp_tile.cuh - the mlp decoder's network as tiled matrix products over many samples at
 * once (64 a tile, weights and activations in shared memory): shared by the batched
 * training step (fit_mlp_batch.cuh) and the renderer's deferred colour (render.cu). */
#ifndef VX_MLP_TILE_CUH
#define VX_MLP_TILE_CUH

#include "decode.h"

#define VX_MLPB_TILE 64   /* samples a tile */
#define VX_MLPB_THREADS 256
#define VX_MLPB_XS 36     /* shared row strides (floats): 16-byte rows, 4 banks apart */
#define VX_MLPB_HS 68

/* Shared memory of the network kernels: weights as [out][in] rows, then the tile. */
#define VX_MLPB_W0 0                                              /* [64][36] */
#define VX_MLPB_B0 (VX_MLPB_W0 + VX_MLP_WIDTH * VX_MLPB_XS)       /* [64] */
#define VX_MLPB_W1 (VX_MLPB_B0 + VX_MLP_WIDTH)                    /* [64][68] */
#define VX_MLPB_B1 (VX_MLPB_W1 + VX_MLP_WIDTH * VX_MLPB_HS)       /* [64] */
#define VX_MLPB_W2 (VX_MLPB_B1 + VX_MLP_WIDTH)                    /* [3][68] */
#define VX_MLPB_B2 (VX_MLPB_W2 + 3 * VX_MLPB_HS)                  /* [4] */
#define VX_MLPB_X (VX_MLPB_B2 + 4)                                /* tile input [64][36] */
#define VX_MLPB_H1 (VX_MLPB_X + VX_MLPB_TILE * VX_MLPB_XS)        /* [64][68] */
#define VX_MLPB_H2 (VX_MLPB_H1 + VX_MLPB_TILE * VX_MLPB_HS)       /* [64][68] */
#define VX_MLPB_DO (VX_MLPB_H2 + VX_MLPB_TILE * VX_MLPB_HS)       /* [64][4] */
#define VX_MLPB_FLOATS (VX_MLPB_DO + VX_MLPB_TILE * 4)
#define VX_MLPB_SMEM ((size_t)VX_MLPB_FLOATS * sizeof(float))

/* The dynamic shared memory (tests/emu/cuda_emu.h gives it a host form). */
#ifndef VX_DYN_SHARED
#define VX_DYN_SHARED(T, name) extern __shared__ T name[]
#endif

/* The weights (packed, global) into shared memory as [out][in] rows. */
template <int LAYERS> __device__ __forceinline__ void vx_mlpt_load_weights(const float *__restrict__ w, float *sm) {
    const int W = VX_MLP_WIDTH;
    for (int k = threadIdx.x; k < W * VX_MLPB_XS; k += blockDim.x) {
        int o = k / VX_MLPB_XS, i = k % VX_MLPB_XS;
        sm[VX_MLPB_W0 + k] = i < VX_MLP_IN ? w[i * W + o] : 0.0f;
    }
    for (int k = threadIdx.x; k < W; k += blockDim.x) sm[VX_MLPB_B0 + k] = w[VX_MLP_B0 + k];
    if (LAYERS == 2) {
        for (int k = threadIdx.x; k < W * VX_MLPB_HS; k += blockDim.x) {
            int o = k / VX_MLPB_HS, i = k % VX_MLPB_HS;
            sm[VX_MLPB_W1 + k] = i < W ? w[VX_MLP_L1 + o * W + i] : 0.0f;
        }
        for (int k = threadIdx.x; k < W; k += blockDim.x) sm[VX_MLPB_B1 + k] = w[VX_MLP_L1 + W * W + k];
    }
    const float *w2 = w + vx_mlp_out_offset(LAYERS);
    for (int k = threadIdx.x; k < 3 * VX_MLPB_HS; k += blockDim.x) {
        int c = k / VX_MLPB_HS, i = k % VX_MLPB_HS;
        sm[VX_MLPB_W2 + k] = i < W ? w2[c * W + i] : 0.0f;
    }
    if (threadIdx.x < 4) sm[VX_MLPB_B2 + threadIdx.x] = threadIdx.x < 3 ? w2[3 * W + threadIdx.x] : 0.0f;
}

/* Rows [s0, s0 + 64) of x (32 floats each) into the tile, zeros past s_end. */
__device__ __forceinline__ void vx_mlpt_load_x(const float *__restrict__ x, unsigned long long s0,
                                                   unsigned long long s_end, float *sx) {
    for (int k = threadIdx.x; k < VX_MLPB_TILE * 8; k += blockDim.x) {
        int s = k >> 3, q = k & 7;
        float4 v = s0 + s < s_end ? __ldg((const float4 *)(x + (s0 + s) * 32) + q) : make_float4(0, 0, 0, 0);
        *(float4 *)(sx + s * VX_MLPB_XS + 4 * q) = v;
    }
}

/* out[s][n] = relu(b[n] + sum_k in[s][k] W[n][k]) for the tile's 64 samples and 64 units:
 * thread (tx, ty) = (t % 16, t / 16) computes samples ty + 16 i and units tx + 16 j. */
template <int K, int IS>
__device__ __forceinline__ void vx_mlpt_linear(const float *in, const float *Wt, const float *b, float *out) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    float acc[4][4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float bj = b[tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; i++) acc[i][j] = bj;
    }
#pragma unroll 4
    for (int k = 0; k < K; k += 4) {
        float4 a[4], w[4];
#pragma unroll
        for (int i = 0; i < 4; i++) a[i] = *(const float4 *)(in + (ty + 16 * i) * IS + k);
#pragma unroll
        for (int j = 0; j < 4; j++) w[j] = *(const float4 *)(Wt + (tx + 16 * j) * (K == 32 ? VX_MLPB_XS : VX_MLPB_HS) + k);
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                acc[i][j] = fmaf(a[i].x, w[j].x, acc[i][j]);
                acc[i][j] = fmaf(a[i].y, w[j].y, acc[i][j]);
                acc[i][j] = fmaf(a[i].z, w[j].z, acc[i][j]);
                acc[i][j] = fmaf(a[i].w, w[j].w, acc[i][j]);
            }
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) out[(ty + 16 * i) * VX_MLPB_HS + tx + 16 * j] = vx_maxf(acc[i][j], 0.0f);
}

/* d += A B for one 16x8x8 tile on the tensor cores in TF32 (operands rounded to 10-bit
 * mantissas, products summed in FP32): the warp's fragments as the PTX ISA's
 * mma.m16n8k8 .tf32 lays them out, with g = lane / 4, q = lane % 4:
 * a = A(g, q), A(g + 8, q), A(g, q + 4), A(g + 8, q + 4); b = B(q, g), B(q + 4, g);
 * d = D(g, 2q), D(g, 2q + 1), D(g + 8, 2q), D(g + 8, 2q + 1). Every lane of the warp calls
 * it at once (tests/emu/cuda_emu.h emulates it block-wide, as its shuffles). sm_80 and up:
 * the launchers never choose it below (vx_fit_set_mlp_tc_cuda). */
__device__ __forceinline__ void vx_mma_tf32(float d[4], const float a[4], const float b[2]) {
#if defined(VX_CUDA_EMU_H)
    vx_emu_mma_tf32(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned ua[4], ub[2];
#pragma unroll
    for (int i = 0; i < 4; i++) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(ua[i]) : "f"(a[i]));
#pragma unroll
    for (int i = 0; i < 2; i++) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(ub[i]) : "f"(b[i]));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(ua[0]), "r"(ua[1]), "r"(ua[2]), "r"(ua[3]), "r"(ub[0]), "r"(ub[1]));
#elif defined(__CUDA_ARCH__)
    (void)d; (void)a; (void)b;
    __trap();
#endif
}

/* acc[j] += A B_j over K (a multiple of 8) on the tensor cores, for the warp's 16 rows of A
 * and NT 8-column tiles of B: A(m, k) = pa[m am + k ak], B_j(k, n) = pb[k bk + (8j + n) bn]
 * (strides in floats, so either operand may be read transposed from shared memory). */
template <int NT, int K>
__device__ __forceinline__ void vx_mma_tiles_tf32(float acc[NT][4], const float *pa, int am, int ak, const float *pb,
                                                  int bk, int bn) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int k0 = 0; k0 < K; k0 += 8) {
        const float *a0 = pa + g * am + (k0 + q) * ak;
        float a[4] = {a0[0], a0[8 * am], a0[4 * ak], a0[8 * am + 4 * ak]};
#pragma unroll
        for (int j = 0; j < NT; j++) {
            const float *b0 = pb + (k0 + q) * bk + (8 * j + g) * bn;
            float b[2] = {b0[0], b0[4 * bk]};
            vx_mma_tf32(acc[j], a, b);
        }
    }
}

/* vx_mlpt_linear on the tensor cores (TF32 operands, FP32 sums): warp w computes samples
 * 16 (w % 4) .. + 15 and units 32 (w / 4) .. + 31 as four 16x8 tiles, K / 8 steps each.
 * Needs the block's 256 threads (8 warps). Shared-memory reads are conflict-free: rows
 * 36 or 68 floats apart put lane (g, q) in bank 4g + q. */
template <int K, int IS>
__device__ __forceinline__ void vx_mlpt_linear_tc(const float *in, const float *Wt, const float *b, float *out) {
    const int WS = K == 32 ? VX_MLPB_XS : VX_MLPB_HS;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const int m0 = 16 * (w & 3), n0 = 32 * (w >> 2);
    float acc[4][4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float b0 = b[n0 + 8 * j + 2 * q], b1 = b[n0 + 8 * j + 2 * q + 1];
        acc[j][0] = b0; acc[j][1] = b1; acc[j][2] = b0; acc[j][3] = b1;
    }
    vx_mma_tiles_tf32<4, K>(acc, in + m0 * IS, IS, 1, Wt + n0 * WS, 1, WS); /* B(k, n) = W[n][k] */
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float *o0 = out + (m0 + g) * VX_MLPB_HS + n0 + 8 * j + 2 * q, *o8 = o0 + 8 * VX_MLPB_HS;
        o0[0] = vx_maxf(acc[j][0], 0.0f);
        o0[1] = vx_maxf(acc[j][1], 0.0f);
        o8[0] = vx_maxf(acc[j][2], 0.0f);
        o8[1] = vx_maxf(acc[j][3], 0.0f);
    }
}

/* The hidden layers of the tile in sm (input at VX_MLPB_X): h1, and h2 with 2 layers; TC:
 * on the tensor cores (vx_mlpt_linear_tc), else in FP32. */
template <int LAYERS, bool TC = false> __device__ __forceinline__ void vx_mlpt_hidden(float *sm) {
    if (TC)
        vx_mlpt_linear_tc<32, VX_MLPB_XS>(sm + VX_MLPB_X, sm + VX_MLPB_W0, sm + VX_MLPB_B0, sm + VX_MLPB_H1);
    else
        vx_mlpt_linear<32, VX_MLPB_XS>(sm + VX_MLPB_X, sm + VX_MLPB_W0, sm + VX_MLPB_B0, sm + VX_MLPB_H1);
    if (LAYERS == 2) {
        __syncthreads();
        if (TC)
            vx_mlpt_linear_tc<VX_MLP_WIDTH, VX_MLPB_HS>(sm + VX_MLPB_H1, sm + VX_MLPB_W1, sm + VX_MLPB_B1,
                                                        sm + VX_MLPB_H2);
        else
            vx_mlpt_linear<VX_MLP_WIDTH, VX_MLPB_HS>(sm + VX_MLPB_H1, sm + VX_MLPB_W1, sm + VX_MLPB_B1,
                                                     sm + VX_MLPB_H2);
    }
    __syncthreads();
}

/* Network forward over samples [0, S) of x (32 floats a row): rgb = sigmoid(out) into
 * rgb[s].xyz (TC: the hidden layers on the tensor cores). Persistent blocks of VX_MLPB_THREADS threads with VX_MLPB_SMEM bytes of
 * dynamic shared memory (the weights are loaded once a block), 64 samples a tile. */
template <int LAYERS, bool TC = false>
__device__ __forceinline__ void vx_mlpt_forward(const float *__restrict__ w, const float *__restrict__ x, float4 *rgb,
                                                unsigned long long S) {
    VX_DYN_SHARED(float4, vx_mlpb_smem4);
    float *sm = (float *)vx_mlpb_smem4;
    vx_mlpt_load_weights<LAYERS>(w, sm);
    const float *hl = sm + (LAYERS == 2 ? VX_MLPB_H2 : VX_MLPB_H1);
    unsigned long long tiles = (S + VX_MLPB_TILE - 1) / VX_MLPB_TILE;
    for (unsigned long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        unsigned long long s0 = tile * VX_MLPB_TILE;
        __syncthreads(); /* the weights, or the last tile's readers */
        vx_mlpt_load_x(x, s0, S, sm + VX_MLPB_X);
        __syncthreads();
        vx_mlpt_hidden<LAYERS, TC>(sm);
        if (threadIdx.x < VX_MLPB_TILE * 3) {
            int s = threadIdx.x / 3, c = threadIdx.x % 3;
            float a = sm[VX_MLPB_B2 + c];
            const float *h = hl + s * VX_MLPB_HS, *w2 = sm + VX_MLPB_W2 + c * VX_MLPB_HS;
#pragma unroll 8
            for (int o = 0; o < VX_MLP_WIDTH; o++) a = fmaf(w2[o], h[o], a);
            if (s0 + s < S) ((float *)(rgb + s0 + s))[c] = vx_sigmoidf(a);
        }
    }
}

#endif
