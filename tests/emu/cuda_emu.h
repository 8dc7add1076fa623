/* cuda_emu.h - runs CUDA kernels of this project on the CPU, for tests on machines without
 * a GPU (CI): each CUDA thread is an OS thread, a block's threads meet at __syncthreads on
 * a std::barrier, blocks run one after another (so block-level shared memory is one static
 * region), atomics take one lock. Device code is compiled as sm_90 code (__CUDA_ARCH__ 900,
 * float4 atomics), so the paths the H200 takes are the ones checked. Slow: small problems
 * only. What it cannot show: races a real GPU would expose, timing, and hardware rounding
 * (expf, FMA contraction), which is why its tests compare with tolerances. */
#ifndef VX_CUDA_EMU_H
#define VX_CUDA_EMU_H

#include <vector_types.h>
#include <vector_functions.h>
#include <cuda_fp16.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __constant__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __constant__
#define __shared__ static
#define __launch_bounds__(...)
#define VX_DYN_SHARED(T, name) extern T name[]

struct vx_emu_block {
    std::barrier<> *bar;
    float *shfl; /* one slot per thread, for warp shuffles */
    unsigned long long *shfl64; /* the same for integer shuffles and reductions */
    float *mma; /* 10 a thread: its tensor-core fragments (vx_emu_mma_tf32) */
};
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim, gridDim;
inline thread_local vx_emu_block *vx_emu_cur;
inline std::mutex vx_emu_atomic_lock;

inline void __syncthreads() { vx_emu_cur->bar->arrive_and_wait(); }

/* Every thread of the block calls the same shuffles in the same order (the kernels here
 * reduce a block's loss that way), so a block-wide exchange is a faithful warp one. */
inline float __shfl_down_sync(unsigned mask, float v, int off) {
    (void)mask;
    unsigned t = threadIdx.x, lane = t & 31;
    vx_emu_cur->shfl[t] = v;
    __syncthreads();
    float r = lane + off < 32 && t + off < blockDim.x ? vx_emu_cur->shfl[t + off] : v;
    __syncthreads();
    return r;
}

/* Integer shuffles and reductions, block-wide in the same way (every thread of the block
 * calls them in the same order): lanes are the thread's linear index mod 32. */
inline unsigned long long vx_emu_linear() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
template <class F> inline unsigned long long vx_emu_exchange(unsigned long long v, F read) {
    unsigned long long t = vx_emu_linear();
    vx_emu_cur->shfl64[t] = v;
    __syncthreads();
    unsigned long long r = read(t, vx_emu_cur->shfl64);
    __syncthreads();
    return r;
}
inline unsigned __shfl_up_sync(unsigned mask, unsigned v, int off) {
    (void)mask;
    return (unsigned)vx_emu_exchange(v, [&](unsigned long long t, const unsigned long long *s) {
        return (t & 31) >= (unsigned)off ? s[t - off] : (unsigned long long)v;
    });
}
inline unsigned long long __shfl_sync(unsigned mask, unsigned long long v, int lane) {
    (void)mask;
    return vx_emu_exchange(v, [&](unsigned long long t, const unsigned long long *s) { return s[(t & ~31ull) + lane]; });
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
    (void)mask;
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    return (unsigned)vx_emu_exchange(v, [&](unsigned long long t, const unsigned long long *s) {
        unsigned long long sum = 0;
        for (unsigned long long k = t & ~31ull; k < (t | 31ull) + 1 && k < nt; k++) sum += s[k];
        return (unsigned long long)(unsigned)sum;
    });
}

/* cvt.rna.tf32.f32: the nearest float with a 10-bit mantissa, ties away from zero. */
inline float vx_emu_tf32(float x) {
    unsigned u;
    std::memcpy(&u, &x, sizeof u);
    u = (u + 0x1000u) & 0xffffe000u;
    std::memcpy(&x, &u, sizeof x);
    return x;
}

/* mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, d = A B + d, for each warp of the
 * block: every thread posts its fragments, then computes its four entries of D from its
 * warp's posts (the layout of the PTX ISA, as kernels/mlp_tile.cuh's vx_mma_tf32 states it:
 * g = lane / 4, q = lane % 4; A(g + 8i, q + 4j) in a[i + 2j], B(q + 4j, g) in b[j],
 * D(g + 8i, 2q + j) in d[2i + j]). Every thread of the block calls it at the same point,
 * as the kernels call the real one. */
inline void vx_emu_mma_tf32(float d[4], const float a[4], const float b[2]) {
    unsigned long long t = vx_emu_linear(), base = t & ~31ull;
    float *s = vx_emu_cur->mma, *mine = s + 10 * t;
    for (int i = 0; i < 4; i++) mine[i] = a[i];
    mine[4] = b[0];
    mine[5] = b[1];
    for (int i = 0; i < 4; i++) mine[6 + i] = d[i];
    __syncthreads();
    auto A = [&](int r, int k) { return s[10 * (base + (r % 8) * 4 + k % 4) + r / 8 + 2 * (k / 4)]; };
    auto B = [&](int k, int n) { return s[10 * (base + n * 4 + k % 4) + 4 + k / 4]; };
    auto C = [&](int r, int n) { return s[10 * (base + (r % 8) * 4 + n / 2) + 6 + n % 2 + 2 * (r / 8)]; };
    int lane = (int)(t & 31), g = lane >> 2, q = lane & 3;
    float out[4];
    for (int e = 0; e < 4; e++) {
        int r = g + 8 * (e >> 1), n = 2 * q + (e & 1);
        float acc = C(r, n);
        for (int k = 0; k < 8; k++) acc = std::fma(vx_emu_tf32(A(r, k)), vx_emu_tf32(B(k, n)), acc);
        out[e] = acc;
    }
    __syncthreads();
    for (int e = 0; e < 4; e++) d[e] = out[e];
}

template <class T> inline T __ldg(const T *p) { return *p; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline int __float_as_int(float f) {
    int i;
    std::memcpy(&i, &f, sizeof i);
    return i;
}

template <class T> inline T vx_emu_add(T *p, T v) {
    std::lock_guard<std::mutex> g(vx_emu_atomic_lock);
    T old = *p;
    *p = old + v;
    return old;
}
inline float atomicAdd(float *p, float v) { return vx_emu_add(p, v); }
inline double atomicAdd(double *p, double v) { return vx_emu_add(p, v); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return vx_emu_add(p, v); }
inline int atomicAdd(int *p, int v) { return vx_emu_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { return vx_emu_add(p, v); }
inline float4 atomicAdd(float4 *p, float4 v) {
    std::lock_guard<std::mutex> g(vx_emu_atomic_lock);
    float4 old = *p;
    p->x += v.x; p->y += v.y; p->z += v.z; p->w += v.w;
    return old;
}
template <class T> inline T vx_emu_max(T *p, T v) {
    std::lock_guard<std::mutex> g(vx_emu_atomic_lock);
    T old = *p;
    if (v > old) *p = v;
    return old;
}
inline int atomicMax(int *p, int v) { return vx_emu_max(p, v); }
inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) { return vx_emu_max(p, v); }

/* kernel<<<grid, block>>>(args...): blocks in order, each block's threads at once. */
template <class K, class... A> void vx_emu_launch(dim3 grid, dim3 block, K kernel, A... args) {
    gridDim = grid;
    blockDim = block;
    unsigned nt = block.x * block.y * block.z;
    std::vector<float> shfl(nt);
    std::vector<unsigned long long> shfl64(nt);
    std::vector<float> mma(10 * (size_t)nt);
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                std::barrier<> bar((std::ptrdiff_t)nt);
                vx_emu_block blk = {&bar, shfl.data(), shfl64.data(), mma.data()};
                std::vector<std::thread> th;
                th.reserve(nt);
                for (unsigned t = 0; t < nt; t++)
                    th.emplace_back([&, t] {
                        vx_emu_cur = &blk;
                        blockIdx = make_uint3(bx, by, bz);
                        threadIdx = make_uint3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
                        kernel(args...);
                    });
                for (auto &x : th) x.join();
            }
}

#define __CUDA_ARCH__ 900

#endif
