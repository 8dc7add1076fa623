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
    int lazy;                   /* sparse Adam: zero-gradient parameters keep value and moments */
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
    float *grad;                /* dL/d data, zeroed by vx_fit_zero_grad_cpu; the Adam step also
                                 * clears the alive voxels' entries it consumed */
    float *adam_m, *adam_v;     /* Adam moments */
    unsigned char *alive;       /* per voxel: 0 = pruned (held at zero, never updated) */
    float *wmax;                /* per voxel: largest rendering weight seen since the last reset */
    unsigned char *occ;         /* occupancy cells for empty-space skipping (NULL: none) */
    int occ_n[3], occ_cell;
    long long t;                /* Adam steps taken */
    vx_march_params mp;         /* march parameters for the current lattice */
    int track_wmax;             /* raise wmax in the ray backward (1 after init; the training loop
                                 * turns it on only while pruning statistics are collected) */
} vx_fit_model;

/* Invariant of every step: a voxel that is not alive holds zero in every channel (prune
 * and resample zero it), so the occupancy grid can be built from the alive voxels alone. */

/* A batch of rays with their target colours. */
typedef struct {
    int n;
    float *origin, *dir, *target; /* n*3 each; dir unit length */
} vx_fit_batch;

int vx_fit_batch_alloc(vx_fit_batch *b, int n);
void vx_fit_batch_free(vx_fit_batch *b);

/* Fill b (b->n rays) with random training pixels of d: ray r goes through the pixel
 * centre chosen by vx_fit_pick_pixel(seed, r, ...) (fit_march.h), the function the CUDA
 * sampler runs too, so both backends draw the same rays for the same seed. */
void vx_fit_sample_batch(const vx_dataset *d, uint64_t seed, vx_fit_batch *b);

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

/* One Adam step on every alive voxel with learning rates lr_sigma (channel 0) and lr_sh.
 * The step consumes the gradient: the alive voxels' entries are zero afterwards. */
void vx_fit_adam_step_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr_sigma, float lr_sh);

/* Rebuild the occupancy grid from the current densities (cells of `cell` voxels). */
int vx_fit_occupancy_cpu(vx_fit_model *f, int cell);

/* Prune: voxels whose wmax < thresh get all channels and moments zeroed and alive = 0.
 * Returns how many voxels were newly pruned; resets wmax to 0 (thresh 0: only that). */
size_t vx_fit_prune_cpu(vx_fit_model *f, float thresh);

/* Trilinear resampling onto a res lattice in the world box [lo, hi] (cell-centred; points
 * outside the old box take the border values): the new voxel centre i sits at old index
 * a*i + b per axis (vx_fit_resample_map). Adam moments restart at zero; a new voxel is
 * alive when any of the old voxels it interpolates from was, else it is zero. */
int vx_fit_resample_cpu(vx_fit_model *f, const double lo[3], const double hi[3], const int res[3]);
/* The same box at a new resolution (coarse to fine without cropping). */
int vx_fit_upsample_cpu(vx_fit_model *f, const int res[3]);
/* Per axis, old index = a*i + b for new voxel i (both backends use it). */
void vx_fit_resample_map(const vx_fit_model *f, const double lo[3], const double hi[3], const int res[3], float a[3],
                         float b[3]);

/* Index-space bounding box [lo, hi] (inclusive) of the alive voxels; returns how many are
 * alive (0: lo/hi untouched). */
size_t vx_fit_alive_bounds_cpu(const vx_fit_model *f, int lo[3], int hi[3]);

/* The box of the next stage after cropping to alive voxels ilo..ihi (inclusive, of f) with
 * `margin` voxels of f on each side, clipped to f's box, at voxel size `voxel` (world
 * units): res = ceil(extent / voxel) per axis and the box grows about its centre to exactly
 * res * voxel. */
int vx_fit_crop_box(const vx_fit_model *f, const int ilo[3], const int ihi[3], int margin, double voxel,
                    double lo[3], double hi[3], int res[3]);

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
/* Device memory in use now (cudaMemGetInfo: total - free), bytes; 0 if unknown. */
size_t vx_fit_cuda_mem_in_use(void);
void vx_fit_cuda_timings(vx_fit_cuda *g, double ms[4]);

/* ---- the training loop (fit.c), shared by `voxray fit` and tests/test_fit.c ------------- */

#define VX_FIT_MAX_STAGES 4

typedef struct {
    int stages;                 /* resolutions, coarse to fine */
    int res[VX_FIT_MAX_STAGES][3];
    double stage_end[VX_FIT_MAX_STAGES]; /* progress (0..1] at which each stage ends (the last: 1) */
    int crop;                   /* after the first stage, shrink the box to the alive voxels;
                                 * res then counts voxels along the first stage's box edges */
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

/* Options the command line set, for vx_fit_config_cuda_defaults. */
enum {
    VX_FIT_SET_RES = 1, VX_FIT_SET_STAGE_ENDS = 2, VX_FIT_SET_ITERS = 4, VX_FIT_SET_BATCH = 8,
    VX_FIT_SET_MAX_SECONDS = 16, VX_FIT_SET_VAL_EVERY = 32
};
/* A CUDA run's defaults for every option not in `set` (VX_FIT_SET_* bits): the recorded
 * mic schedule of docs/FIT.md: 128,256,512 ending at 0.1 and 0.3, 65536 rays a step,
 * 5 minutes of training (or --iters alone, without a time limit), validation renders
 * every 10000 steps. The CPU defaults stay those of vx_fit_config_default. */
void vx_fit_config_cuda_defaults(vx_fit_config *c, unsigned set);

typedef struct {
    double loss_first, loss_last; /* training loss: mean of the first 20 iterations, and a running
                                   * mean over about the last 20 */
    double val_psnr;              /* last validation PSNR (NAN if none) */
    double seconds, train_seconds, rays_per_s;
    size_t peak_bytes;            /* largest device memory in use seen at a progress line */
    struct {                      /* per stage: lattice, time, rays, profiled step breakdown */
        int res[3];
        size_t alive;
        double seconds;
        long long rays, steps;
        double prof_ms[4];        /* rays, TV, Adam, occupancy summed over prof_steps */
        int prof_steps;
        size_t peak_bytes;
    } stage[VX_FIT_MAX_STAGES];
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
