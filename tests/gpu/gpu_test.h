/* gpu_test.h - what the CUDA test programs share: the OK() check that fails with
 * vx_errmsg(), a seeded LCG (seed from the clock, printed for replay) and the group
 * setup that skips the whole program with a clear line when no CUDA device is usable. */
#ifndef VX_GPU_TEST_H
#define VX_GPU_TEST_H

#include <time.h>

#include "vx_common.h"
#include "cuda_device.h"

#define OK(call) do { if ((call) != 0) fail_msg("%s: %s", #call, vx_errmsg()); } while (0)

static unsigned g_seed;

/* uniform in [lo, hi) */
static inline float frand(float lo, float hi) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(g_seed >> 8) / 16777216.0f;
}

static inline int setup(void **state) {
    (void)state;
    char info[256];
    if (!vx_cuda_probe(info, sizeof info)) {
        print_error("no usable CUDA device: %s\n", info);
        return -1;
    }
    g_seed = (unsigned)time(NULL);
    print_message("device: %s, seed %u\n", info, g_seed);
    return 0;
}

#endif
