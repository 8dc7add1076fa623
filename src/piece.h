/* piece.h - sort-last pieces of a grid: a k-d split of the 8^3 brick table into N boxes
 * balanced by stored voxels (piece_split.c), each piece's grid cut from a loaded grid or
 * read from a .npy / sparse .npz with only its bricks (piece_io.c, sparse_io.c), the
 * visibility order of the pieces from an eye, and front-to-back compositing of their
 * partial images. The MPI driver (src/mpi/) and tests/test_piece.c use it; see
 * docs/SCALING.md for the rules (ownership of samples, overlap, early termination). */
#ifndef VX_PIECE_H
#define VX_PIECE_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "grid.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VX_PIECE_MAX 65536 /* pieces one plan may hold */

/* A node of the k-d tree: a split (axis >= 0; children lo, hi; bricks < plane go low) or
 * a leaf (axis -1; lo is the piece index). */
typedef struct {
    int axis, plane, lo, hi;
} vx_piece_node;

typedef struct {
    int count;              /* pieces */
    int n[3];               /* lattice size x, y, z */
    int bn[3];              /* brick table size: ceil(n / 8) */
    int nnodes;
    vx_piece_node *nodes;   /* 2 count - 1 nodes, root first */
    int (*box)[6];          /* per piece: owned bricks [box[0], box[1]) x [box[2], box[3]) x [box[4], box[5]) */
    uint64_t *weight;       /* per piece: the stored voxels it owns */
} vx_piece_plan;

/* Split a brick table of bn bricks (lattice n) into count pieces. weight (table order,
 * bn[0]*bn[1]*bn[2] values) is what each brick stores (0: absent), or NULL for a dense
 * grid (every brick its lattice voxels). Deterministic: every rank gets the same plan. */
int vx_piece_plan_make(vx_piece_plan *p, const int n[3], int count, const uint32_t *weight);
void vx_piece_plan_free(vx_piece_plan *p);

/* What piece i owns in index space (half-open, +-3e38 where it reaches past the grid) and
 * the bricks it stores: its own plus the overlap trilinear reads past its high faces (one
 * brick layer), and one below when lo_margin (gradient shading reads half a voxel back). */
void vx_piece_own_box(const vx_piece_plan *p, int i, float lo[3], float hi[3]);
void vx_piece_store_box(const vx_piece_plan *p, int i, int lo_margin, int blo[3], int bhi[3]);

/* Pieces front to back as seen from index-space point eye (every ray from it meets them in
 * this order): order[k] is the k-th piece. */
void vx_piece_order(const vx_piece_plan *p, const float eye[3], int *order);

/* ---- partial images: per pixel {r, g, b, T} (+ depth when stride is 5) -------------------- */

/* A partial frame (rendered with the piece's ownership box, vx_render_opts.own, on a
 * black background: rgb is then its premultiplied colour) -> packed floats. */
void vx_piece_pack(const vx_frame *f, int stride, float *out);
/* Front-to-back "over" of npix packed pixels from n partials, parts[order[0]] nearest. */
void vx_piece_composite(const float *const *parts, const int *order, int n, size_t npix, int stride, float *out);
/* Packed composite -> frame rows [row0, row0 + rows) with the background bg added. */
void vx_piece_unpack(const float *in, int stride, const float bg[3], vx_frame *f, int row0, int rows);

/* ---- piece grids (piece_io.c) ----------------------------------------------------------- */

/* Sparse storage holding only the bricks in [blo, bhi) of g (dense or sparse), with g's
 * lattice size and placement: g is replaced by it (the rest is freed). */
int vx_piece_cut(vx_grid *g, const int blo[3], const int bhi[3]);

/* Per-brick stored voxels of a loaded grid, the weights vx_piece_plan_make takes
 * (dense: NULL, every brick counts). *w is malloc'd or NULL. */
int vx_piece_weights(const vx_grid *g, uint32_t **w);

/* A request from the sort-last driver to the scene loader (vx_load_opts.piece): .npy and
 * sparse .npz grids with more than one channel are read piece-wise (plan made from the
 * file's brick table, only the stored box read); everything else loads whole and done
 * stays 0 (the driver then cuts). */
typedef struct vx_piece_req {
    int count, index;       /* pieces, and which one this process keeps */
    int lo_margin;          /* bricks kept behind the low faces: 1 where samples read the
                             * gradient probes half a voxel behind them (the scene loader sets
                             * it for the mlp's reflected direction) */
    int done;               /* set by the loader when it read only the piece */
    vx_piece_plan plan;     /* filled when done */
} vx_piece_req;

/* The .npy reader for a request: the header, then only the rows of the stored box. */
int vx_piece_load_npy(const char *path, vx_piece_req *req, vx_grid *g);

#ifdef __cplusplus
}
#endif

#endif
