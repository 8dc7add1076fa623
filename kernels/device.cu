/* device.cu - device discovery and the small device helpers (memory, copies, timers,
 * float16 conversion) that every other kernels/ file, backend.c, the bench and the GPU
 * tests use (cuda_device.h). Every runtime call is checked. */
#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.cuh"
#include "cuda_device.h"

/* ---- probe ------------------------------------------------------------------------ */

__global__ void vx_probe_kernel(int *flag) { *flag = 42; }

/* A device counts as usable only when a kernel from this binary runs on it. */
extern "C" int vx_cuda_probe(char *info, size_t cap) {
    int count = 0, *d_flag = NULL, flag = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        if (e == cudaErrorInsufficientDriver) /* also what a machine with no driver reports */
            snprintf(info, cap, "no NVIDIA driver, or one older than this build's CUDA %d.%d runtime",
                     CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        else
            snprintf(info, cap, "%s", cudaGetErrorString(e));
        cudaGetLastError();
        return 0;
    }
    if (count == 0) { snprintf(info, cap, "no CUDA device found"); return 0; }
    cudaDeviceProp p;
    int dev;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess) goto fail; /* device 0, or the one vx_cuda_select made current */
    if ((e = cudaGetDeviceProperties(&p, dev)) != cudaSuccess) goto fail;
    if ((e = cudaMalloc(&d_flag, sizeof(int))) != cudaSuccess) goto fail;
    vx_probe_kernel<<<1, 1>>>(d_flag);
    if ((e = cudaGetLastError()) != cudaSuccess) goto fail;
    if ((e = cudaMemcpy(&flag, d_flag, sizeof flag, cudaMemcpyDeviceToHost)) != cudaSuccess) goto fail;
    cudaFree(d_flag);
    if (flag != 42) { snprintf(info, cap, "%s: test kernel did not run", p.name); return 0; }
    snprintf(info, cap, "%s (sm_%d%d, %d SMs, %.0f GiB)", p.name, p.major, p.minor,
             p.multiProcessorCount, p.totalGlobalMem / 1073741824.0);
    return 1;
fail:
    snprintf(info, cap, "%s", cudaGetErrorString(e));
    if (d_flag) cudaFree(d_flag);
    cudaGetLastError();
    return 0;
}

extern "C" int vx_cuda_select(int index) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return 0;
    }
    cudaError_t e = cudaSetDevice(index % count);
    if (e != cudaSuccess) return vx_error("cudaSetDevice(%d): %s", index % count, cudaGetErrorString(e));
    return 0;
}

extern "C" int vx_cuda_mlp_tc_resolve(int mode, const char *who) {
    if (mode < 0) return 0;
    int dev = 0, major = 0, minor = 0;
    VX_CUDA_CHECK(cudaGetDevice(&dev));
    VX_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    VX_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major >= 8) return 1;
    if (mode > 0)
        return vx_error("%s: --mlp-tensor-cores needs TF32 tensor cores (sm_80 and up; this GPU is sm_%d%d)", who,
                        major, minor);
    vx_warn("%s: the mlp network runs in FP32: this GPU (sm_%d%d) has no TF32 tensor cores (sm_80 and up)", who,
            major, minor);
    return 0;
}

/* ---- memory ----------------------------------------------------------------------- */

extern "C" int vx_cuda_alloc(void **d, size_t bytes, const char *what) {
    *d = NULL;
    cudaError_t e = cudaMalloc(d, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *d = NULL;
        return vx_error("cudaMalloc of %zu bytes for %s: %s", bytes, what, cudaGetErrorString(e));
    }
    return 0;
}

extern "C" void vx_cuda_free(void *d) {
    if (d) cudaFree(d);
}

extern "C" int vx_cuda_upload(void *d, const void *h, size_t bytes) {
    VX_CUDA_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return 0;
}

extern "C" int vx_cuda_download(void *h, const void *d, size_t bytes) {
    VX_CUDA_CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" int vx_cuda_copy(void *d_dst, const void *d_src, size_t bytes) {
    VX_CUDA_CHECK(cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice, 0));
    return 0;
}

extern "C" int vx_cuda_zero(void *d, size_t bytes) {
    VX_CUDA_CHECK(cudaMemsetAsync(d, 0, bytes, 0));
    return 0;
}

extern "C" int vx_cuda_fill_bytes(void *d, int value, size_t bytes) {
    VX_CUDA_CHECK(cudaMemsetAsync(d, value, bytes, 0));
    return 0;
}

extern "C" int vx_cuda_sync(void) {
    VX_CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}

extern "C" size_t vx_cuda_mem_in_use(void) {
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return total - free_b;
}

__global__ void vx_to_half_kernel(const float *__restrict__ src, __half *__restrict__ dst, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    dst[i] = __float2half_rn(src[i]);
}

extern "C" int vx_cuda_to_half(const float *d_src, void *d_dst, size_t n) {
    if (n == 0) return 0;
    vx_to_half_kernel<<<vx_ceil_div(n, 256), 256>>>(d_src, (__half *)d_dst, n);
    VX_LAUNCH_CHECK("vx_to_half_kernel");
    return 0;
}

__global__ void vx_fill_uniform_kernel(float *__restrict__ d, size_t n, unsigned seed, float lo, float hi) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    /* splitmix-style hash of the index: independent values, reproducible for a seed */
    unsigned long long z = (unsigned long long)i + 0x9e3779b97f4a7c15ull * (seed + 1ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    d[i] = lo + (hi - lo) * (float)(z >> 40) * (1.0f / 16777216.0f);
}

extern "C" int vx_cuda_fill_uniform(float *d, size_t n, unsigned seed, float lo, float hi) {
    if (n == 0) return 0;
    vx_fill_uniform_kernel<<<vx_ceil_div(n, 256), 256>>>(d, n, seed, lo, hi);
    VX_LAUNCH_CHECK("vx_fill_uniform_kernel");
    return 0;
}

/* ---- timers ----------------------------------------------------------------------- */

struct vx_cuda_timer {
    cudaEvent_t a, b;
};

extern "C" int vx_cuda_timer_create(vx_cuda_timer **t) {
    *t = (vx_cuda_timer *)vx_calloc(1, sizeof **t, "CUDA timer");
    if (!*t) return -1;
    if (cudaEventCreate(&(*t)->a) != cudaSuccess || cudaEventCreate(&(*t)->b) != cudaSuccess) {
        free(*t);
        *t = NULL;
        return vx_error("%s:%d: cudaEventCreate failed", __FILE__, __LINE__);
    }
    return 0;
}

extern "C" int vx_cuda_timer_start(vx_cuda_timer *t) {
    VX_CUDA_CHECK(cudaEventRecord(t->a, 0));
    return 0;
}

extern "C" int vx_cuda_timer_stop(vx_cuda_timer *t, float *ms) {
    VX_CUDA_CHECK(cudaEventRecord(t->b, 0));
    VX_CUDA_CHECK(cudaEventSynchronize(t->b));
    VX_CUDA_CHECK(cudaEventElapsedTime(ms, t->a, t->b));
    return 0;
}

extern "C" void vx_cuda_timer_destroy(vx_cuda_timer *t) {
    if (!t) return;
    cudaEventDestroy(t->a);
    cudaEventDestroy(t->b);
    free(t);
}
