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

/* The hidden layers of the tile in sm (input at VX_MLPB_X): h1, and h2 with 2 layers. */
template <int LAYERS> __device__ __forceinline__ void vx_mlpt_hidden(float *sm) {
    vx_mlpt_linear<32, VX_MLPB_XS>(sm + VX_MLPB_X, sm + VX_MLPB_W0, sm + VX_MLPB_B0, sm + VX_MLPB_H1);
    if (LAYERS == 2) {
        __syncthreads();
        vx_mlpt_linear<VX_MLP_WIDTH, VX_MLPB_HS>(sm + VX_MLPB_H1, sm + VX_MLPB_W1, sm + VX_MLPB_B1,
                                                     sm + VX_MLPB_H2);
    }
    __syncthreads();
}

/* Network forward over samples [0, S) of x (32 floats a row): rgb = sigmoid(out) into
 * rgb[s].xyz. Persistent blocks of VX_MLPB_THREADS threads with VX_MLPB_SMEM bytes of
 * dynamic shared memory (the weights are loaded once a block), 64 samples a tile. */
template <int LAYERS>
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
        vx_mlpt_hidden<LAYERS>(sm);
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
