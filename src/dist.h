/* dist.h - `voxray render` as one of several processes under mpirun or srun: frames dealt
 * across ranks (--turntable, --path), or one frame rendered sort-last (each rank a piece
 * of the grid, partial images composited front to back on the ranks, written by rank 0).
 * src/mpi/dist_mpi.c implements it over MPI (make MPI=1); src/dist_none.c is the one-
 * process build, which refuses to run as several. src/dist.c holds what needs no MPI.
 * Every wait on other ranks has a deadline (VOXRAY_MPI_TIMEOUT seconds, default 600):
 * then, or on any error on any rank, the whole job ends with one line saying why. */
#ifndef VX_DIST_H
#define VX_DIST_H

#include "backend.h"
#include "piece.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vx_dist vx_dist;

/* Join the job when started by an MPI launcher: *d is then the job (also for one rank);
 * otherwise *d = NULL and voxray runs as one process. Fails (-1, vx_error) when launched
 * as several processes by a build without MPI. */
int vx_dist_begin(vx_dist **d);
/* Wait for every rank (deadline) and leave the job; frees d. */
int vx_dist_end(vx_dist *d);
int vx_dist_rank(const vx_dist *d);   /* 0 for NULL */
int vx_dist_size(const vx_dist *d);   /* 1 for NULL */
/* One line "voxray: rank R/N: msg" on stderr, then the whole job ends (exit code 1). */
void vx_dist_fail(vx_dist *d, const char *msg);
/* Test hook (tests/test_mpi.sh): VOXRAY_MPI_FAULT=RANK:kill|stall makes that rank die or
 * hang here, to check that the others end the job. */
void vx_dist_fault_point(vx_dist *d);
/* The GPU of this rank (local rank modulo the devices) when the backend may be CUDA. */
int vx_dist_pick_device(vx_dist *d, vx_backend_kind want);

/* ---- frame-parallel ------------------------------------------------------------------------ */

/* Does this rank render frame k (round robin)? */
int vx_dist_frame_mine(const vx_dist *d, int k);
/* This rank finished frame k: rank 0 counts it, the others tell rank 0. */
int vx_dist_frame_done(vx_dist *d, int k, long long samples, double ms);
/* Rank 0: the next frame another rank reported (1), none pending (0); with wait, blocks
 * until one arrives (deadline from the last report). */
int vx_dist_frame_next(vx_dist *d, int wait, int *k, long long *samples, double *ms);

/* ---- sort-last ----------------------------------------------------------------------------- */

/* After the scene is loaded (with vx_load_opts.piece = req): make this rank's piece (cut
 * from the whole grid when the loader read it whole), keep the plan in d, and set o to
 * render the piece's partial image (its ownership box, black background); bg receives
 * the background the composite gets. */
int vx_dist_piece_setup(vx_dist *d, vx_piece_req *req, vx_scene *s, vx_render_opts *o, float bg[3]);
/* Composite every rank's partial f (as rendered) in front-to-back order from the camera:
 * rank 0's f becomes the full frame; samples are summed onto rank 0. w2i: the volume's. */
int vx_dist_composite(vx_dist *d, const float w2i[12], const vx_camera *cam, vx_frame *f);

/* No-MPI part (dist.c): the piece of req for scene s (cut when the loader did not read it
 * piece-wise) and the render options of its partial image. */
int vx_dist_piece_make(vx_piece_req *req, vx_scene *s, vx_render_opts *o, float bg[3]);

#ifdef __cplusplus
}
#endif

#endif
