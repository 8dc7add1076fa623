/* render_store.cuh - where the renderer's kernels read a lattice point: dense (z, y, x, c)
 * or the apron blocks of a sparse grid (sparse_apron.h), float32 or float16, and the
 * channel count of each decoder as a constant. Included by render.cu and render_mlpd.cuh
 * (and by the emulated test of the latter, tests/emu). */
#ifndef VX_RENDER_STORE_CUH
#define VX_RENDER_STORE_CUH

#include <limits.h>

#include "decode.h"
#include "load.cuh"
#include "march.h"
#include "sparse.h"
#include "sparse_apron.h"

template <int DEC, int DEG> struct vx_dec_traits {
    static constexpr int nc = DEC == VX_DEC_RGBA ? 4 : DEC == VX_DEC_SH ? 1 + 3 * (DEG + 1) * (DEG + 1)
                            : DEC == VX_DEC_MLP ? VX_MLP_CHANNELS : 1;
};

/* The block a ray is in: consecutive samples mostly stay in one brick, so its table entry is
 * read once, not once a sample (the table read is a dependent load before the voxels').
 * 32-bit: the upload refuses tables of 2^32 entries or more (lattices past 16384^3). */
struct vx_brick_cache {
    unsigned key;    /* table index of the cached brick, or UINT_MAX */
    int slot;        /* its block */
};
/* Where a lattice point's channels live: dense (z, y, x, c), or the apron blocks of a sparse
 * grid, float32 or float16. corners<NC>() gives the eight corner pointers of a trilinear cell
 * (NC: the decoder's channels, the apron blocks' channel stride). */
template <typename T> struct vx_dense_store {
    typedef T elem;
    const T *data;
    size_t sy, sz, nc;        /* element strides of y, z and x (= channels) */
    __device__ __forceinline__ const T *voxel(int x, int y, int z) const {
        return data + (size_t)z * sz + (size_t)y * sy + (size_t)x * nc;
    }
    template <int NC> __device__ __forceinline__ void corners(const vx_cell &c, const T *p[8], vx_brick_cache &) const {
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int x, y, z;
            vx_cell_corner(&c, k, &x, &y, &z);
            p[k] = voxel(x, y, z);
        }
    }
};
/* Sparse: every cell lies in the block of the brick holding its low corner (sparse.h), and
 * bricks without data point at the background block, so a sample is one (cached) table read
 * and eight loads from one block at constant offsets from its low corner (one address
 * register, immediate offsets): no test for absence, no cell straddling bricks. */
template <typename T> struct vx_apron_store {
    typedef T elem;
    const int32_t *table;     /* block slot of every brick */
    const T *pool;            /* blocks of VX_APRON_VOXELS * NC elements */
    int bn[3];
    template <int NC> __device__ __forceinline__ void corners(const vx_cell &c, const T *p[8], vx_brick_cache &cc) const {
        unsigned k = (unsigned)vx_sparse_brick_index(bn, c.x[0], c.y[0], c.z[0]);
        if (k != cc.key) {
            cc.key = k;
            cc.slot = __ldg(table + k);
        }
        const T *p0 = pool + (size_t)cc.slot * (VX_APRON_VOXELS * NC) + vx_apron_cell(NC, c.x[0], c.y[0], c.z[0]);
#pragma unroll
        for (int q = 0; q < 8; q++) p[q] = p0 + vx_apron_corner(NC, q);
    }
};

/* A frame's counters (samples marched, rays that met the volume) from every thread of a
 * block of whole warps (8 x 8): one atomic each per warp. */
__device__ __forceinline__ void vx_frame_counters_add(unsigned long long *counters, unsigned samples, unsigned hit) {
#if __CUDA_ARCH__ >= 800
    unsigned s = __reduce_add_sync(0xffffffffu, samples);
    unsigned h = __reduce_add_sync(0xffffffffu, hit);
#else /* PTX for older GPUs: the same sums by shuffles */
    unsigned s = samples, h = hit;
    for (int o = 16; o; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        h += __shfl_xor_sync(0xffffffffu, h, o);
    }
#endif
    if ((threadIdx.y * blockDim.x + threadIdx.x) % 32 == 0) {
        if (s) atomicAdd(counters, (unsigned long long)s);
        if (h) atomicAdd(counters + 1, (unsigned long long)h);
    }
}

/* march.h's six gradient probes of channel 0 around index-space point p, read from store
 * (NC channels a voxel): f[q] the trilinear value at vx_gradient_probe(p, q). The scalar
 * decoder's shading and the mlp's reflected direction take them at a sample with density. */
template <int NC, class S>
__device__ __forceinline__ void vx_store_probes(const S &store, vx_brick_cache &cache, const vx_march_params *m,
                                                vx_vec3 p, float f[6]) {
    for (int q = 0; q < 6; q++) {
        vx_cell c;
        const typename S::elem *cp[8];
        float v[8][1];
        const float *vp[8] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
        vx_trilinear_cell(m->nx, m->ny, m->nz, vx_gradient_probe(p, q), &c);
        store.template corners<NC>(c, cp, cache);
#pragma unroll
        for (int k = 0; k < 8; k++) vx_load_point<1>(cp[k], v[k]);
        vx_cell_blend(&c, vp, 1, f + q);
    }
}

#endif
