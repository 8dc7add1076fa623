/* trilinear.cu - the standalone trilinear op on the GPU, in versions (llm.c dev/cuda
 * style), plus the dense-grid gather and its atomic gradient scatter. Reached from C
 * through cuda_trilinear.h; validated against trilinear_cpu.c by tests/gpu and `voxray bench`.
 *
 * Cell form: feats (N,8,F), points (N,3) in [-1,1] -> out (N,F); corner k = 4ix+2iy+iz.
 * forward1 / backward1: the pytorch-cppcuda-tutorial mapping: 16x16 blocks, n on x and f
 *   on y, so a warp's 32 threads read 32 different points' features, 8F floats apart:
 *   every load is a separate 32-byte sector, and half of each is wasted.
 * forward2 / backward2: one thread per (n, f) with f fastest: a warp reads 32
 *   consecutive floats of one corner, fully coalesced. The point is re-read per thread
 *   (an L1 broadcast).
 * forward3 / backward3: float4 over F (F % 4 == 0): 16-byte loads and stores, a quarter
 *   of the instructions; feats are streamed (ld.global.cs) since each is read once.
 * forward4 / backward4: version 3 with two float4 groups per thread, all 16 loads
 *   issued before any arithmetic, for more bytes in flight per thread.
 * backward5: version 3's float4 mapping with two point-groups per thread and ordinary
 *   (write-back) stores instead of streaming ones.
 * Versions 3 and up fall back to version 2 when F % 4 != 0.
 *
 * Grid gather: one thread per (point, group of 4 channels) when C % 4 == 0, else per
 * (point, channel); float32 or float16 storage. Scatter: the same mapping, atomicAdd
 * of w_k * dout into each of the 8 corners (float4 atomics on sm_90, half2 for fp16). */
#include <cuda_fp16.h>

#include "common.cuh"
#include "march.h"
#include "cuda_trilinear.h"

// ----------------------------------------------------------------------------------------
// device helpers

/* Corner weights, corner k = 4ix + 2iy + iz, from a local point in [-1,1]^3. */
__device__ __forceinline__ void vx_cell_weights(const float *__restrict__ p, float w[8]) {
    float u = (p[0] + 1.0f) * 0.5f, v = (p[1] + 1.0f) * 0.5f, s = (p[2] + 1.0f) * 0.5f;
    float a = (1.0f - v) * (1.0f - s), b = (1.0f - v) * s, c = v * (1.0f - s), d = v * s;
    w[0] = (1.0f - u) * a; w[1] = (1.0f - u) * b; w[2] = (1.0f - u) * c; w[3] = (1.0f - u) * d;
    w[4] = u * a; w[5] = u * b; w[6] = u * c; w[7] = u * d;
}

__device__ __forceinline__ size_t vx_minsz(size_t a, size_t b) { return a < b ? a : b; }

__device__ __forceinline__ float4 vx_f4_axpy(float a, float4 x, float4 y) {
    return make_float4(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y), fmaf(a, x.z, y.z), fmaf(a, x.w, y.w));
}
__device__ __forceinline__ float4 vx_f4_scale(float a, float4 x) {
    return make_float4(a * x.x, a * x.y, a * x.z, a * x.w);
}

// ----------------------------------------------------------------------------------------
// forward kernels

/* Version 1: the tutorial's kernel, including its a, b, c, d = 1-a-b-c weights. */
__global__ void vx_trilinear_forward_kernel1(const float *__restrict__ feats, const float *__restrict__ points,
                                             float *__restrict__ out, int n, int f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || c >= f) return;
    const float *p = points + (size_t)i * 3;
    float u = (p[0] + 1) / 2, v = (p[1] + 1) / 2, w = (p[2] + 1) / 2;
    float a = (1 - v) * (1 - w), b = (1 - v) * w, cc = v * (1 - w), d = 1 - a - b - cc;
    const float *fe = feats + (size_t)i * 8 * f + c;
    out[(size_t)i * f + c] = (1 - u) * (a * fe[0] + b * fe[f] + cc * fe[2 * f] + d * fe[3 * f]) +
                             u * (a * fe[4 * f] + b * fe[5 * f] + cc * fe[6 * f] + d * fe[7 * f]);
}

/* Version 2: flat index over (n, f), f fastest. */
__global__ void vx_trilinear_forward_kernel2(const float *__restrict__ feats, const float *__restrict__ points,
                                             float *__restrict__ out, int n, int f) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)n * f) return;
    size_t i = idx / f, c = idx % f;
    float w[8];
    vx_cell_weights(points + i * 3, w);
    const float *fe = feats + i * 8 * f + c;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) acc = fmaf(w[k], __ldg(fe + (size_t)k * f), acc);
    out[idx] = acc;
}

/* Version 3: one float4 of F per thread, streaming loads and stores. */
__global__ void vx_trilinear_forward_kernel3(const float *__restrict__ feats, const float *__restrict__ points,
                                             float *__restrict__ out, int n, int f) {
    int f4 = f >> 2;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)n * f4) return;
    size_t i = idx / f4, c = idx % f4;
    float w[8];
    vx_cell_weights(points + i * 3, w);
    const float4 *fe = (const float4 *)feats + i * 8 * f4 + c;
    float4 x[8];
#pragma unroll
    for (int k = 0; k < 8; k++) x[k] = __ldcs(fe + (size_t)k * f4);
    float4 acc = vx_f4_scale(w[0], x[0]);
#pragma unroll
    for (int k = 1; k < 8; k++) acc = vx_f4_axpy(w[k], x[k], acc);
    __stcs((float4 *)out + idx, acc);
}

/* Version 4: two float4 groups per thread (c and c + f4/2 of the same point when f4 is
 * even, else consecutive flat indices), all sixteen loads in flight together. */
__global__ void vx_trilinear_forward_kernel4(const float *__restrict__ feats, const float *__restrict__ points,
                                             float *__restrict__ out, int n, int f) {
    int f4 = f >> 2;
    size_t total = (size_t)n * f4, half = (total + 1) / 2;
    size_t idx0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx0 >= half) return;
    size_t idx[2] = {idx0, idx0 + half};
    int ok1 = idx[1] < total;
    float4 x[2][8];
    size_t pi[2];
#pragma unroll
    for (int j = 0; j < 2; j++) {
        size_t id = j == 1 && !ok1 ? idx[0] : idx[j];
        size_t i = id / f4, c = id % f4;
        pi[j] = i;
        const float4 *fe = (const float4 *)feats + i * 8 * f4 + c;
#pragma unroll
        for (int k = 0; k < 8; k++) x[j][k] = __ldcs(fe + (size_t)k * f4);
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
        if (j == 1 && !ok1) break;
        float w[8];
        vx_cell_weights(points + pi[j] * 3, w);
        float4 acc = vx_f4_scale(w[0], x[j][0]);
#pragma unroll
        for (int k = 1; k < 8; k++) acc = vx_f4_axpy(w[k], x[j][k], acc);
        __stcs((float4 *)out + idx[j], acc);
    }
}

// ----------------------------------------------------------------------------------------
// backward kernels

/* Version 1: the tutorial's mapping. */
__global__ void vx_trilinear_backward_kernel1(const float *__restrict__ dout, const float *__restrict__ points,
                                              float *__restrict__ dfeats, int n, int f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || c >= f) return;
    const float *p = points + (size_t)i * 3;
    float u = (p[0] + 1) / 2, v = (p[1] + 1) / 2, w = (p[2] + 1) / 2;
    float a = (1 - v) * (1 - w), b = (1 - v) * w, cc = v * (1 - w), d = 1 - a - b - cc;
    float g = dout[(size_t)i * f + c];
    float *df = dfeats + (size_t)i * 8 * f + c;
    df[0] = (1 - u) * a * g; df[f] = (1 - u) * b * g; df[2 * f] = (1 - u) * cc * g; df[3 * f] = (1 - u) * d * g;
    df[4 * f] = u * a * g; df[5 * f] = u * b * g; df[6 * f] = u * cc * g; df[7 * f] = u * d * g;
}

/* Version 2: flat (n, f), f fastest. */
__global__ void vx_trilinear_backward_kernel2(const float *__restrict__ dout, const float *__restrict__ points,
                                              float *__restrict__ dfeats, int n, int f) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)n * f) return;
    size_t i = idx / f, c = idx % f;
    float w[8];
    vx_cell_weights(points + i * 3, w);
    float g = dout[idx];
    float *df = dfeats + i * 8 * f + c;
#pragma unroll
    for (int k = 0; k < 8; k++) df[(size_t)k * f] = w[k] * g;
}

/* Version 3: float4 over F, streaming stores (the output is 8x the input). */
__global__ void vx_trilinear_backward_kernel3(const float *__restrict__ dout, const float *__restrict__ points,
                                              float *__restrict__ dfeats, int n, int f) {
    int f4 = f >> 2;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)n * f4) return;
    size_t i = idx / f4, c = idx % f4;
    float w[8];
    vx_cell_weights(points + i * 3, w);
    float4 g = __ldcs((const float4 *)dout + idx);
    float4 *df = (float4 *)dfeats + i * 8 * f4 + c;
#pragma unroll
    for (int k = 0; k < 8; k++) __stcs(df + (size_t)k * f4, vx_f4_scale(w[k], g));
}

/* Version 4: a block stages its points' weights in shared memory once (one thread per
 * point) instead of every thread recomputing them, then writes as version 3. */
__global__ void vx_trilinear_backward_kernel4(const float *__restrict__ dout, const float *__restrict__ points,
                                              float *__restrict__ dfeats, int n, int f) {
    extern __shared__ float sw[]; /* [points in block][8] */
    int f4 = f >> 2;
    size_t first = (size_t)blockIdx.x * blockDim.x, total = (size_t)n * f4;
    size_t i_lo = first / f4, i_hi = vx_minsz(first + blockDim.x, total);
    size_t npts = i_hi == 0 ? 0 : (i_hi - 1) / f4 - i_lo + 1;
    for (size_t t = threadIdx.x; t < npts; t += blockDim.x) vx_cell_weights(points + (i_lo + t) * 3, sw + t * 8);
    __syncthreads();
    size_t idx = first + threadIdx.x;
    if (idx >= total) return;
    size_t i = idx / f4, c = idx % f4;
    const float *w = sw + (i - i_lo) * 8;
    float4 g = __ldcs((const float4 *)dout + idx);
    float4 *df = (float4 *)dfeats + i * 8 * f4 + c;
#pragma unroll
    for (int k = 0; k < 8; k++) __stcs(df + (size_t)k * f4, vx_f4_scale(w[k], g));
}

/* Version 5: two float4 groups per thread (flat indices idx and idx + half), plain stores. */
__global__ void vx_trilinear_backward_kernel5(const float *__restrict__ dout, const float *__restrict__ points,
                                              float *__restrict__ dfeats, int n, int f) {
    int f4 = f >> 2;
    size_t total = (size_t)n * f4, half = (total + 1) / 2;
    size_t idx0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx0 >= half) return;
#pragma unroll
    for (int j = 0; j < 2; j++) {
        size_t idx = idx0 + j * half;
        if (idx >= total) break;
        size_t i = idx / f4, c = idx % f4;
        float w[8];
        vx_cell_weights(points + i * 3, w);
        float4 g = __ldcs((const float4 *)dout + idx);
        float4 *df = (float4 *)dfeats + i * 8 * f4 + c;
#pragma unroll
        for (int k = 0; k < 8; k++) df[(size_t)k * f4] = vx_f4_scale(w[k], g);
    }
}

// ----------------------------------------------------------------------------------------
// dense grid gather and scatter

/* G consecutive channels of one lattice point as floats. */
template <int G> __device__ __forceinline__ void vx_load_group(const float *__restrict__ p, float *v) {
    if constexpr (G == 4) {
        float4 q = __ldg((const float4 *)p);
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        for (int j = 0; j < G; j++) v[j] = __ldg(p + j);
    }
}
template <int G> __device__ __forceinline__ void vx_load_group(const __half *__restrict__ p, float *v) {
    if constexpr (G == 4) {
        uint2 q = __ldg((const uint2 *)p);
        float2 a = __half22float2(*(__half2 *)&q.x), b = __half22float2(*(__half2 *)&q.y);
        v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
    } else {
        for (int j = 0; j < G; j++) v[j] = __half2float(p[j]);
    }
}

/* Add G floats into G consecutive channels with atomics. */
template <int G> __device__ __forceinline__ void vx_atomic_group(float *p, const float *v) {
#if __CUDA_ARCH__ >= 900
    if constexpr (G == 4) atomicAdd((float4 *)p, make_float4(v[0], v[1], v[2], v[3]));
    else
#endif
        for (int j = 0; j < G; j++) atomicAdd(p + j, v[j]);
}
template <int G> __device__ __forceinline__ void vx_atomic_group(__half *p, const float *v) {
    if constexpr (G == 4) {
        atomicAdd((__half2 *)p, __floats2half2_rn(v[0], v[1]));
        atomicAdd((__half2 *)p + 1, __floats2half2_rn(v[2], v[3]));
    } else {
        for (int j = 0; j < G; j++) atomicAdd(p + j, __float2half(v[j]));
    }
}

/* Element offsets of channel 0 of the 8 corners and their weights (march.h's order). */
__device__ __forceinline__ void vx_grid_corners(const vx_grid_desc &g, const float *__restrict__ pw,
                                                size_t off[8], float w[8]) {
    vx_vec3 p = vx_affine_point(g.w2i, vx_v3(pw[0], pw[1], pw[2]));
    int x[2], y[2], z[2];
    float fx, fy, fz;
    vx_axis_cell(p.x, g.nx, &x[0], &x[1], &fx);
    vx_axis_cell(p.y, g.ny, &y[0], &y[1], &fy);
    vx_axis_cell(p.z, g.nz, &z[0], &z[1], &fz);
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int iz = (k >> 2) & 1, iy = (k >> 1) & 1, ix = k & 1;
        off[k] = (((size_t)z[iz] * g.ny + y[iy]) * g.nx + x[ix]) * g.nc;
        w[k] = (iz ? fz : 1.0f - fz) * (iy ? fy : 1.0f - fy) * (ix ? fx : 1.0f - fx);
    }
}

template <typename T, int G>
__global__ void vx_grid_gather_kernel(const vx_grid_desc g, const T *__restrict__ grid,
                                      const float *__restrict__ pts, int m, float *__restrict__ out) {
    int ng = g.nc / G;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)m * ng) return;
    size_t i = idx / ng, c = (idx % ng) * G;
    size_t off[8];
    float w[8], acc[G], v[G];
    vx_grid_corners(g, pts + i * 3, off, w);
#pragma unroll
    for (int j = 0; j < G; j++) acc[j] = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        vx_load_group<G>(grid + off[k] + c, v);
#pragma unroll
        for (int j = 0; j < G; j++) acc[j] = fmaf(w[k], v[j], acc[j]);
    }
    float *o = out + i * g.nc + c;
    if constexpr (G == 4) __stcs((float4 *)o, make_float4(acc[0], acc[1], acc[2], acc[3]));
    else for (int j = 0; j < G; j++) o[j] = acc[j];
}

template <typename T, int G>
__global__ void vx_grid_scatter_kernel(const vx_grid_desc g, const float *__restrict__ dout,
                                       const float *__restrict__ pts, int m, T *__restrict__ dgrid) {
    int ng = g.nc / G;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)m * ng) return;
    size_t i = idx / ng, c = (idx % ng) * G;
    size_t off[8];
    float w[8], gr[G], v[G];
    vx_grid_corners(g, pts + i * 3, off, w);
    if constexpr (G == 4) {
        float4 q = __ldcs((const float4 *)(dout + i * g.nc + c));
        gr[0] = q.x; gr[1] = q.y; gr[2] = q.z; gr[3] = q.w;
    } else {
        for (int j = 0; j < G; j++) gr[j] = dout[i * g.nc + c + j];
    }
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (w[k] == 0.0f) continue; /* border clamp and exact hits add nothing */
#pragma unroll
        for (int j = 0; j < G; j++) v[j] = w[k] * gr[j];
        vx_atomic_group<G>(dgrid + off[k] + c, v);
    }
}

// ----------------------------------------------------------------------------------------
// launchers

static const char *vx__fwd_names[VX_TRILINEAR_FWD_VERSIONS] = {
    "1 tutorial 16x16", "2 coalesced over F", "3 float4 streaming", "4 float4 x2 per thread"};
static const char *vx__bwd_names[VX_TRILINEAR_BWD_VERSIONS] = {
    "1 tutorial 16x16", "2 coalesced over F", "3 float4 streaming", "4 float4 + shared weights",
    "5 float4 x2, write-back"};

extern "C" const char *vx_trilinear_version_name(int backward, int version) {
    int nv = backward ? VX_TRILINEAR_BWD_VERSIONS : VX_TRILINEAR_FWD_VERSIONS;
    if (version < 1 || version > nv) return "?";
    return backward ? vx__bwd_names[version - 1] : vx__fwd_names[version - 1];
}

static int vx__check_op(const char *what, int version, int nv, int n, int f, int block) {
    if (version < 1 || version > nv) return vx_error("%s: version %d is not in 1..%d", what, version, nv);
    if (n <= 0 || f <= 0) return vx_error("%s: N = %d and F = %d must be positive", what, n, f);
    if ((size_t)n * 8 * f > ((size_t)1 << 40)) return vx_error("%s: N x 8 x F is too large", what);
    if (block < 0 || block > 1024 || (block && block % 32))
        return vx_error("%s: block size %d is not a multiple of 32 in 32..1024", what, block);
    return 0;
}

extern "C" int vx_trilinear_forward_stream_cuda(int version, const float *d_feats, const float *d_points,
                                                float *d_out, int n, int f, int block, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    if (vx__check_op("trilinear forward", version, VX_TRILINEAR_FWD_VERSIONS, n, f, block)) return -1;
    if (version >= 3 && f % 4) version = 2;
    size_t total = (size_t)n * f;
    if (version == 1) {
        dim3 threads(16, 16), blocks(vx_ceil_div(n, 16), vx_ceil_div(f, 16));
        vx_trilinear_forward_kernel1<<<blocks, threads, 0, st>>>(d_feats, d_points, d_out, n, f);
    } else if (version == 2) {
        int b = block ? block : 256;
        vx_trilinear_forward_kernel2<<<vx_ceil_div(total, b), b, 0, st>>>(d_feats, d_points, d_out, n, f);
    } else if (version == 3) {
        int b = block ? block : 256;
        vx_trilinear_forward_kernel3<<<vx_ceil_div(total / 4, b), b, 0, st>>>(d_feats, d_points, d_out, n, f);
    } else {
        int b = block ? block : 256;
        vx_trilinear_forward_kernel4<<<vx_ceil_div((total / 4 + 1) / 2, b), b, 0, st>>>(d_feats, d_points, d_out, n, f);
    }
    VX_LAUNCH_CHECK("vx_trilinear_forward_kernel");
    return 0;
}

extern "C" int vx_trilinear_backward_stream_cuda(int version, const float *d_dout, const float *d_points,
                                                 float *d_dfeats, int n, int f, int block, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    if (vx__check_op("trilinear backward", version, VX_TRILINEAR_BWD_VERSIONS, n, f, block)) return -1;
    if (version >= 3 && f % 4) version = 2;
    size_t total = (size_t)n * f;
    int b = block ? block : 256;
    if (version == 1) {
        dim3 threads(16, 16), blocks(vx_ceil_div(n, 16), vx_ceil_div(f, 16));
        vx_trilinear_backward_kernel1<<<blocks, threads, 0, st>>>(d_dout, d_points, d_dfeats, n, f);
    } else if (version == 2) {
        vx_trilinear_backward_kernel2<<<vx_ceil_div(total, b), b, 0, st>>>(d_dout, d_points, d_dfeats, n, f);
    } else if (version == 3) {
        vx_trilinear_backward_kernel3<<<vx_ceil_div(total / 4, b), b, 0, st>>>(d_dout, d_points, d_dfeats, n, f);
    } else if (version == 4) {
        size_t smem = (size_t)(b + 2) * 8 * sizeof(float);
        vx_trilinear_backward_kernel4<<<vx_ceil_div(total / 4, b), b, smem, st>>>(d_dout, d_points, d_dfeats, n, f);
    } else {
        vx_trilinear_backward_kernel5<<<vx_ceil_div((total / 4 + 1) / 2, b), b, 0, st>>>(d_dout, d_points, d_dfeats, n, f);
    }
    VX_LAUNCH_CHECK("vx_trilinear_backward_kernel");
    return 0;
}

static int vx__check_grid(const char *what, const vx_grid_desc *g, int m) {
    if (g->nx < 1 || g->ny < 1 || g->nz < 1 || g->nc < 1 || g->nc > VX_MAX_CHANNELS)
        return vx_error("%s: grid %d x %d x %d x %d is not valid", what, g->nx, g->ny, g->nz, g->nc);
    if (m < 0) return vx_error("%s: %d points", what, m);
    return 0;
}

template <typename T>
static void vx__gather(const vx_grid_desc *g, const T *grid, const float *pts, int m, float *out, cudaStream_t st) {
    const int b = 256;
    if (g->nc % 4 == 0) {
        size_t total = (size_t)m * (g->nc / 4);
        vx_grid_gather_kernel<T, 4><<<vx_ceil_div(total, b), b, 0, st>>>(*g, grid, pts, m, out);
    } else {
        size_t total = (size_t)m * g->nc;
        vx_grid_gather_kernel<T, 1><<<vx_ceil_div(total, b), b, 0, st>>>(*g, grid, pts, m, out);
    }
}

template <typename T>
static void vx__scatter(const vx_grid_desc *g, const float *dout, const float *pts, int m, T *dgrid, cudaStream_t st) {
    const int b = 256;
    if (g->nc % 4 == 0) {
        size_t total = (size_t)m * (g->nc / 4);
        vx_grid_scatter_kernel<T, 4><<<vx_ceil_div(total, b), b, 0, st>>>(*g, dout, pts, m, dgrid);
    } else {
        size_t total = (size_t)m * g->nc;
        vx_grid_scatter_kernel<T, 1><<<vx_ceil_div(total, b), b, 0, st>>>(*g, dout, pts, m, dgrid);
    }
}

extern "C" int vx_grid_gather_stream_cuda(const vx_grid_desc *g, const void *d_grid, int half,
                                          const float *d_pts, int m, float *d_out, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    if (vx__check_grid("grid gather", g, m)) return -1;
    if (m == 0) return 0;
    if (half) vx__gather(g, (const __half *)d_grid, d_pts, m, d_out, st);
    else vx__gather(g, (const float *)d_grid, d_pts, m, d_out, st);
    VX_LAUNCH_CHECK("vx_grid_gather_kernel");
    return 0;
}

extern "C" int vx_grid_scatter_stream_cuda(const vx_grid_desc *g, const float *d_dout, const float *d_pts,
                                           int m, void *d_dgrid, int half, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    if (vx__check_grid("grid scatter", g, m)) return -1;
    if (m == 0) return 0;
    if (half) vx__scatter(g, d_dout, d_pts, m, (__half *)d_dgrid, st);
    else vx__scatter(g, d_dout, d_pts, m, (float *)d_dgrid, st);
    VX_LAUNCH_CHECK("vx_grid_scatter_kernel");
    return 0;
}

// ----------------------------------------------------------------------------------------
// the same on the default stream (the CLI's benchmarks and tests)

extern "C" int vx_trilinear_forward_cuda(int version, const float *d_feats, const float *d_points, float *d_out,
                                         int n, int f, int block) {
    return vx_trilinear_forward_stream_cuda(version, d_feats, d_points, d_out, n, f, block, NULL);
}
extern "C" int vx_trilinear_backward_cuda(int version, const float *d_dout, const float *d_points,
                                          float *d_dfeats, int n, int f, int block) {
    return vx_trilinear_backward_stream_cuda(version, d_dout, d_points, d_dfeats, n, f, block, NULL);
}
extern "C" int vx_grid_gather_cuda(const vx_grid_desc *g, const void *d_grid, int half, const float *d_pts,
                                   int m, float *d_out) {
    return vx_grid_gather_stream_cuda(g, d_grid, half, d_pts, m, d_out, NULL);
}
extern "C" int vx_grid_scatter_cuda(const vx_grid_desc *g, const float *d_dout, const float *d_pts, int m,
                                    void *d_dgrid, int half) {
    return vx_grid_scatter_stream_cuda(g, d_dout, d_pts, m, d_dgrid, half, NULL);
}
