/* fit_backend_cuda.c - the CUDA table of fit_backend.h: the vx_fit_*_cuda steps of
 * kernels/fit.cu on a device copy of the model, rays drawn on the device, validation with
 * the fit's own forward kernel. Compiled to nothing without CUDA. */
#ifdef VX_HAVE_CUDA
#include <stdlib.h>

#include "cuda_device.h"
#include "cuda_fit.h"
#include "fit_backend.h"
#include "vx_common.h"

struct vx_fit_backend {
    vx_fit_model *f; /* the host model: written by sync */
    vx_fit_device *g;
    int map_version; /* the error map's CDF on the device (0: none yet) */
    int tc;          /* the network on the tensor cores (vx_fit_hparams.mlp_tc resolved; -2: not yet) */
};

static int vx__create(vx_fit_backend **out, vx_fit_model *f, const vx_dataset *train, int batch) {
    vx_fit_backend *b = vx_calloc(1, sizeof *b, "fit CUDA backend");
    if (!b) return -1;
    b->f = f;
    b->tc = -2;
    if (vx_fit_model_upload_cuda(&b->g, f, batch) || vx_fit_views_upload_cuda(b->g, train)) {
        vx_fit_model_free_cuda(b->g);
        free(b);
        return -1;
    }
    *out = b;
    return 0;
}

static void vx__destroy(vx_fit_backend *b) {
    if (!b) return;
    vx_fit_model_free_cuda(b->g);
    free(b);
}

static const vx_fit_model *vx__model(const vx_fit_backend *b) { return vx_fit_model_meta_cuda(b->g); }

static int vx__update_params(vx_fit_backend *b, float stop) {
    return vx_fit_update_params(b->f, stop) || vx_fit_update_params_cuda(b->g, stop) ? -1 : 0;
}

static void vx__track_weights(vx_fit_backend *b, int on) {
    b->f->track_wmax = on;
    vx_fit_track_weights_cuda(b->g, on);
}

/* The Adam step clears the gradient it consumed: no full-array zeroing per step. */
static int vx__step(vx_fit_backend *b, const vx_fit_step *s, double *loss) {
    if (s->occ_cell > 0 && vx_fit_occupancy_build_cuda(b->g, s->occ_cell)) return -1;
    vx_fit_set_ray_reg_cuda(b->g, s->hp->sparsity, s->hp->distortion, s->hp->binary_alpha);
    vx_fit_set_jitter_cuda(b->g, s->hp->jitter);
    vx_fit_set_random_bg_cuda(b->g, s->hp->random_bg);
    vx_fit_set_rgbper_cuda(b->g, s->hp->rgbper);
    if (b->tc == -2) { /* the default: the tensor cores where the GPU has them, for the batched step's network */
        int batched = b->f->mlp_layers && s->hp->mlp_kernel != 1;
        b->tc = s->hp->mlp_tc > 0 ? 1 : batched ? vx_cuda_mlp_tc_resolve(s->hp->mlp_tc, "fit") : 0;
        if (b->tc < 0) return -1;
        if (b->tc && !s->hp->mlp_tc) vx_note("fit: the mlp network on the tensor cores (TF32; --no-mlp-tensor-cores: FP32)");
    }
    if (vx_fit_set_mlp_kernel_cuda(b->g, s->hp->mlp_kernel) || vx_fit_set_mlp_tc_cuda(b->g, b->tc) ||
        (s->hp->mlp_gather && vx_fit_set_mlpb_gather_cuda(b->g, s->hp->mlp_gather)))
        return -1;
    if (s->map && s->map->version != b->map_version) {
        if (vx_fit_errmap_upload_cuda(b->g, &s->map->t, s->batch)) return -1;
        b->map_version = s->map->version;
    }
    if (vx_fit_rays_sampled_cuda(b->g, s->batch, s->ray_seed, loss)) return -1;
    if ((s->tv_sigma > 0 || s->tv_sh > 0) &&
        vx_fit_tv_backward_cuda(b->g, s->tv_sigma, s->tv_sh, s->hp->tv_fraction, s->tv_seed, s->hp->tv_eps, NULL))
        return -1;
    return vx_fit_coarse_restrict_cuda(b->g) || vx_fit_adam_step_cuda(b->g, s->hp, s->lr_sigma, s->lr_sh) ||
                   vx_fit_adam_step_mlp_cuda(b->g, s->hp, s->lr_mlp) || vx_fit_coarse_apply_cuda(b->g, s->hp, s->lr_coarse, s->lr_coarse_sigma)
               ? -1
               : 0;
}

static int vx__errmap_fetch(vx_fit_backend *b, vx_fit_errmap *map) { return vx_fit_errmap_fetch_cuda(b->g, map->acc); }

static int vx__prune(vx_fit_backend *b, float thresh, size_t *pruned) {
    return vx_fit_prune_cuda(b->g, thresh, pruned);
}

static int vx__alive_mask(vx_fit_backend *b, unsigned char *mask, size_t *alive) {
    return vx_fit_alive_mask_cuda(b->g, mask, alive);
}

static size_t vx__alive_count(vx_fit_backend *b) { return vx_fit_alive_count_cuda(b->g); }

static int vx__resample(vx_fit_backend *b, const double lo[3], const double hi[3], const int res[3]) {
    /* the crop shrinks the box: the levels follow (fit_coarse.h) */
    return vx_fit_resample_cuda(b->g, lo, hi, res) || (b->f->coarse_cut && vx_fit_coarse_rebox_cuda(b->g)) ? -1 : 0;
}
static int vx__upsample(vx_fit_backend *b, const int res[3]) { return vx_fit_upsample_cuda(b->g, res); }

static int vx__render(vx_fit_backend *b, const vx_dataset *d, int v, int occ_cell, vx_frame *fr) {
    if (vx_frame_alloc(fr, d->width, d->height, 0)) return -1;
    if ((occ_cell > 0 && vx_fit_occupancy_build_cuda(b->g, occ_cell)) || vx_fit_render_view_cuda(b->g, &d->cams[v], fr->rgb)) {
        vx_frame_free(fr);
        return -1;
    }
    return 0;
}

/* Parameters only: the moments and the gradient stay on the device. */
static int vx__sync(vx_fit_backend *b) { return vx_fit_params_download_cuda(b->g, b->f); }
static void vx__profile(vx_fit_backend *b, int on) { vx_fit_profile_cuda(b->g, on); }

static int vx__timings(vx_fit_backend *b, double ms[VX_FIT_PROF_N]) {
    vx_fit_timings_cuda(b->g, ms);
    return 1;
}

const vx_fit_backend_ops vx_fit_backend_cuda = {
    .name = "cuda", .on_device = 1,
    .create = vx__create, .destroy = vx__destroy, .model = vx__model, .update_params = vx__update_params,
    .track_weights = vx__track_weights, .step = vx__step, .errmap_fetch = vx__errmap_fetch, .prune = vx__prune, .alive_mask = vx__alive_mask,
    .alive_count = vx__alive_count, .resample = vx__resample, .upsample = vx__upsample, .render = vx__render,
    .sync = vx__sync, .profile = vx__profile, .timings = vx__timings, .mem_in_use = vx_cuda_mem_in_use,
};
#else
typedef int vx__fit_backend_cuda_empty; /* ISO C wants a declaration in every unit */
#endif
