/* fit_report.h - what `voxray fit` and `voxray eval` show of a model against photos: the
 * PSNR/SSIM table of a dataset's views, and photo|render pairs written as one PNG.
 * Called by cmd/fit.c, cmd/eval.c and the training loop's validation (fit_train.c). */
#ifndef VX_FIT_REPORT_H
#define VX_FIT_REPORT_H

#include "dataset.h"
#include "render.h"

/* Photo | render side by side (the render's size), written as one PNG at path. */
int vx_fit_write_pair(const char *path, const float *photo, const vx_frame *r);

/* Renders view v of d into fr (allocated by the callee); 0 or -1. */
typedef int (*vx_fit_render_fn)(void *ctx, const vx_dataset *d, int v, vx_frame *fr);

/* Elevation of the camera's eye above the z = 0 plane seen from the origin, in degrees
 * (z is up in the NeRF synthetic scenes): low views are the ones no training photo resembles. */
double vx_fit_view_elevation(const vx_camera *c);

/* Angle in degrees, seen from the origin, between camera c's eye and the nearest of the n
 * training cameras' eyes (NAN when n is 0). The NeRF synthetic cameras circle the origin at
 * one distance, so this is how far a held-out view lies from every training photo: on lego
 * the four worst test views are four of the five farthest (11-15 degrees; docs/FIT.md). */
double vx_fit_view_gap(const vx_camera *c, const vx_camera *train, int n);

/* PSNR/SSIM, camera elevation and gap to the n training cameras (none: n 0, the column reads
 * "-") of every view of d rendered by fn, printed on stdout under `title` as a table with
 * the mean, a line naming the worst view and the lowest camera, and (n > 0) a line naming
 * the view farthest from the training cameras; photo|render pairs go to
 * save_dir/final_NNN.png when save_dir. */
int vx_fit_report(const char *title, const vx_dataset *d, const vx_camera *train, int n, vx_fit_render_fn fn, void *ctx,
                  const char *save_dir, double *mean_psnr, double *mean_ssim);

/* A vx_fit_render_fn over a vx_renderer (backend.h) passed as ctx. */
int vx_fit_render_renderer(void *ctx, const vx_dataset *d, int v, vx_frame *fr);

#endif
