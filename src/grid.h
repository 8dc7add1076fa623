/* grid.h - the voxel grid: a (Z, Y, X, C) float32 lattice in memory, the dtype it came
 * from, and where it sits in the world (index-to-world affine + sample centring).
 * Loaders fill it (npy.c, formats/); the renderers read it. */
#ifndef VX_GRID_H
#define VX_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    VX_DT_F32 = 0, VX_DT_F16, VX_DT_F64, VX_DT_U8, VX_DT_I8, VX_DT_U16, VX_DT_I16,
    VX_DT_U32, VX_DT_I32
} vx_dtype;

typedef struct {
    int nx, ny, nz, nc;   /* lattice size (x fastest) and channels */
    float *data;          /* nz*ny*nx*nc floats, channel innermost; NULL when sparse */
    vx_dtype src_dtype;   /* element type in the file it was read from */
    double i2w[12];       /* row-major 3x4: world = M * (x, y, z) + t, x/y/z lattice indices */
    int align_corners;    /* 1: box = lattice hull; 0: box reaches half a cell past it */
    char source[1024];    /* file it came from, for messages */
    vx_sparse *sparse;    /* NULL: dense (data holds the lattice); else sparse storage, data == NULL,
                           * nx/ny/nz/nc still the lattice (sparse_grid.h) */
} vx_grid;

/* Allocate nz*ny*nx*nc floats after checking every size (1..65536 per axis, channels
 * 1..64, total under VX_MAX_GRID_BYTES). Sets identity placement. */
int vx_grid_alloc(vx_grid *g, int nx, int ny, int nz, int nc, const char *source);
void vx_grid_free(vx_grid *g);             /* frees data or the sparse storage */
size_t vx_grid_count(const vx_grid *g); /* nx*ny*nz*nc (of the lattice, dense or sparse) */

/* Copy everything but the storage: size, channels, source dtype, placement, source name
 * (dst->data and dst->sparse are left alone). */
void vx_grid_copy_meta(const vx_grid *src, vx_grid *dst);

/* The nc floats of lattice point (x, y, z) for dense and sparse grids alike. */
const float *vx_grid_voxel(const vx_grid *g, int x, int y, int z);

/* Visit every lattice voxel's values without expanding sparse storage: fn gets runs of
 * `n` consecutive voxels (n*nc floats) each standing for `weight` voxels. Dense grids give
 * one run; sparse grids give each stored brick's in-lattice rows and the background once,
 * weighted by the number of lattice voxels in absent bricks. Stops when fn returns non-zero
 * and returns that value. */
typedef int (*vx_grid_visit_fn)(void *ctx, const float *v, size_t n, size_t weight);
int vx_grid_visit(const vx_grid *g, vx_grid_visit_fn fn, void *ctx);

/* Place the grid in the axis-aligned box [lo, hi] (align_corners as in grid_sample). */
void vx_grid_set_bbox(vx_grid *g, const double lo[3], const double hi[3], int align_corners);

/* Index-space box the renderer clips to: [0, n-1] or [-0.5, n-0.5] per axis. */
void vx_grid_index_box(const vx_grid *g, float lo[3], float hi[3]);

/* World-space axis-aligned bounds of the box (all 8 corners through the affine). */
void vx_grid_world_bounds(const vx_grid *g, double lo[3], double hi[3]);

/* Placement limits: voxel spacing and world-box coordinates in world units, chosen so
 * that every float the renderers derive (camera distance, its square, sample points,
 * index-space steps) stays finite. */
#define VX_MIN_SPACING 1e-9
#define VX_MAX_SPACING 1e9
#define VX_MAX_WORLD 1e12
/* Largest magnitude of a stored grid value the scene loader accepts (interpolation,
 * density scaling and SH sums of larger ones overflow float). */
#define VX_MAX_GRID_VALUE 1e30f

/* World -> index affine (row-major 3x4). Fails on a singular or non-finite placement, or
 * one outside the limits above. */
int vx_grid_world_to_index(const vx_grid *g, float w2i[12]);

/* Length of each index axis in world units (column norms of the affine). */
void vx_grid_spacing(const vx_grid *g, double sp[3]);

/* Per-channel min/max over finite values (dense or sparse). */
void vx_grid_range(const vx_grid *g, int channel, float *mn, float *mx);

/* Value at quantile q (0..1) of channel 0, from a 4096-bin histogram (dense or sparse). */
float vx_grid_quantile(const vx_grid *g, double q);

const char *vx_dtype_name(vx_dtype t);
size_t vx_dtype_size(vx_dtype t);

#ifdef __cplusplus
}
#endif

#endif
