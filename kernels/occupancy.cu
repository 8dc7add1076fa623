/* occupancy.cu - builds the empty-space grid on the GPU from the decoded density, the
 * twin of vx_occupancy_build_cpu: a cell is empty only if every lattice value its
 * samples can interpolate (the cell's voxels, the trilinear footprint, one point of
 * margin) decodes to sigma 0. One warp per cell. Called by render.cu. */
#include <cuda_fp16.h>

#include "common.cuh"
#include "cuda_render.h"

__device__ __forceinline__ float vx_chan0(const float *g, size_t i) { return __ldg(g + i); }
__device__ __forceinline__ float vx_chan0(const __half *g, size_t i) { return __half2float(g[i]); }

/* Lattice range [lo, hi] along one axis that occupancy cell c must cover: the cell's
 * points, the +1 corner of its last one, and one point of margin below (as the CPU). */
__device__ __forceinline__ void vx_occ_range(int c, int b, int n, int *lo, int *hi) {
    *lo = max(c * b - 1, 0);
    *hi = min(c * b + b, n - 1);
}

template <typename T>
__global__ void vx_occupancy_kernel(const T *__restrict__ grid, const vx_march_params mp,
                                    unsigned char *__restrict__ occ, size_t ncells) {
    size_t cell = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (cell >= ncells) return; /* whole warps leave together */
    int cx = (int)(cell % mp.occ_n[0]), cy = (int)(cell / mp.occ_n[0] % mp.occ_n[1]);
    int cz = (int)(cell / ((size_t)mp.occ_n[0] * mp.occ_n[1]));
    int x0, x1, y0, y1, z0, z1;
    vx_occ_range(cx, mp.occ_b, mp.nx, &x0, &x1);
    vx_occ_range(cy, mp.occ_b, mp.ny, &y0, &y1);
    vx_occ_range(cz, mp.occ_b, mp.nz, &z0, &z1);
    int sx = x1 - x0 + 1, sy = y1 - y0 + 1, sz = z1 - z0 + 1, count = sx * sy * sz;
    float mn = INFINITY, mx = -INFINITY;
    for (int t = lane; t < count; t += 32) {
        int x = x0 + t % sx, y = y0 + t / sx % sy, z = z0 + t / (sx * sy);
        float v = vx_chan0(grid, (((size_t)z * mp.ny + y) * mp.nx + x) * mp.nc);
        mn = v < mn ? v : mn; /* NaN compares false and is skipped, as on the CPU */
        mx = v > mx ? v : mx;
    }
    for (int o = 16; o; o >>= 1) {
        float a = __shfl_xor_sync(0xffffffffu, mn, o), b = __shfl_xor_sync(0xffffffffu, mx, o);
        mn = a < mn ? a : mn;
        mx = b > mx ? b : mx;
    }
    if (lane == 0) occ[cell] = vx_decoder_max_sigma(&mp.dec, mn, mx) > 0.0f;
}

extern "C" int vx_occupancy_build_cuda(const void *d_grid, int half, const vx_march_params *mp,
                                       unsigned char *d_occ) {
    if (mp->occ_b < 1 || mp->occ_n[0] < 1 || mp->occ_n[1] < 1 || mp->occ_n[2] < 1)
        return vx_error("occupancy: cell size %d / grid %d x %d x %d is not valid", mp->occ_b,
                        mp->occ_n[0], mp->occ_n[1], mp->occ_n[2]);
    size_t ncells = (size_t)mp->occ_n[0] * mp->occ_n[1] * mp->occ_n[2];
    const int block = 256;
    unsigned blocks = vx_ceil_div(ncells * 32, block);
    if (half) vx_occupancy_kernel<__half><<<blocks, block>>>((const __half *)d_grid, *mp, d_occ, ncells);
    else vx_occupancy_kernel<float><<<blocks, block>>>((const float *)d_grid, *mp, d_occ, ncells);
    VX_LAUNCH_CHECK("vx_occupancy_kernel");
    return 0;
}
