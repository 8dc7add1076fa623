/* fit_device.cuh - the CUDA fit's device model (struct vx_fit_device, opaque to C through
 * cuda_fit.h) and what its three files share: fit.cu (model, rays, TV, Adam, occupancy),
 * fit_grid.cu (prune, alive mask, resample) and fit_levels.cu (the coarse levels). */
#ifndef VX_FIT_DEVICE_CUH
#define VX_FIT_DEVICE_CUH

#include "common.cuh"
#include "cuda_device.h"
#include "cuda_fit.h"
#include "fit.h"
#include "fit_march.h"
#include "fit_mlp_arrays.cuh"

struct vx_fit_device {
    vx_fit_model m;             /* metadata only: lattice, box, mp, t (host arrays NULL) */
    float *d_data, *d_grad, *d_m, *d_v, *d_wmax;
    unsigned char *d_alive, *d_occ;
    int32_t *d_table, *d_bxyz;  /* bricked storage (m.nslots > 0): the brick table and coordinates */
    size_t occ_count;
    unsigned *d_active;         /* indices of the alive voxels, ascending */
    size_t n_active;
    int max_batch;
    float *d_origin, *d_dir, *d_target, *d_rgb, *d_loss;
    float *h_loss;
    double *d_sum;              /* loss / TV term accumulators */
    unsigned long long *d_count;
    int *d_num;                 /* the compaction's selected count */
    float *d_images;            /* training photos (views x h x w x 3) for version 2 */
    float *d_alpha;             /* their coverage (views x h x w; NULL: opaque photos) */
    float *d_bg;                /* a host batch's per-ray backgrounds (--random-bg) */
    int random_bg;              /* device-drawn rays against random backgrounds (--random-bg) */
    vx_camera *d_cams;
    int views, vw, vh;
    vx_fit_tiles tiles;         /* error map (--error-map): layout, n_map, device CDF (n_map 0: off) */
    int tiles_batch;            /* the batch size n_map was chosen for */
    int jitter;                 /* device-drawn rays through a random point of their pixel */
    float *d_cdf, *d_eacc;      /* its CDF and per-tile error sums and counts */
    float *d_render;            /* validation frame */
    size_t render_cap;
    int version;                /* ray kernel: 1 or 2 */
    int coarse_version;         /* the coarse level's restriction kernel: 1 or 2 */
    float *d_mlp, *d_mlp_grad, *d_mlp_m, *d_mlp_v; /* the mlp decoder's weights, dL/dweights, moments */
    vx_fit_mlp_record *d_rec;   /* its per-sample records (fit_mlp.cuh) */
    unsigned long long rec_cap, *d_rec_count; /* records held; reserved, written */
    int *d_defer[2];            /* rays put off to the next pass (ping-pong), their count */
    unsigned *d_ndefer;
    int mlp_kernel;             /* 1: the network in the ray kernel (fit_mlp.cuh), 2: batched */
    vx_fit_mlp_batch mb;        /* the batched step's per-sample arrays (fit_mlp_batch.cuh) */
    unsigned long long mb_cap;  /* their capacity in samples (0: not allocated yet) */
    int mlpb_gather;            /* the batched step's gather: 1 (count, then write) or 2 (one march into slots) */
    vx_fit_mlp_batch mb_st;     /* gather 2's staging rows (x, pt, dt; mb_cap of them, on first use) */
    int mb_blocks[2][2][2];     /* persistent blocks of the [FP32, TF32][forward, backward][layers - 1] kernels */
    int mlp_tc;                 /* the batched network's hidden layers on the tensor cores (TF32) */
    int profile;
    double prof_ms[VX_FIT_PROF_N];
    double prof_mlpb[5], prof_samples; /* profiling: the batched mlp step's kernels, samples */
    float *d_lv[VX_FIT_LEVELS][4]; /* the coarse levels (m.nlevels): gradient (then step), moments,
                                    * value (--coarse-decay; NULL otherwise) */
};

static inline size_t vx_fitd_nv(const vx_fit_model *m) { return vx_fit_storage_voxels(m); }
static inline size_t vx_fitd_entries(const vx_fit_model *m) { return (size_t)m->bn[0] * m->bn[1] * m->bn[2]; }

/* The voxel addressing of the device model (device pointers). */
static inline vx_fit_index vx_fitd_index(const vx_fit_device *g) {
    vx_fit_index L;
    vx_fit_index_of(&g->m, &L);
    L.table = g->m.nslots ? g->d_table : NULL;
    L.bxyz = g->m.nslots ? g->d_bxyz : NULL;
    return L;
}

/* Profiling waits for the device around a step (checked: a fault shows at the step). */
static inline int vx_fitd_prof_start(vx_fit_device *g, double *t0) {
    if (!g->profile) return 0;
    if (vx_cuda_sync()) return -1;
    *t0 = vx_now();
    return 0;
}
static inline int vx_fitd_prof_stop(vx_fit_device *g, int k, double t0) {
    if (!g->profile) return 0;
    if (vx_cuda_sync()) return -1;
    g->prof_ms[k] += 1e3 * (vx_now() - t0);
    return 0;
}

/* fit.cu's storage helpers: free and allocate g->m's grid arrays (bricked when
 * g->m.nslots > 0; the caller uploads table and bxyz), rebuild the alive-voxel list. */
void vx_fitd_free_grid(vx_fit_device *g);
int vx_fitd_alloc_grid(vx_fit_device *g);
int vx_fitd_compact(vx_fit_device *g);

#endif
