/* load.cuh - NC channels of one lattice point into registers as floats, from float32 or
 * float16 storage, with 16- or 8-byte vector loads when NC % 4 == 0. The renderer's and the
 * fit's kernels read voxels only through these. */
#ifndef VX_LOAD_CUH
#define VX_LOAD_CUH

#include <cuda_fp16.h>

/* The caller makes sure that p is 16-byte (float) or 8-byte (half) aligned when NC % 4 == 0:
 * the channel stride is then a multiple of 4. */
template <int NC> __device__ __forceinline__ void vx_load_point(const float *__restrict__ p, float *v) {
    if constexpr (NC % 4 == 0) {
#pragma unroll
        for (int j = 0; j < NC; j += 4) {
            float4 q = __ldg((const float4 *)(p + j));
            v[j] = q.x; v[j + 1] = q.y; v[j + 2] = q.z; v[j + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < NC; j++) v[j] = __ldg(p + j);
    }
}
template <int NC> __device__ __forceinline__ void vx_load_point(const __half *__restrict__ p, float *v) {
    if constexpr (NC % 4 == 0) {
#pragma unroll
        for (int j = 0; j < NC; j += 4) {
            uint2 q = __ldg((const uint2 *)(p + j));
            float2 a = __half22float2(*(__half2 *)&q.x), b = __half22float2(*(__half2 *)&q.y);
            v[j] = a.x; v[j + 1] = a.y; v[j + 2] = b.x; v[j + 3] = b.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < NC; j++) v[j] = __half2float(p[j]);
    }
}

#endif
