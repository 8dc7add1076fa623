/* fit.h - the model `voxray fit` optimises (a dense grid of raw density + SH, decoded
 * exactly like the `sh` decoder, cell-centred in a world box) and its training steps.
 * fit_cpu.c implements the vx_fit_*_cpu functions; kernels/fit.cu mirrors them 1:1 as
 * vx_fit_*_cuda on device copies of the same arrays. fit.c drives them. */
#ifndef VX_FIT_H
#define VX_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "render.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Optimiser and regulariser settings (defaults from vx_fit_hparams_default). */
typedef struct {
    float lr_sigma, lr_sh;      /* Adam step sizes for raw density and for SH coefficients */
    float lr_final_factor;      /* learning rates decay exponentially to lr * this at the end */
    float beta1, beta2, eps;    /* Adam */
    float tv_sigma, tv_sh;      /* TV weights (density, SH) */
    float tv_fraction;          /* fraction of voxels the TV term visits per step (0..1] */
    float tv_eps;               /* inside the square root of the isotropic TV */
    float prune_weight;         /* prune voxels whose max rendering weight is below this */
    float init_sigma;           /* raw density at start (small positive) */
} vx_fit_hparams;

void vx_fit_hparams_default(vx_fit_hparams *h);

/* The model. Arrays are voxel-major like vx_grid: (z, y, x, c) with c innermost. */
typedef struct {
    int nx, ny, nz, nc;         /* lattice and channels (1 + 3 (deg+1)^2) */
    int sh_degree;
    double box_lo[3], box_hi[3]; /* world box; samples at cell centres (align_corners 0) */
    float step;                 /* segment length as a fraction of the smallest voxel size */
    float density_scale;        /* sigma = density_scale * relu(raw) */
    float bg[3];
    float *data;                /* parameters */
    float *grad;                /* dL/d data, zeroed by vx_fit_zero_grad_cpu */
    float *adam_m, *adam_v;     /* Adam moments */
    unsigned char *alive;       /* per voxel: 0 = pruned (held at zero, never updated) */
    float *wmax;                /* per voxel: largest rendering weight seen since the last reset */
    unsigned char *occ;         /* occupancy cells for empty-space skipping (NULL: none) */
    int occ_n[3], occ_cell;
    long long t;                /* Adam steps taken */
    vx_march_params mp;         /* march parameters for the current lattice */
} vx_fit_model;

/* A batch of rays with their target colours. */
typedef struct {
    int n;
    float *origin, *dir, *target; /* n*3 each; dir unit length */
} vx_fit_batch;

int vx_fit_batch_alloc(vx_fit_batch *b, int n);
void vx_fit_batch_free(vx_fit_batch *b);

/* Allocate a res[0] x res[1] x res[2] model in [lo, hi] with density init_sigma and grey
 * colour (SH zero -> 0.5). density_scale <= 0 picks 100 / box diagonal. */
int vx_fit_model_init_cpu(vx_fit_model *f, const int res[3], int sh_degree, const double lo[3],
                          const double hi[3], float step, float density_scale, const float bg[3],
                          float init_sigma);
void vx_fit_model_free(vx_fit_model *f);

/* Recompute mp (w2i, box, dt) after the lattice changed. stop: early termination on T. */
int vx_fit_update_params(vx_fit_model *f, float stop);

/* A vx_scene view of the model (grid borrows f->data: don't free it) for the renderer. */
void vx_fit_as_scene(const vx_fit_model *f, vx_scene *s);

void vx_fit_zero_grad_cpu(vx_fit_model *f);

/* Forward + backward of the MSE loss over a batch: adds dL/d data into f->grad, raises
 * f->wmax, writes the rendered colours into out_rgb (n*3, may be NULL). Returns the mean
 * squared error per channel (the loss). */
double vx_fit_rays_backward_cpu(vx_fit_model *f, const vx_fit_batch *b, float *out_rgb);

/* TV on a random subset (fraction of voxels, chosen from seed), weighted per channel
 * group; adds the gradient of weight/visited * sum tv into f->grad. Returns that term. */
double vx_fit_tv_backward_cpu(vx_fit_model *f, float w_sigma, float w_sh, float fraction, uint64_t seed,
                              float eps);

/* One Adam step on every alive voxel with learning rates lr_sigma (channel 0) and lr_sh. */
void vx_fit_adam_step_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr_sigma, float lr_sh);

/* Rebuild the occupancy grid from the current densities (cells of `cell` voxels). */
int vx_fit_occupancy_cpu(vx_fit_model *f, int cell);

/* Prune: voxels whose wmax < thresh get all channels and moments zeroed and alive = 0.
 * Returns how many voxels were newly pruned; resets wmax to 0 (thresh 0: only that). */
size_t vx_fit_prune_cpu(vx_fit_model *f, float thresh);

/* Trilinear upsampling (cell-centred, same box) to res; Adam moments restart at zero,
 * a new voxel is alive when any of the old voxels it interpolates from was. */
int vx_fit_upsample_cpu(vx_fit_model *f, const int res[3]);

/* Reallocate every array at res, zeroed and all alive (the CUDA download uses it when the
 * device grid was upsampled; the old contents are dropped first, so peak memory is 1x). */
int vx_fit_model_resize_cpu(vx_fit_model *f, const int res[3]);

/* Write SCENE_DIR/grid.npy + SCENE_DIR/scene.json (temporary files, renamed when both are
 * complete), openable by `voxray render` and `voxray view`. cam: NULL, or the manifest
 * camera as eye[3], target[3], up[3], horizontal fov in degrees. */
int vx_fit_write_scene(const vx_fit_model *f, const char *dir, const char *name, const double cam[10]);

/* ---- the CUDA twin (kernels/fit.cu; present when built with CUDA) ----------------------- */

/* Device copies of a model's arrays plus its metadata; each vx_fit_*_cuda step does on
 * the device exactly what the vx_fit_*_cpu step of the same name does on the host. */
typedef struct vx_fit_cuda vx_fit_cuda;

/* Upload f's parameters, moments, alive mask and max weights; room for max_batch rays. */
int vx_fit_cuda_create(vx_fit_cuda **out, const vx_fit_model *f, int max_batch);
/* Copy everything back into f (its lattice is resized to the device's if it changed);
 * the _params variant copies only the parameters and the alive mask (for rendering). */
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
int vx_fit_update_params_cuda(vx_fit_cuda *g, float stop);

/* ---- the training loop (fit.c), shared by `voxray fit` and tests/test_fit.c ------------- */

#define VX_FIT_MAX_STAGES 4

typedef struct {
    int stages;                 /* resolutions, coarse to fine */
    int res[VX_FIT_MAX_STAGES][3];
    int iters;                  /* total iterations, split evenly over the stages (the schedule
                                 * follows the fraction of max_seconds instead when that is set) */
    int batch;                  /* rays per iteration */
    uint64_t seed;
    vx_fit_hparams hp;
    float stop;                 /* early termination on T while training (renderer: 1e-4) */
    int occ_cell;               /* empty-space skipping cells (0: off) */
    int val_every;              /* validation every K iterations (0: only at the end) */
    int val_views;              /* held-out views used for the progress PSNR */
    const char *val_dir;        /* where validation renders go (NULL: none) */
    int log_every;              /* progress line every N iterations (0: none) */
    int use_cuda;               /* run the steps with kernels/fit.cu (CUDA builds only) */
    double max_seconds;         /* stop once training (validation excluded) took this long (0: no limit) */
    int time_curve;             /* validate at 15, 30, 60, 120, 300 s of training time */
} vx_fit_config;

void vx_fit_config_default(vx_fit_config *c);

typedef struct {
    double loss_first, loss_last; /* training loss: mean of the first 20 iterations, and a running
                                   * mean over about the last 20 */
    double val_psnr;              /* last validation PSNR (NAN if none) */
    double seconds, rays_per_s;
    size_t pruned;
    int iters_done;
    int curve_n;                  /* time-to-PSNR checkpoints reached */
    double curve_s[5], curve_psnr[5];
} vx_fit_stats;

/* Train f (already initialised at cfg->res[0]) on `train`; val may be NULL. */
int vx_fit_train(vx_fit_model *f, const vx_fit_config *cfg, const vx_dataset *train,
                 const vx_dataset *val, vx_fit_stats *st);

/* Render view v of d from the model with the normal renderer (occupancy skipping, stop
 * 1e-4) into fr (allocated here); returns 0 or -1. */
int vx_fit_render_view(const vx_fit_model *f, const vx_dataset *d, int v, vx_frame *fr);

/* The box: the cube centred at the point nearest to every camera's optical axis whose
 * half-size fits the closest camera's field of view at that distance. */
int vx_fit_box_from_cameras(const vx_camera *cams, int n, double lo[3], double hi[3]);

/* `voxray fit` and `voxray eval` (fit.c); also to be listed in commands.h for main.c. */
int vx_cmd_fit(int argc, char **argv);
int vx_cmd_eval(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
