/* fit_backend.h - where `voxray fit` trains: one table of training steps, implemented on
 * the CPU (fit_backend_cpu.c, over fit_cpu.c) and on CUDA (fit_backend_cuda.c, over
 * kernels/fit.cu). fit_train.c takes the table once from the resolved backend kind. */
#ifndef VX_FIT_BACKEND_H
#define VX_FIT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "fit.h"
#include "fit_errmap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One training step's inputs (rates after the decay, TV weights per batch, 0: no TV). With
 * map (--error-map) the rays are drawn from its CDF and their errors go into its sums. */
typedef struct {
    int batch, occ_cell;
    uint64_t ray_seed, tv_seed;
    float lr_sigma, lr_sh, tv_sigma, tv_sh;
    float lr_mlp;      /* the mlp decoder's weights (unused by the sh decoder) */
    float lr_coarse;   /* the coarse level's (unused without --coarse) */
    float lr_coarse_sigma; /* the levels' density channel's (--coarse-density) */
    const vx_fit_hparams *hp;
    vx_fit_errmap *map;
} vx_fit_step;

typedef struct vx_fit_backend vx_fit_backend; /* a backend's state: the model being trained */

typedef struct {
    const char *name;  /* "cpu" or "cuda" */
    int on_device;     /* steps run on a device: device memory and per-kernel timings exist */
    /* Take over f (initialised at its first lattice) to train on `train` in batches of
     * at most `batch` rays; f stays the caller's and receives the result from sync. */
    int (*create)(vx_fit_backend **out, vx_fit_model *f, const vx_dataset *train, int batch);
    void (*destroy)(vx_fit_backend *b);
    /* The model's metadata (lattice, box, mp) wherever it lives. */
    const vx_fit_model *(*model)(const vx_fit_backend *b);
    int (*update_params)(vx_fit_backend *b, float stop);
    void (*track_weights)(vx_fit_backend *b, int on);
    /* Occupancy, rays (forward + backward), TV, Adam; *loss = the batch's mean loss. */
    int (*step)(vx_fit_backend *b, const vx_fit_step *s, double *loss);
    /* Add the ray errors the steps gathered since the last call into map->acc (the CPU
     * steps add there directly; the CUDA ones keep their sums on the device). */
    int (*errmap_fetch)(vx_fit_backend *b, vx_fit_errmap *map);
    int (*prune)(vx_fit_backend *b, float thresh, size_t *pruned);
    /* The alive voxels of the current lattice as a mask (vx_fit_alive_mask_cpu: nx*ny*nz
     * bytes, lattice order) and their count. */
    int (*alive_mask)(vx_fit_backend *b, unsigned char *mask, size_t *alive);
    size_t (*alive_count)(vx_fit_backend *b);
    int (*resample)(vx_fit_backend *b, const double lo[3], const double hi[3], const int res[3]);
    int (*upsample)(vx_fit_backend *b, const int res[3]);
    /* Render view v of d from the current model into fr (allocated here). */
    int (*render)(vx_fit_backend *b, const vx_dataset *d, int v, int occ_cell, vx_frame *fr);
    /* Bring the parameters to the host model (to write or render it). */
    int (*sync)(vx_fit_backend *b);
    /* Per-kernel timing of the next steps (on), and the milliseconds since the last call
     * in fit.h's VX_FIT_PROF_* buckets; returns 0 when the backend does not profile. */
    void (*profile)(vx_fit_backend *b, int on);
    int (*timings)(vx_fit_backend *b, double ms[VX_FIT_PROF_N]);
    size_t (*mem_in_use)(void); /* device bytes in use (0: none or unknown) */
} vx_fit_backend_ops;

extern const vx_fit_backend_ops vx_fit_backend_cpu;  /* fit_backend_cpu.c */
extern const vx_fit_backend_ops vx_fit_backend_cuda; /* fit_backend_cuda.c (CUDA builds) */

/* The table for a resolved kind (VX_BACKEND_CPU or VX_BACKEND_CUDA); NULL and vx_error
 * when this build lacks it. */
const vx_fit_backend_ops *vx_fit_backend_for(vx_backend_kind kind);

/* Render view v of d from a host model with the normal CPU renderer (occupancy skipping,
 * stop 1e-4) into fr (allocated here); returns 0 or -1. */
int vx_fit_render_view_cpu(const vx_fit_model *f, const vx_dataset *d, int v, vx_frame *fr);

#ifdef __cplusplus
}
#endif

#endif
