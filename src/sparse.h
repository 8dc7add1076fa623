/* sparse.h - the sparse grid: 8^3-voxel bricks in a pool, a dense table from brick
 * coordinates to pool slots, and a per-channel background value for every voxel of an
 * absent brick (OpenVDB's inactive value). The voxel lookup is VX_HD so the CPU march
 * and the CUDA kernels read bricks through the same arithmetic. */
#ifndef VX_SPARSE_H
#define VX_SPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "vx_math.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VX_BRICK_LOG2 3
#define VX_BRICK 8                 /* voxels per brick edge */
#define VX_BRICK_VOXELS 512        /* VX_BRICK^3 */
#define VX_SPARSE_MAX_CHANNELS 64  /* = VX_MAX_CHANNELS (decode.h) */

/* Brick (bx, by, bz) covers lattice points [8bx, 8bx+7] x ... ; table entry
 * (bz*by_n + by)*bx_n + bx holds its pool slot or -1 (absent: every voxel = background).
 * Inside a brick voxels are (z, y, x, c), channel innermost, like the dense grid. Bricks at
 * the far faces are stored whole; their voxels past the lattice are never read. */
typedef struct vx_sparse_s {
    int bn[3];                     /* table size per axis: ceil(n / 8) for x, y, z */
    int nc;                        /* channels per voxel */
    int32_t *table;                /* bn[0]*bn[1]*bn[2] slots or -1 */
    size_t nbricks;                /* bricks in the pool */
    float *pool;                   /* nbricks * VX_BRICK_VOXELS * nc floats */
    float background[VX_SPARSE_MAX_CHANNELS]; /* value of voxels in absent bricks */
} vx_sparse;

/* Element offset of lattice point (x, y, z) in a pool of nc-channel bricks, or -1 when its
 * brick is absent. Typed pools (float16 on the GPU) index with it too. */
VX_HD ptrdiff_t vx_sparse_offset(const int32_t *table, const int bn[3], int nc, int x, int y, int z) {
    int32_t slot = table[((size_t)(z >> VX_BRICK_LOG2) * bn[1] + (y >> VX_BRICK_LOG2)) * bn[0] + (x >> VX_BRICK_LOG2)];
    if (slot < 0) return -1;
    size_t local = ((size_t)(z & (VX_BRICK - 1)) * VX_BRICK + (y & (VX_BRICK - 1))) * VX_BRICK + (x & (VX_BRICK - 1));
    return (ptrdiff_t)(((size_t)slot * VX_BRICK_VOXELS + local) * (size_t)nc);
}

/* The nc floats of lattice point (x, y, z), which must lie inside the lattice. */
VX_HD const float *vx_sparse_voxel(const vx_sparse *s, int x, int y, int z) {
    ptrdiff_t off = vx_sparse_offset(s->table, s->bn, s->nc, x, y, z);
    return off < 0 ? s->background : s->pool + off;
}

#ifdef __cplusplus
}
#endif

#endif
