/* fit.h - the model `voxray fit` optimises (a dense grid of raw density + SH, decoded
 * exactly like the `sh` decoder, cell-centred in a world box) and its training steps.
 * fit_cpu.c implements the vx_fit_*_cpu functions; kernels/fit.cu mirrors them 1:1 as
 * vx_fit_*_cuda (kernels/cuda_fit.h). fit_train.c drives them through fit_backend.h. */
#ifndef VX_FIT_H
#define VX_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "render.h"
#include "sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Optimiser and regulariser settings (defaults from vx_fit_hparams_default). */
typedef struct {
    float lr_sigma, lr_sh;      /* Adam step sizes for raw density and for SH coefficients
                                 * (the mlp decoder's features take lr_sh) */
    float lr_mlp;               /* Adam step size of the mlp decoder's weights (decays alike) */
    float lr_final_factor;      /* learning rates decay exponentially to lr * this at the end */
    float beta1, beta2, eps;    /* Adam */
    float tv_sigma, tv_sh;      /* TV weights (density, SH) */
    float tv_fraction;          /* fraction of voxels the TV term visits per step (0..1] */
    float tv_eps;               /* inside the square root of the isotropic TV */
    float tv_until;             /* training progress (0..1) after which TV is off (default 1:
                                 * throughout; Plenoxels-style "TV early" with e.g. 0.3) */
    float prune_weight;         /* prune voxels whose max rendering weight is below this */
    float init_sigma;           /* raw density at start (small positive) */
    float sparsity, distortion; /* per-ray regulariser weights (docs/FIT.md "Ray regularisers");
                                 * 0: off, the default until measured */
    float binary_alpha;         /* fit --binary-alpha: the weight of each sample's alpha (1 - alpha)
                                 * in a ray's loss (the same section), 0: off */
    int lazy;                   /* sparse Adam: zero-gradient parameters keep value and moments */
    int mlp_kernel;             /* CUDA, mlp decoder: 1 the network inside the ray kernel,
                                 * 0 or 2 batched over the step's samples (kernels/cuda_fit.h) */
    int mlp_gather;             /* CUDA, the batched step's gather (fit --mlp-gather): 0 or 1 two
                                 * marches a ray (count, then write), 2 one march into staging
                                 * slots (kernels/fit_mlp_batch.cuh); opt-in until timed */
    int jitter;                 /* training rays through a random point of their pixel, not
                                 * its centre (vx_fit_pixel_point, fit_march.h) */
    float rgbper;               /* per-point colour loss (DirectVoxGO's weight_rgbper): rgbper/n
                                 * x sum over rays and composited samples of T alpha |c_k - C_gt|^2,
                                 * T alpha held constant (vx_fit_px_loss, fit_march.h); 0: off */
    int mlp_dir_terms;          /* mlp decoder: the view direction's SH terms the network may
                                 * use, 1, 4 or 9 (0: all 16); the others' first-layer
                                 * weights stay zero (vx_mlp_dir_cut, decode.h) */
    float lr_coarse;            /* Adam step size of the coarse level (fit --coarse,
                                 * fit_coarse.h); 0: lr_sh (decays alike) */
    float lr_coarse_sigma;      /* the levels' density channel's (--coarse-density); 0: a
                                 * fifth of lr_sigma (vx_fit_lr_coarse_sigma; decays alike) */
    int random_bg;              /* each training ray against a random background colour
                                 * (vx_fit_ray_background, fit_march.h); 0: the model's */
    int mlp_tc;                 /* CUDA, mlp decoder's batched step: the network's hidden layers
                                 * on the tensor cores in TF32 (fit --mlp-tensor-cores): 0 where
                                 * the GPU has them (sm_80 and up), 1 always, -1 never (FP32) */
} vx_fit_hparams;

void vx_fit_hparams_default(vx_fit_hparams *h);
/* The levels' density step size (--coarse-density): lr_coarse_sigma, or a fifth of
 * lr_sigma's, since a level's step moves a whole region (lego's 1/8-scale CPU analog lost
 * 0.31 dB at lr_sigma's own, docs/FIT.md session 27; on the device a fifth read 35.39 dB
 * on lego's 200 test views twice, a tenth 35.25 and 35.32, two fifths 35.40: session 30). */
static inline float vx_fit_lr_coarse_sigma(const vx_fit_hparams *h) {
    return h->lr_coarse_sigma > 0 ? h->lr_coarse_sigma : 0.2f * h->lr_sigma;
}

/* One coarse level of fit --coarse (fit_coarse.h): a dense n[0] x n[1] x n[2] grid of the
 * model's nc-1 colour channels (--coarse-density: all nc channels) over lo..hi. It takes
 * steps only in lattices where its voxel is at least twice the fine one
 * (vx_fit_coarse_active); its Adam bias correction counts from its first step, the model's
 * step t0 + 1 (t0 -1: not yet started). */
#define VX_FIT_LEVELS 4
typedef struct {
    int n[3];
    double lo[3], hi[3];
    long long t0;
    float *grad, *m, *v;        /* gradient (then the step), moments */
    float *val;                 /* fit --coarse-decay: the sum of its steps, the level's own
                                 * value (NULL where the model's coarse_decay is 0) */
} vx_fit_level;

/* The model. Arrays are voxel-major like vx_grid: (z, y, x, c) with c innermost. */
typedef struct {
    int nx, ny, nz, nc;         /* lattice and channels (1 + 3 (deg+1)^2; mlp: 16) */
    int sh_degree;
    int mlp_layers;             /* 0: the sh decoder; 1 or 2: the mlp decoder (decode.h) */
    int mlp_reflect;            /* mlp: the direction input's mode, VX_MLP_DIR_* (decode.h; 0 the
                                 * view direction, 1 the reflected one, 2 both); set before
                                 * vx_fit_update_params */
    float *mlp, *mlp_grad, *mlp_m, *mlp_v; /* its packed weights, dL/dweights, Adam moments
                                 * (not per voxel: resampling and pruning keep them) */
    float *mlp_tgrad;           /* CPU: dL/dweights per thread (mlp_threads arrays), summed
                                 * into mlp_grad after each batch: no atomics per weight */
    int mlp_threads;
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
    float reg_sparsity, reg_distortion, reg_binary; /* the rays step's regulariser weights per
                                 * ray (the hparams'; the step divides them by the batch), 0 after
                                 * init */
    float reg_rgbper;           /* the per-point colour loss's weight (hparams' rgbper), 0 after init */
    double reg_loss;            /* the last CPU rays step's regulariser term (batch mean) */
    /* Storage. table == NULL: dense, voxel (x, y, z) is entry (z*ny + y)*nx + x of every
     * per-voxel array. Otherwise bricked (sparse): 8^3-voxel bricks in pool slots, voxel
     * (x, y, z) is entry slot*512 + local (vx_fit_vid), the slot from table (bn[0]*bn[1]*bn[2]
     * entries, brick order of sparse.h). Slot 0 is the null brick: every absent brick maps
     * to it, it holds zeros and is never alive, so reads need no branch and a pruned region
     * costs no memory. bxyz[3*slot] holds each slot's brick coordinates. */
    int32_t *table, *bxyz;
    int bn[3];
    size_t nslots;              /* pool slots, the null brick included */
    int sparse_fit;             /* resampling makes bricked storage holding only the bricks
                                 * with alive voxels (set before training; 0: stay dense) */
    vx_sparse view;             /* bricked: the live bricks as a vx_sparse for the renderer and
                                 * writing (absent bricks -1, the pool past the null brick) */
    int32_t *view_table;        /* the view's table: table - 1 */
    /* The coarse levels (fit --coarse R1[,R2..], fit_coarse.h): the colour channels 1..nc-1
     * are their own values plus the trilinear interpolations of up to VX_FIT_LEVELS dense
     * grids of nc-1 channels over the first stage's box. data holds the sum, so only the
     * levels' gradients and Adam moments exist. nlevels == 0: off. */
    int nlevels;
    vx_fit_level lv[VX_FIT_LEVELS];
    int coarse_cut;             /* at each crop the levels are cut to the vertices the new
                                 * lattice reads (vx_fit_coarse_rebox_cpu); fit's default,
                                 * --no-coarse-cut keeps them whole */
    int coarse_only;            /* fit --coarse-only C: the last C colour channels take no fine
                                 * step, only the levels' (their fine gradient is zeroed once
                                 * the restriction has read it); 0: off */
    float coarse_decay;         /* fit --coarse-decay L: after each levels' step the alive
                                 * voxels' colour channels blend toward the levels' values,
                                 * f += L (sum_l U_l val_l - f), so the fine residual decays
                                 * where no gradient holds it (fit_coarse.h); 0: off */
    int coarse_density;         /* the levels carry the density too (nc channels an entry
                                 * from channel 0, not the nc-1 colour channels), their
                                 * density stepped at vx_fit_lr_coarse_sigma (by default a
                                 * fifth of the density's step size); 0: off, as a zeroed
                                 * model starts; `fit` sets it wherever --coarse is given
                                 * unless --no-coarse-density (fit_coarse.h) */
} vx_fit_model;

/* Bricked storage from per-brick live flags (table order): the slot count (live bricks +
 * the null brick), and the table (slot, or 0 for the null brick) and brick coordinates
 * (3 per slot) in table order. Both backends build their tables with these. */
size_t vx_fit_live_slots(const unsigned char *live, size_t entries);
void vx_fit_fill_slots(const unsigned char *live, const int bn[3], int32_t *table, int32_t *bxyz);

/* Refresh f->view after the table changed (resampling and the CUDA download call it). */
int vx_fit_view_update(vx_fit_model *f);

/* Entries of every per-voxel array (alive, wmax; data etc. hold nc floats per entry):
 * nx*ny*nz dense, nslots*512 bricked (nslots > 0 marks bricked storage, also in the
 * metadata copy of a device model, whose table pointer is NULL). */
size_t vx_fit_storage_voxels(const vx_fit_model *f);
/* The voxel addressing of f (lattice, table) for fit_march.h's VX_HD helpers. */
struct vx_fit_index_s;
void vx_fit_index_of(const vx_fit_model *f, struct vx_fit_index_s *ix);

/* Invariant of every step: a voxel that is not alive holds zero in every channel (prune
 * and resample zero it), so the occupancy grid can be built from the alive voxels alone. */

/* A batch of rays with their target colours. With random_bg (the sampler sets it from its
 * tiles' random_bg) ray r is rendered against background bg[3r..3r+2] and its target is
 * the photo against that background (vx_fit_ray_background, vx_fit_target_on). */
typedef struct {
    int n;
    float *origin, *dir, *target; /* n*3 each; dir unit length */
    float *bg;                  /* n*3 */
    int random_bg;
} vx_fit_batch;

int vx_fit_batch_alloc(vx_fit_batch *b, int n);
void vx_fit_batch_free(vx_fit_batch *b);

/* Fill b (b->n rays) with random training pixels of d: ray r goes through the pixel
 * centre chosen by vx_fit_pick_pixel(seed, r, ...) (fit_march.h), the function the CUDA
 * sampler runs too, so both backends draw the same rays for the same seed. */
void vx_fit_sample_batch(const vx_dataset *d, uint64_t seed, vx_fit_batch *b);
/* The same with an error map's tiles (fit_march.h's vx_fit_tiles; NULL: uniform): ray r
 * through the pixel vx_fit_pick_pixel_map(tiles, seed, r, ...) chooses. */
struct vx_fit_tiles_s;
void vx_fit_sample_batch_map(const vx_dataset *d, uint64_t seed, const struct vx_fit_tiles_s *tiles, vx_fit_batch *b);

/* Allocate a res[0] x res[1] x res[2] model in [lo, hi] with density init_sigma and grey
 * colour (SH zero -> 0.5). density_scale <= 0 picks 100 / box diagonal. */
int vx_fit_model_init_cpu(vx_fit_model *f, const int res[3], int sh_degree, const double lo[3],
                          const double hi[3], float step, float density_scale, const float bg[3],
                          float init_sigma);
/* Turn a freshly initialised model into the mlp decoder's: 16 channels (density as it
 * was, features zero) and `layers` hidden layers with vx_mlp_init(layers, seed) weights.
 * On failure the model is freed (as a failed vx_fit_model_init_cpu's is). */
int vx_fit_model_use_mlp_cpu(vx_fit_model *f, int layers, unsigned seed);
void vx_fit_model_free(vx_fit_model *f);

/* Recompute mp (w2i, box, dt) after the lattice changed. stop: early termination on T. */
int vx_fit_update_params(vx_fit_model *f, float stop);

/* A vx_scene view of the model (grid borrows f->data: don't free it) for the renderer. */
void vx_fit_as_scene(const vx_fit_model *f, vx_scene *s);

void vx_fit_zero_grad_cpu(vx_fit_model *f);

/* Forward + backward of the MSE loss over a batch: adds dL/d data into f->grad, raises
 * f->wmax, writes the rendered colours into out_rgb (n*3, may be NULL). Returns the mean
 * squared error per channel (the loss). With f->reg_sparsity, f->reg_distortion,
 * f->reg_binary or f->reg_rgbper set the gradient includes the ray regularisers (their
 * batch mean goes to f->reg_loss, not into the returned loss, which stays the photometric
 * one that training reports as PSNR). */
double vx_fit_rays_backward_cpu(vx_fit_model *f, const vx_fit_batch *b, float *out_rgb);

/* TV on a random subset (fraction of voxels, chosen from seed), weighted per channel
 * group; adds the gradient of weight/visited * sum tv into f->grad. Returns that term. */
double vx_fit_tv_backward_cpu(vx_fit_model *f, float w_sigma, float w_sh, float fraction, uint64_t seed,
                              float eps);

/* One Adam step on every alive voxel with learning rates lr_sigma (channel 0) and lr_sh.
 * The step consumes the gradient: the alive voxels' entries are zero afterwards. */
void vx_fit_adam_step_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr_sigma, float lr_sh);
/* Adam on the mlp decoder's weights (dense: every sample uses every weight), step size lr;
 * after vx_fit_adam_step_cpu, whose step count it shares. No-op for the sh decoder. */
void vx_fit_adam_step_mlp_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr);
/* Zero the mlp weights (and their moments) that vx_mlp_dir_cut(terms) cuts off; the Adam
 * steps of both backends keep them zero (h->mlp_dir_terms). No-op without the mlp. */
void vx_fit_mlp_dir_cut_cpu(vx_fit_model *f, int terms);

/* Rebuild the occupancy grid from the current densities (cells of `cell` voxels). */
int vx_fit_occupancy_build_cpu(vx_fit_model *f, int cell);

/* Prune: voxels whose wmax < thresh get all channels and moments zeroed and alive = 0.
 * Returns how many voxels were newly pruned; resets wmax to 0 (thresh 0: only that). */
size_t vx_fit_prune_cpu(vx_fit_model *f, float thresh);

/* Trilinear resampling onto a res lattice in the world box [lo, hi] (cell-centred; points
 * outside the old box take the border values): the new voxel centre i sits at old index
 * a*i + b per axis (vx_fit_resample_map). Adam moments restart at zero; a new voxel is
 * alive when any of the old voxels it interpolates from was, else it is zero. With
 * f->sparse_fit the new storage is bricked and holds only the bricks with an alive voxel
 * (the same values, alive flags and steps as the dense result: tests/test_fit.c). */
int vx_fit_resample_cpu(vx_fit_model *f, const double lo[3], const double hi[3], const int res[3]);
/* The same box at a new resolution (coarse to fine without cropping). */
int vx_fit_upsample_cpu(vx_fit_model *f, const int res[3]);
/* Per axis, old index = a*i + b for new voxel i (both backends use it). */
void vx_fit_resample_map(const vx_fit_model *f, const double lo[3], const double hi[3], const int res[3], float a[3],
                         float b[3]);

/* Index-space bounding box [lo, hi] (inclusive) of the alive voxels; returns how many are
 * alive (0: lo/hi untouched). */
size_t vx_fit_alive_bounds_cpu(const vx_fit_model *f, int lo[3], int hi[3]);

/* The alive voxels as a lattice mask: mask[(z*ny + y)*nx + x] is 1 where alive, else 0
 * (dense or bricked storage alike); returns how many are alive. */
size_t vx_fit_alive_mask_cpu(const vx_fit_model *f, unsigned char *mask);

/* The device's per-step timings (`fit` with profiling, its per-stage table): milliseconds
 * in the ray step, TV, the fine Adam steps, the occupancy rebuild and the coarse level
 * (restriction, coarse Adam, prolongation), in this order. */
enum { VX_FIT_PROF_RAYS, VX_FIT_PROF_TV, VX_FIT_PROF_ADAM, VX_FIT_PROF_OCC, VX_FIT_PROF_LEVEL, VX_FIT_PROF_N };

/* What the crop keeps: the 26-connected components of the alive voxels in mask (an
 * n[0] x n[1] x n[2] lattice, `alive` of them set), each kept when it holds at least
 * keep * alive voxels or is the largest; lo/hi (inclusive) span the kept ones. The stray
 * voxels this leaves out of the box: *left voxels in *left_parts components (those inside
 * it stay). keep 0 gives the bounds of every alive voxel. Marks the visited voxels in mask
 * (2, then 3). Returns 0, or -1 (vx_error) when its queue cannot be allocated. */
#define VX_FIT_CROP_KEEP 0.01
int vx_fit_island_bounds(unsigned char *mask, const int n[3], size_t alive, double keep, int lo[3], int hi[3],
                         size_t *left, size_t *left_parts);

/* The box of the next stage after cropping to alive voxels ilo..ihi (inclusive, of f) with
 * `margin` voxels of f on each side, clipped to f's box, at voxel size `voxel` (world
 * units): res = ceil(extent / voxel) per axis and the box grows about its centre to exactly
 * res * voxel. */
int vx_fit_crop_box(const vx_fit_model *f, const int ilo[3], const int ihi[3], int margin, double voxel,
                    double lo[3], double hi[3], int res[3]);

/* Reallocate every array at res, zeroed: dense and all alive (nslots 0), or bricked with
 * nslots pool slots, all dead, every table entry the null brick (the CUDA download uses it
 * when the device grid was resampled, then fills table, bxyz and the arrays; the old
 * contents are dropped first, so peak memory is 1x). */
int vx_fit_model_resize_cpu(vx_fit_model *f, const int res[3], size_t nslots);

/* How `voxray fit` writes its scene: sparse bricks in float16 (the default), sparse float32,
 * or the dense float32 grid.npy of earlier versions. */
typedef enum { VX_FIT_WRITE_SPARSE_HALF = 0, VX_FIT_WRITE_SPARSE, VX_FIT_WRITE_DENSE } vx_fit_storage;
/* Write SCENE_DIR/grid.sparse.npz (or grid.npy) + SCENE_DIR/scene.json (temporary files,
 * renamed when both are complete), openable by `voxray render` and `voxray view`. cam:
 * NULL, or the manifest camera as eye[3], target[3], up[3], horizontal fov in degrees. */
int vx_fit_write_scene(const vx_fit_model *f, const char *dir, const char *name, const double cam[10],
                       vx_fit_storage storage);

#ifdef __cplusplus
}
#endif

#endif
