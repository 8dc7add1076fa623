/* common.cuh - the CUDA error checks every CUDA file in kernels/ uses: a failed runtime call
 * or launch records "file:line: call: reason" through vx_error() and returns -1, so
 * the C side reports it as one line. Included by the .cu files only; memory, copies,
 * synchronisation and timers go through cuda_device.h (kernels/device.cu). */
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

/* The launch just made, as a value: 0, or -1 with "file:line: launch of NAME: reason"
 * recorded (for paths that must clean up before returning). Configuration errors show
 * here; asynchronous faults surface at the next synchronising call, itself checked. */
static inline int vx_cuda_launch_status(const char *file, int line, const char *name) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return 0;
    return vx_error("%s:%d: launch of %s: %s", file, line, name, cudaGetErrorString(e));
}
#define VX_LAUNCH_STATUS(name) vx_cuda_launch_status(__FILE__, __LINE__, name)

/* Check the launch just made inside a function returning int; on failure return -1. */
#define VX_LAUNCH_CHECK(name)                                                            \
    do {                                                                                 \
        if (VX_LAUNCH_STATUS(name)) return -1;                                           \
    } while (0)

static inline unsigned vx_ceil_div(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

#endif
