/* make_scene.h - deterministic procedural sample scenes (orbs, shell, sh-glass, cloud,
 * phantom) built in memory. `voxray make-scene` writes them to disk; tests and
 * benchmarks call vx_make_scene() directly. */
#ifndef VX_MAKE_SCENE_H
#define VX_MAKE_SCENE_H

#include "grid.h"
#include "scene.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VX_MAKE_SCENE_RES_MIN 8
#define VX_MAKE_SCENE_RES_MAX 1024
#define VX_MAKE_SCENE_RES_DEFAULT 128
#define VX_MAKE_SCENE_SPARSE_RES_MAX 4096 /* --sparse, shell and orbs (the others stop at RES_MAX) */

/* "orbs, shell, sh-glass, cloud, phantom" (for help text and errors). */
const char *vx_make_scene_names(void);
/* 1 if NAME is one of the scenes above. */
int vx_make_scene_known(const char *name);

/* Build scene `name` at res^3 lattice points in [-1,1]^3 (align_corners): the grid into
 * *g (allocated here; free with vx_grid_free) and the decoder, background, step, camera
 * and name into *s. g may be &s->grid; other fields of s->grid are left alone.
 * The result depends only on (name, res): same bytes on every run and thread count.
 * Returns 0, or -1 with vx_error set (unknown name, res out of 8..1024, no memory). */
int vx_make_scene(const char *name, int res, vx_grid *g, vx_scene *s);

/* The same scene as sparse storage (g->sparse), built tile by tile without the dense grid
 * (vx_sparse_builder_source): the scene is evaluated only at bricks its density bound
 * cannot rule out, and memory is the kept bricks plus a slab of tiles. Bricks follow the drop
 * rule of sparse_grid.h with the scene's decoder, background 0 and `threshold`, so the
 * result equals vx_sparse_from_dense_bg(dense scene, decoder, threshold, zeros). shell and
 * orbs skip bricks their density provably misses and go to res 4096; sh-glass, cloud
 * (fog everywhere) and phantom (a solid head) stop at VX_MAKE_SCENE_RES_MAX. */
int vx_make_scene_sparse(const char *name, int res, float threshold, vx_grid *g, vx_scene *s);

/* Write DIR/grid.npy (float16 when half) and DIR/scene.json for a built scene; both are
 * written to temporary files first and renamed only when both succeeded. */
int vx_make_scene_write(const char *dir, const vx_grid *g, const vx_scene *s, int half);
/* Same; a sparse g goes to DIR/grid.sparse.npz (deflated unless deflate is 0) and the
 * manifest names it. */
int vx_make_scene_write_ex(const char *dir, const vx_grid *g, const vx_scene *s, int half, int deflate);

/* The nine degree-2 SH coefficients (svox2 order, see vx_sh_basis) of the function
 * f(d) = c + lin·d + dᵀ Q d on the unit sphere (Q symmetric, row-major 3x3). Exact:
 * sum_i k[i] * b_i(d) == f(d) for every unit d. sh-glass uses it to paint highlights. */
void vx_sh2_from_quadratic(double c, const double lin[3], const double q[9], float k[9]);

#ifdef __cplusplus
}
#endif

#endif
