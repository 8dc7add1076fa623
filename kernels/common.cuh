/* common.cuh - the CUDA error checks every CUDA file in kernels/ uses: a failed runtime call
 * or launch records "file:line: call: reason" through vx_error() and returns -1, so
 * the C side reports it as one line. Included by the .cu files only. */
#ifndef VX_COMMON_CUH
#define VX_COMMON_CUH

#include <cuda_runtime.h>

#include "vx_common.h"

/* Check a runtime call inside a function returning int; on failure record and return -1. */
#define VX_CUDA_CHECK(call)                                                              \
    do {                                                                                 \
        cudaError_t vx__e = (call);                                                      \
        if (vx__e != cudaSuccess)                                                        \
            return vx_error("%s:%d: %s: %s", __FILE__, __LINE__, #call,                 \
                            cudaGetErrorString(vx__e));                                  \
    } while (0)

/* Check the launch just made (configuration errors; asynchronous faults surface at the
 * next synchronising call, which is itself checked). */
#define VX_LAUNCH_CHECK(name)                                                            \
    do {                                                                                 \
        cudaError_t vx__e = cudaGetLastError();                                          \
        if (vx__e != cudaSuccess)                                                        \
            return vx_error("%s:%d: launch of %s: %s", __FILE__, __LINE__, name,        \
                            cudaGetErrorString(vx__e));                                  \
    } while (0)

static inline unsigned vx_ceil_div(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

#endif
