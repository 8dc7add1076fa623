/* cuda_fit.h - the CUDA twin of fit.h's training steps (kernels/fit.cu), reached from C by
 * fit_backend_cuda.c, `voxray bench fit` and the GPU tests. Present only when the
 * Makefile found nvcc (VX_HAVE_CUDA). */
#ifndef VX_CUDA_FIT_H
#define VX_CUDA_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "fit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device copies of a model's arrays plus its metadata; each vx_fit_*_cuda step does on
 * the device exactly what the vx_fit_*_cpu step of the same name does on the host. */
typedef struct vx_fit_cuda vx_fit_cuda;

/* Upload f's parameters, moments, alive mask and max weights; room for max_batch rays. */
int vx_fit_cuda_create(vx_fit_cuda **out, const vx_fit_model *f, int max_batch);
/* Copy everything back into f (its lattice and box follow the device's); the _params
 * variant copies only the parameters and the alive mask (to write or render) and frees
 * f's gradient, moments and max weights, which a parameters-only copy never uses. */
int vx_fit_cuda_download(const vx_fit_cuda *g, vx_fit_model *f);
int vx_fit_cuda_download_params(const vx_fit_cuda *g, vx_fit_model *f);
void vx_fit_cuda_destroy(vx_fit_cuda *g);
int vx_fit_zero_grad_cuda(vx_fit_cuda *g);
int vx_fit_rays_backward_cuda(vx_fit_cuda *g, const vx_fit_batch *b, float *out_rgb, double *loss);
int vx_fit_tv_backward_cuda(vx_fit_cuda *g, float w_sigma, float w_sh, float fraction, uint64_t seed, float eps,
                            double *term);
int vx_fit_adam_step_cuda(vx_fit_cuda *g, const vx_fit_hparams *h, float lr_sigma, float lr_sh);
int vx_fit_occupancy_cuda(vx_fit_cuda *g, int cell);
int vx_fit_prune_cuda(vx_fit_cuda *g, float thresh, size_t *pruned);
int vx_fit_upsample_cuda(vx_fit_cuda *g, const int res[3]);
int vx_fit_resample_cuda(vx_fit_cuda *g, const double lo[3], const double hi[3], const int res[3]);
int vx_fit_alive_bounds_cuda(vx_fit_cuda *g, int lo[3], int hi[3], size_t *alive);
int vx_fit_update_params_cuda(vx_fit_cuda *g, float stop);
/* The device model's metadata (lattice, box, channels, t; host arrays NULL). */
const vx_fit_model *vx_fit_cuda_model(const vx_fit_cuda *g);
/* Alive voxels (the list the Adam, TV and occupancy kernels run over). */
size_t vx_fit_cuda_alive(const vx_fit_cuda *g);
void vx_fit_track_weights_cuda(vx_fit_cuda *g, int on);
/* Copy the device occupancy grid (vx_fit_occupancy_cuda's, count cells) to occ. */
int vx_fit_cuda_occupancy(const vx_fit_cuda *g, unsigned char *occ, size_t count);

/* Version 2 of the ray step: the training views live on the device and rays are drawn
 * there (vx_fit_pick_pixel, as vx_fit_sample_batch on the host), the per-ray kernel is
 * specialised on the SH degree. set_views uploads d's photos and cameras once. */
int vx_fit_cuda_set_views(vx_fit_cuda *g, const vx_dataset *d);
int vx_fit_rays_sampled_cuda(vx_fit_cuda *g, int n, uint64_t seed, double *loss);
/* Kernel version for vx_fit_rays_backward_cuda: 1 (generic, fit_march.h per ray) or 2
 * (specialised; default). */
int vx_fit_cuda_set_version(vx_fit_cuda *g, int version);
/* Forward render of camera c from the device model into rgb (c->width*c->height*3, host),
 * with the current occupancy grid (rebuild it first). */
int vx_fit_render_cuda(vx_fit_cuda *g, const vx_camera *c, float *rgb);
/* Profiling: when on, every step waits for the device and adds its wall time to a
 * counter; vx_fit_cuda_timings returns the milliseconds since the last call for [0] rays,
 * [1] TV, [2] Adam, [3] occupancy, and resets them. */
void vx_fit_cuda_profile(vx_fit_cuda *g, int on);
void vx_fit_cuda_timings(vx_fit_cuda *g, double ms[4]);

#ifdef __cplusplus
}
#endif

#endif
