/* sparse_apron.h - the apron layout of a sparse grid (sparse.h: VX_APRON, vx_apron_cell):
 * which bricks get a 9^3 block, and the blocks' values, built on the CPU. The CUDA upload
 * (kernels/render.cu) streams these blocks to the device; the host vx_sparse and its file
 * form are unchanged. tests/test_sparse.c checks every block voxel against vx_sparse_voxel. */
#ifndef VX_SPARSE_APRON_H
#define VX_SPARSE_APRON_H

#include <stddef.h>
#include <stdint.h>

#include "sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Block slots for one sparse grid. A brick gets a block when it or one of its seven high
 * neighbours (+x, +y, +z and their combinations) is present: only then can its block hold
 * anything but the background. Every other table entry points at the background block
 * (index nblocks, every voxel the background), so the device never tests for absence. */
typedef struct {
    int n[3];            /* lattice size x, y, z */
    int bn[3];           /* table size (the sparse grid's) */
    int nc;              /* channels a block voxel keeps: the first nc of the grid's */
    int32_t *table;      /* bn[0]*bn[1]*bn[2] entries, table order: block slot, 0..nblocks */
    size_t nblocks;      /* blocks with data, in table order; the pool holds nblocks + 1 */
    size_t *brick_of;    /* nblocks table indices: the brick of each block */
} vx_apron;

/* Plan the blocks of s, an nx*ny*nz lattice, keeping its first nc channels (1..s->nc); no
 * values yet. `what` names the grid in messages. */
int vx_apron_plan(const vx_sparse *s, int nx, int ny, int nz, int nc, vx_apron *a, const char *what);
void vx_apron_free(vx_apron *a);

/* Values of blocks first .. first+count-1 (count * VX_APRON_VOXELS * a->nc floats into out);
 * block index nblocks is the background block. Block voxels past the far faces repeat the
 * nearest lattice point (sparse.h). */
void vx_apron_fill_cpu(const vx_sparse *s, const vx_apron *a, size_t first, size_t count, float *out);

#ifdef __cplusplus
}
#endif

#endif
