/* sparse_grid.h - host side of the sparse grid (sparse.h holds the struct and the VX_HD
 * lookup): allocation, the brick drop rule, statistics (sparse.c), building bricks from a
 * dense grid or a procedural source (sparse_build.c) and the .npz file form of docs/FORMAT.md (sparse_io.c). Loaders, `convert`, `info` and
 * make-scene call it; the renderers only read vx_grid.sparse through sparse.h. */
#ifndef VX_SPARSE_GRID_H
#define VX_SPARSE_GRID_H

#include <stddef.h>

#include "decode.h"
#include "grid.h"
#include "sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest brick pool voxray allocates (bytes of float32); sparse grids may exceed the
 * dense VX_MAX_GRID_BYTES since only their live bricks take memory. */
#define VX_MAX_SPARSE_BYTES ((size_t)96 << 30)

/* ---- storage ------------------------------------------------------------------------------ */

/* Size s for an nx*ny*nz lattice of nc channels with nbricks pool bricks: the table
 * (every entry -1) and the pool (uninitialised), background 0. Every size is checked
 * (1..65536 per axis, 1..64 channels, nbricks <= table entries, pool under
 * VX_MAX_SPARSE_BYTES) before anything is allocated; `what` names the source in messages. */
int vx_sparse_alloc(vx_sparse *s, int nx, int ny, int nz, int nc, size_t nbricks, const char *what);
void vx_sparse_free(vx_sparse *s);

/* Bytes of a float32 pool of nbricks bricks of nc channels into *bytes; -1 with a message
 * naming `what` when that overflows, passes VX_MAX_SPARSE_BYTES or the memory budget
 * (vx_mem_budget, --max-memory). */
int vx_sparse_pool_bytes(size_t nbricks, int nc, size_t *bytes, const char *what);

/* Lattice voxels of table slot (bx, by, bz) that lie inside an nx*ny*nz lattice. */
size_t vx_sparse_brick_voxels(int nx, int ny, int nz, int bx, int by, int bz);

/* ---- dense <-> sparse -------------------------------------------------------------------- */

/* The background a dense grid gets for decoder dec: 0 for rgba and sh; for scalar volumes
 * (dec->type scalar, or dec NULL and one channel) the channel minimum over finite values,
 * so a CT's air (-1000) or an MRI's 0 is what absent bricks hold. */
void vx_sparse_default_background(const vx_grid *dense, const vx_decoder *dec, float *bg);

/* The drop rule. Brick B (its voxels inside the lattice) is dropped iff every channel of
 * every voxel equals the background, or dec is given and
 *   vx_decoder_max_sigma(dec, min(lo, bg[0]), max(hi, bg[0])) <= threshold
 * where [lo, hi] is the channel-0 range over B dilated by one voxel on every side (clipped
 * to the lattice): the trilinear footprint of every cell touching B. With threshold 0 every
 * sample in such a cell decodes to sigma 0 from the dense and the sparse grid alike, so the
 * two render the same image. Returns 1 to keep. */
int vx_sparse_keep(const vx_decoder *dec, float threshold, float bg0, int all_background, float lo, float hi);

/* Sparse copy of a dense grid (placement, source and dtype copied; out->data NULL) with
 * the background of vx_sparse_default_background and the rule above (dec may be NULL:
 * only background bricks go). */
/* Channel-0 min / max over lattice points [lo, hi] (inclusive, per axis, inside the
 * lattice), folded into *mn / *mx: present bricks give their voxels, an absent brick its
 * background once. The occupancy grid and the brick drop rule both read ranges this way. */
void vx_sparse_range(const vx_sparse *s, const int lo[3], const int hi[3], float *mn, float *mx);

int vx_sparse_from_dense(const vx_grid *dense, const vx_decoder *dec, float threshold, vx_grid *out);
/* Same with an explicit background (nc floats). */
int vx_sparse_from_dense_bg(const vx_grid *dense, const vx_decoder *dec, float threshold, const float *bg,
                            vx_grid *out);

/* Sparse -> sparse with the drop rule applied again (the input's background kept): equals
 * vx_sparse_from_dense_bg(dense form of in, dec, threshold, in's background) without ever
 * holding the dense form, so `convert --sparse --half/--threshold` works on 2048^3 grids. */
int vx_sparse_rethin(const vx_grid *in, const vx_decoder *dec, float threshold, vx_grid *out);

/* The same on g itself: when the pool holds its bricks in table order (as voxray writes
 * them) the kept ones move down in place, so the peak memory is the grid's own. */
int vx_sparse_rethin_inplace(vx_grid *g, const vx_decoder *dec, float threshold);

/* Dense copy of a sparse (or dense) grid. */
int vx_sparse_to_dense(const vx_grid *sparse, vx_grid *dense);

/* Make g dense in place (no-op for dense grids), for code that needs g->data. */
int vx_grid_densify(vx_grid *g);

/* ---- building (sparse_build.c): brick slab by brick slab from lattice planes, or tile by
 * tile from a procedural source ---------------------------------------------------------- */

typedef struct {
    vx_sparse *s;
    int nx, ny, nz;
    const vx_decoder *dec;  /* NULL: only background bricks are dropped */
    float threshold;
    size_t cap;             /* pool capacity in bricks */
    const char *what;       /* names the grid in messages */
    int count_only;         /* 1: fill the table and count bricks, store no pool */
} vx_sparse_builder;

/* Start: allocates the table (every entry -1), an empty pool, background bg. */
int vx_sparse_builder_init(vx_sparse_builder *b, vx_sparse *s, int nx, int ny, int nz, int nc, const float *bg,
                           const vx_decoder *dec, float threshold, const char *what);
/* Decide and store the bricks of brick slab bz (lattice planes 8bz..8bz+7) from `win`,
 * which holds full planes wz0, wz0+1, ... (each ny*nx*nc floats, x fastest) and must cover
 * planes max(0, 8bz-1) .. min(nz-1, 8bz+8). Bricks are stored in table order, so the
 * result does not depend on how the planes were produced. */
int vx_sparse_builder_slab(vx_sparse_builder *b, const float *win, int wz0, int bz);

/* A lattice given as a function, for vx_sparse_builder_source. */
typedef struct {
    void *user;
    /* The nc floats of lattice points (x0 .. x0+n-1, y, z) into out (x0+n <= nx). Called
     * from several threads at once. */
    void (*row)(void *user, int x0, int n, int y, int z, float *out);
    /* NULL, or 1 only when channel 0 is exactly 0 at every lattice point of the box
     * [lo, hi] (inclusive, inside the lattice): a bound that lets the builder skip bricks
     * without calling row(). It must hold for every box it answers 1 for. */
    int (*empty)(void *user, const int lo[3], const int hi[3]);
} vx_sparse_source;

/* Every brick of a builder just started, from src: tiles of 8^3 bricks, each tested with
 * empty() first and then brick by brick, row() called only for the bricks left and the
 * one-point rim their drop test reads. The drop rule is the slab builder's, so the result
 * (table, pool, bytes) equals slab building from the dense lattice of src. empty() is used
 * only when the rule drops a brick whose grown box has channel 0 = 0 (a decoder whose sigma
 * is 0 there and a background of channel 0 = 0 or below the threshold). Parallel (OpenMP)
 * over the tiles of a slab of tiles; the bricks go to the pool in table order. */
int vx_sparse_builder_source(vx_sparse_builder *b, const vx_sparse_source *src);

/* Finish: trims the pool to its bricks. */
int vx_sparse_builder_finish(vx_sparse_builder *b);

/* ---- statistics ----------------------------------------------------------------------------- */

/* Bricks vx_sparse_from_dense would keep (the default background), without storing them. */
int vx_sparse_count_kept(const vx_grid *dense, const vx_decoder *dec, float threshold, size_t *bricks,
                         size_t *table_entries);

typedef struct {
    size_t bricks;          /* bricks in the pool */
    size_t table_entries;   /* bn[0]*bn[1]*bn[2] */
    double fill;            /* bricks / table_entries */
    size_t bytes_sparse;    /* pool + table in memory (float32) */
    size_t bytes_dense;     /* nx*ny*nz*nc*4 */
} vx_sparse_stats;

void vx_sparse_stats_of(const vx_grid *g, vx_sparse_stats *st);

/* Channel-0 range of every brick grown by one lattice point on each side (clipped to the
 * lattice), absent bricks and neighbours reading as the background: the range the drop
 * rule uses, and what an occupancy grid at brick granularity needs
 * (vx_decoder_max_sigma(dec, lo[k], hi[k]) == 0: no sample in a cell touching brick k has
 * density). lo and hi hold bn[0]*bn[1]*bn[2] floats, table order. */
void vx_sparse_brick_ranges(const vx_grid *g, float *lo, float *hi);

/* ---- files (sparse_io.c): the .npz of docs/FORMAT.md ------------------------------------- */

typedef enum { VX_SPARSE_STORE = 0, VX_SPARSE_DEFLATE = 1 } vx_sparse_compress;

/* 1 if PATH is a zip holding table.npy and pool.npy (a voxray sparse grid). */
int vx_sparse_is_file(const char *path);

/* Read a sparse .npz into g (sparse storage; placed in [-1, 1]^3, align_corners, like a
 * bare .npy). Every member's dtype and shape, the table entries and the values are
 * checked; errors are one line naming the file and the member. */
int vx_sparse_load(const char *path, vx_grid *g);

/* The same for a sort-last piece (piece.h; req may be NULL): the plan from the table's
 * bricks, then only the bricks of req's stored box are kept (a stored pool is read with
 * seeks past the others, a deflated one is streamed through). Grids of one channel load
 * whole (req->done stays 0). */
struct vx_piece_req;
int vx_sparse_load_piece(const char *path, struct vx_piece_req *req, vx_grid *g);

/* Write g (sparse) as a .npz: pool float32, or float16 when half (values past the float16
 * range are refused). Written to a temporary name and renamed when complete. */
int vx_sparse_write(const char *path, const vx_grid *g, int half, vx_sparse_compress compress);

#ifdef __cplusplus
}
#endif

#endif
