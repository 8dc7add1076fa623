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
typedef struct vx_fit_device vx_fit_device;

/* Upload f's parameters, moments, alive mask and max weights; room for max_batch rays. */
int vx_fit_model_upload_cuda(vx_fit_device **out, const vx_fit_model *f, int max_batch);
/* Copy everything back into f (its lattice and box follow the device's); the _params
 * variant copies only the parameters and the alive mask (to write or render) and frees
 * f's gradient, moments and max weights, which a parameters-only copy never uses. */
int vx_fit_model_download_cuda(const vx_fit_device *g, vx_fit_model *f);
int vx_fit_params_download_cuda(const vx_fit_device *g, vx_fit_model *f);
void vx_fit_model_free_cuda(vx_fit_device *g);
int vx_fit_zero_grad_cuda(vx_fit_device *g);
int vx_fit_rays_backward_cuda(vx_fit_device *g, const vx_fit_batch *b, float *out_rgb, double *loss);
int vx_fit_tv_backward_cuda(vx_fit_device *g, float w_sigma, float w_sh, float fraction, uint64_t seed, float eps,
                            double *term);
int vx_fit_adam_step_cuda(vx_fit_device *g, const vx_fit_hparams *h, float lr_sigma, float lr_sh);
/* The mlp decoder's weights (after vx_fit_adam_step_cuda, whose step count it shares). */
int vx_fit_adam_step_mlp_cuda(vx_fit_device *g, const vx_fit_hparams *h, float lr);
/* Tests: hold at most `records` of the mlp ray step's per-sample records (fewer than it
 * allocated), so a batch takes several passes. */
void vx_fit_set_mlp_records_cuda(vx_fit_device *g, unsigned long long records);
/* The mlp decoder's ray step: 1 the network inside the ray kernel (fit_mlp.cuh), 2 batched
 * into tiled products over the step's samples (fit_mlp_batch.cuh; the default, 0 means it:
 * 34x the rays/s of 1 on the H100, docs/BENCHMARKS.md). */
int vx_fit_set_mlp_kernel_cuda(vx_fit_device *g, int kernel);
/* The batched step's gather: 1 (the default: march each ray to count its composited samples,
 * reserve them, march again to write them) or 2 (one march into a slot of staging rows a
 * ray, then the rows copied to their reservation; 1.2 GB more device memory for 65 536 rays;
 * fit_mlp_batch.cuh). Not yet timed on a device: `bench fit` times both. */
int vx_fit_set_mlpb_gather_cuda(vx_fit_device *g, int version);
/* The batched step's network with its hidden layers on the tensor cores (TF32 operands,
 * FP32 sums; mlp_tile.cuh) or in FP32 (0, the default); an error on a GPU below sm_80. */
int vx_fit_set_mlp_tc_cuda(vx_fit_device *g, int on);
/* With vx_fit_profile_cuda on: the batched mlp step's time in its gather, network forward,
 * composite, network backward and scatter kernels (ms, summed since the last call) and the
 * samples it ran the network on; resets both. */
void vx_fit_mlp_timings_cuda(vx_fit_device *g, double ms[5], double *samples);
/* The coarse level (fit_coarse.h; no-ops without one): restrict the gradient before
 * vx_fit_adam_step_cuda consumes it (then zero the --coarse-only channels of it, as
 * vx_fit_coarse_restrict_cpu), apply the coarse Adam step after it (step size lr, the
 * density's lr_sigma with --coarse-density, as vx_fit_coarse_apply_cpu). */
int vx_fit_coarse_restrict_cuda(vx_fit_device *g);
/* The restriction kernel: 1 (per-value masked window sums) or 2 (the default: contiguous
 * brick rows, a shared weight table, only the window's vertices; fit_coarse.cuh). Both
 * are checked against fit_coarse.c; `bench fit --coarse` times both. */
int vx_fit_set_coarse_version_cuda(vx_fit_device *g, int version);
#define VX_FIT_COARSE_VERSION_DEFAULT 2 /* the version a model starts with */
int vx_fit_coarse_apply_cuda(vx_fit_device *g, const vx_fit_hparams *h, float lr, float lr_sigma);
/* After a crop (vx_fit_resample_cuda): cut every level to the window the new lattice reads,
 * through the host (vx_fit_coarse_rebox_cpu's cut; twice a fit, a few hundred MB at most). */
int vx_fit_coarse_rebox_cuda(vx_fit_device *g);
int vx_fit_occupancy_build_cuda(vx_fit_device *g, int cell);
int vx_fit_prune_cuda(vx_fit_device *g, float thresh, size_t *pruned);
int vx_fit_upsample_cuda(vx_fit_device *g, const int res[3]);
int vx_fit_resample_cuda(vx_fit_device *g, const double lo[3], const double hi[3], const int res[3]);
int vx_fit_alive_mask_cuda(vx_fit_device *g, unsigned char *mask, size_t *alive);
int vx_fit_update_params_cuda(vx_fit_device *g, float stop);
/* The device model's metadata (lattice, box, channels, t; host arrays NULL). */
const vx_fit_model *vx_fit_model_meta_cuda(const vx_fit_device *g);
/* Alive voxels (the list the Adam, TV and occupancy kernels run over). */
size_t vx_fit_alive_count_cuda(const vx_fit_device *g);
void vx_fit_track_weights_cuda(vx_fit_device *g, int on);
/* The ray regularisers' weights per ray for the next ray steps (fit.h's reg_sparsity,
 * reg_distortion and reg_binary; the upload copies the host model's). Both kernel versions
 * apply them. */
void vx_fit_set_ray_reg_cuda(vx_fit_device *g, float sparsity, float distortion, float binary);
/* Rays drawn on the device go through a random point of their pixel (on) or its centre
 * (0, the default), as vx_fit_sample_batch_map draws them with tiles->jitter. */
void vx_fit_set_jitter_cuda(vx_fit_device *g, int on);
/* Device-drawn rays each against a random background colour, their targets the photos
 * composited on it by the uploaded coverage (fit --random-bg; vx_fit_ray_background). A
 * host batch says so itself (vx_fit_batch.random_bg). */
void vx_fit_set_random_bg_cuda(vx_fit_device *g, int on);
/* The per-point colour loss's weight for the next ray steps (fit.h's reg_rgbper; the upload
 * copies the host model's): the SH decoder's ray kernel version 2 and the mlp decoder's
 * batched step; version 1 and the mlp's per-ray step refuse it. */
void vx_fit_set_rgbper_cuda(vx_fit_device *g, float weight);
/* Copy the device occupancy grid (vx_fit_occupancy_build_cuda's, count cells) to occ. */
int vx_fit_occupancy_download_cuda(const vx_fit_device *g, unsigned char *occ, size_t count);

/* Version 2 of the ray step: the training views live on the device and rays are drawn
 * there (vx_fit_pick_pixel, as vx_fit_sample_batch on the host), the per-ray kernel is
 * specialised on the SH degree. views_upload copies d's photos and cameras once. */
int vx_fit_views_upload_cuda(vx_fit_device *g, const vx_dataset *d);
int vx_fit_rays_sampled_cuda(vx_fit_device *g, int n, uint64_t seed, double *loss);
/* Error-driven sampling (fit_errmap.h): from now on vx_fit_rays_sampled_cuda draws batches of
 * `batch` rays with vx_fit_pick_pixel_map over t (its CDF is copied; call again when it
 * changes; t NULL: uniform again) and adds each ray's error into per-tile sums on the device
 * (vx_fit_errmap_add_cpu's twin), which vx_fit_errmap_fetch_cuda adds into acc (2 floats
 * per tile) and clears. */
int vx_fit_errmap_upload_cuda(vx_fit_device *g, const struct vx_fit_tiles_s *t, int batch);
int vx_fit_errmap_fetch_cuda(vx_fit_device *g, float *acc);
/* Kernel version for vx_fit_rays_backward_cuda: 1 (generic, fit_march.h per ray) or 2
 * (specialised; default). */
int vx_fit_set_ray_version_cuda(vx_fit_device *g, int version);
/* Forward render of camera c from the device model into rgb (c->width*c->height*3, host),
 * with the current occupancy grid (rebuild it first). */
int vx_fit_render_view_cuda(vx_fit_device *g, const vx_camera *c, float *rgb);
/* Profiling: when on, every step waits for the device and adds its wall time to a
 * counter; vx_fit_timings_cuda returns the milliseconds since the last call in the
 * buckets of fit.h's VX_FIT_PROF_* (rays, TV, Adam, occupancy, coarse level), and resets them. */
void vx_fit_profile_cuda(vx_fit_device *g, int on);
void vx_fit_timings_cuda(vx_fit_device *g, double ms[VX_FIT_PROF_N]);

#ifdef __cplusplus
}
#endif

#endif
