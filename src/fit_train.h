/* fit_train.h - the training loop of `voxray fit`: its configuration, the schedule
 * (coarse-to-fine stages, pruning, cropping), validation and statistics. Called by
 * cmd/fit.c and tests/test_fit.c; the steps run on the backend of fit_backend.h. */
#ifndef VX_FIT_TRAIN_H
#define VX_FIT_TRAIN_H

#include "backend.h"
#include "fit.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VX_FIT_MAX_STAGES 4

typedef struct {
    int stages;                 /* resolutions, coarse to fine */
    int res[VX_FIT_MAX_STAGES][3];
    double stage_end[VX_FIT_MAX_STAGES]; /* progress (0..1] at which each stage ends (the last: 1) */
    int crop;                   /* after the first stage, shrink the box to the alive voxels;
                                 * res then counts voxels along the first stage's box edges */
    double crop_keep;           /* the crop keeps groups of alive voxels holding this share of
                                 * them (vx_fit_island_bounds; 0: every alive voxel) */
    int final_prune;            /* when training ends, prune as at a stage change: the voxels
                                 * no training ray of the last stage's last quarter weighted
                                 * above hp.prune_weight (density no training photo sees) */
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
    vx_backend_kind backend;    /* where the steps run, already resolved by vx_backend_resolve:
                                 * VX_BACKEND_CPU (default) or VX_BACKEND_CUDA (CUDA builds) */
    double max_seconds;         /* stop once training (validation excluded) took this long (0: no limit) */
    int time_curve;             /* validate at 15, 30, 60, 120, 300 s of training time */
    float error_map;            /* share of each batch drawn where the training photos are
                                 * fitted worst (fit_errmap.h; 0: uniform, the default) */
    int dense;                  /* 1: every stage keeps the whole lattice in memory (the layout
                                 * before bricked training); 0 (default): from the first
                                 * resampling on, only 8^3 bricks holding alive voxels exist */
} vx_fit_config;

void vx_fit_config_default(vx_fit_config *c);

/* Options the command line set, for vx_fit_config_cuda_defaults. */
enum {
    VX_FIT_SET_RES = 1, VX_FIT_SET_STAGE_ENDS = 2, VX_FIT_SET_ITERS = 4, VX_FIT_SET_BATCH = 8,
    VX_FIT_SET_MAX_SECONDS = 16, VX_FIT_SET_VAL_EVERY = 32,
    VX_FIT_SET_TV = 64, /* any of --tv-sigma, --tv-sh, --tv-until */
    VX_FIT_SET_RGBPER = 128
};
/* A CUDA run's defaults for every option not in `set` (VX_FIT_SET_* bits): the recorded
 * schedule of docs/FIT.md: 128,256,512 ending at 0.1 and 0.3, 65536 rays a step,
 * 5 minutes of training (or --iters alone, without a time limit), validation renders
 * every 10000 steps, and TV 1e-7 on density and SH until progress 0.3 ("TV early": +0.9 dB
 * on lego, +1.2 dB on mic at 60 s on the H200) when the first stage is at least 128 voxels
 * along every edge: at a 16^3 first stage TV early erased mic's thin cable for good
 * (docs/FIT.md, session 8). With rgbper_kernel (the SH decoder, or the mlp's batched kernel:
 * the CUDA steps that have the term), the per-point colour loss at 0.01 (--rgbper; on the
 * H100 the mlp +0.21 dB at 60 s and +0.25 at 120 s on mic, SH 3 +0.22 on mic at 5 minutes,
 * SH 2 even on lego: docs/FIT.md sessions 16, 17). The CPU defaults stay those of
 * vx_fit_config_default. */
#define VX_FIT_CUDA_RGBPER 0.01f /* --rgbper's CUDA default (bench fit times it too) */
void vx_fit_config_cuda_defaults(vx_fit_config *c, unsigned set, int rgbper_kernel);

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
        double prof_ms[VX_FIT_PROF_N]; /* fit.h's VX_FIT_PROF_* buckets summed over prof_steps */
        int prof_steps;
        size_t peak_bytes;
    } stage[VX_FIT_MAX_STAGES];
    size_t pruned;
    size_t final_pruned;          /* of them, by --final-prune at the end (0: off, or none) */
    int iters_done;
    int curve_n;                  /* time-to-PSNR checkpoints reached */
    double curve_s[5], curve_psnr[5];
} vx_fit_stats;

/* Train f (already initialised at cfg->res[0]) on `train`; val may be NULL. */
int vx_fit_train(vx_fit_model *f, const vx_fit_config *cfg, const vx_dataset *train,
                 const vx_dataset *val, vx_fit_stats *st);

/* The box: the cube centred at the point nearest to every camera's optical axis whose
 * half-size fits the closest camera's field of view at that distance. */
int vx_fit_box_from_cameras(const vx_camera *cams, int n, double lo[3], double hi[3]);

#ifdef __cplusplus
}
#endif

#endif
