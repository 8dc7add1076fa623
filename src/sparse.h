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

/* ---- the apron layout: the CUDA renderer's device form of a sparse grid (sparse_apron.h) ----
 * The block of brick (bx, by, bz) holds lattice points [8bx, 8bx+8] x [8by, 8by+8] x [8bz, 8bz+8]
 * (the brick and its +1 neighbours on the high side, read through the table when it is built),
 * (z, y, x, c) inside, channel innermost; points past the lattice's far faces hold the nearest
 * lattice point's value. A trilinear cell's eight corners then all lie in the block of the
 * brick that holds its low corner, at fixed offsets from it (an axis of one lattice point
 * reads its replica at +1): one table read and eight loads from one block. */
#define VX_APRON 9                 /* lattice points per block edge */
#define VX_APRON_VOXELS 729        /* VX_APRON^3 */

/* Voxel index inside a block of lattice point (8bx + lx, 8by + ly, 8bz + lz), l* in 0..8. */
VX_HD int vx_apron_voxel(int lx, int ly, int lz) { return (lz * VX_APRON + ly) * VX_APRON + lx; }

/* Table index of the brick holding lattice point (x, y, z): the block a cell with that low
 * corner reads. */
VX_HD size_t vx_sparse_brick_index(const int bn[3], int x, int y, int z) {
    return ((size_t)(z >> VX_BRICK_LOG2) * bn[1] + (y >> VX_BRICK_LOG2)) * bn[0] + (x >> VX_BRICK_LOG2);
}

/* Element offset inside its block of the cell with low corner (x0, y0, z0), and of corner k
 * (vx_cell's order, k = 4 kz + 2 ky + kx) from there, for nc channels a voxel. */
VX_HD int vx_apron_cell(int nc, int x0, int y0, int z0) {
    return vx_apron_voxel(x0 & (VX_BRICK - 1), y0 & (VX_BRICK - 1), z0 & (VX_BRICK - 1)) * nc;
}
VX_HD int vx_apron_corner(int nc, int k) { return vx_apron_voxel(k & 1, (k >> 1) & 1, k >> 2) * nc; }

#ifdef __cplusplus
}
#endif

#endif
