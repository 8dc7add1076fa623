/* fit_backend_cpu.c - the CPU table of fit_backend.h: the vx_fit_*_cpu steps of fit_cpu.c
 * on the host model, rays drawn on the host, validation with the CPU renderer. */
#include <stdlib.h>
#include <string.h>

#include "fit_backend.h"
#include "fit_coarse.h"
#include "vx_common.h"

struct vx_fit_backend {
    vx_fit_model *f;
    const vx_dataset *train;
    vx_fit_batch batch;
    float *rgb, *err; /* per ray: rendered colour and squared error (--error-map only) */
};

int vx_fit_render_view_cpu(const vx_fit_model *f, const vx_dataset *d, int v, vx_frame *fr) {
    vx_scene s;
    vx_volume vol;
    vx_render_opts o;
    vx_fit_as_scene(f, &s);
    vx_render_opts_default(&o);
    if (vx_frame_alloc(fr, d->width, d->height, 0)) return -1;
    if (vx_volume_prepare(&vol, &s, &o)) { vx_frame_free(fr); return -1; }
    int rc = vx_render_cpu(&vol, &d->cams[v], &o, fr);
    vx_volume_free(&vol);
    if (rc) vx_frame_free(fr);
    return rc;
}

static int vx__create(vx_fit_backend **out, vx_fit_model *f, const vx_dataset *train, int batch) {
    vx_fit_backend *b = vx_calloc(1, sizeof *b, "fit CPU state");
    if (!b) return -1;
    b->f = f;
    b->train = train;
    if (vx_fit_batch_alloc(&b->batch, batch)) { free(b); return -1; }
    *out = b;
    return 0;
}

static void vx__destroy(vx_fit_backend *b) {
    if (!b) return;
    vx_fit_batch_free(&b->batch);
    free(b->rgb);
    free(b->err);
    free(b);
}

static const vx_fit_model *vx__model(const vx_fit_backend *b) { return b->f; }
static int vx__update_params(vx_fit_backend *b, float stop) { return vx_fit_update_params(b->f, stop); }
static void vx__track_weights(vx_fit_backend *b, int on) { b->f->track_wmax = on; }

static int vx__step(vx_fit_backend *b, const vx_fit_step *s, double *loss) {
    if (s->map && !b->rgb) {
        b->rgb = vx_malloc((size_t)b->batch.n * 3 * sizeof(float), "fit ray colours");
        b->err = vx_malloc((size_t)b->batch.n * sizeof(float), "fit ray errors");
        if (!b->rgb || !b->err) return -1;
    }
    vx_fit_tiles t = {.views = b->train->n, .w = b->train->width, .h = b->train->height};
    if (s->map) t = s->map->t;
    t.jitter = s->hp->jitter;
    t.random_bg = s->hp->random_bg;
    vx_fit_sample_batch_map(b->train, s->ray_seed, &t, &b->batch);
    if (s->occ_cell > 0 && vx_fit_occupancy_build_cpu(b->f, s->occ_cell)) return -1;
    vx_fit_zero_grad_cpu(b->f);
    b->f->reg_sparsity = s->hp->sparsity;
    b->f->reg_distortion = s->hp->distortion;
    b->f->reg_binary = s->hp->binary_alpha;
    b->f->reg_rgbper = s->hp->rgbper;
    *loss = vx_fit_rays_backward_cpu(b->f, &b->batch, s->map ? b->rgb : NULL);
    if (s->map) {
        for (int r = 0; r < b->batch.n; r++) b->err[r] = vx_fit_ray_error(b->rgb + 3 * r, b->batch.target + 3 * r);
        vx_fit_errmap_add_cpu(&s->map->t, s->ray_seed, b->batch.n, b->err, s->map->acc);
    }
    if (s->tv_sigma > 0 || s->tv_sh > 0)
        vx_fit_tv_backward_cpu(b->f, s->tv_sigma, s->tv_sh, s->hp->tv_fraction, s->tv_seed, s->hp->tv_eps);
    if (vx_fit_coarse_restrict_cpu(b->f)) return -1; /* before the fine step consumes the gradient */
    vx_fit_adam_step_cpu(b->f, s->hp, s->lr_sigma, s->lr_sh);
    vx_fit_adam_step_mlp_cpu(b->f, s->hp, s->lr_mlp);
    return vx_fit_coarse_apply_cpu(b->f, s->hp, s->lr_coarse, s->lr_coarse_sigma);
}

static int vx__errmap_fetch(vx_fit_backend *b, vx_fit_errmap *map) { (void)b; (void)map; return 0; }

static int vx__prune(vx_fit_backend *b, float thresh, size_t *pruned) {
    *pruned = vx_fit_prune_cpu(b->f, thresh);
    return 0;
}

static int vx__alive_mask(vx_fit_backend *b, unsigned char *mask, size_t *alive) {
    *alive = vx_fit_alive_mask_cpu(b->f, mask);
    return 0;
}

static size_t vx__alive_count(vx_fit_backend *b) {
    int lo[3], hi[3];
    return vx_fit_alive_bounds_cpu(b->f, lo, hi);
}

static int vx__resample(vx_fit_backend *b, const double lo[3], const double hi[3], const int res[3]) {
    /* the crop shrinks the box: the levels follow (fit_coarse.h) */
    return vx_fit_resample_cpu(b->f, lo, hi, res) || (b->f->coarse_cut && vx_fit_coarse_rebox_cpu(b->f)) ? -1 : 0;
}
static int vx__upsample(vx_fit_backend *b, const int res[3]) { return vx_fit_upsample_cpu(b->f, res); }

static int vx__render(vx_fit_backend *b, const vx_dataset *d, int v, int occ_cell, vx_frame *fr) {
    (void)occ_cell; /* the renderer builds its own occupancy grid */
    return vx_fit_render_view_cpu(b->f, d, v, fr);
}

static int vx__sync(vx_fit_backend *b) { (void)b; return 0; }
static void vx__profile(vx_fit_backend *b, int on) { (void)b; (void)on; }
static int vx__timings(vx_fit_backend *b, double ms[VX_FIT_PROF_N]) { (void)b; memset(ms, 0, VX_FIT_PROF_N * sizeof *ms); return 0; }
static size_t vx__mem_in_use(void) { return 0; }

const vx_fit_backend_ops vx_fit_backend_cpu = {
    .name = "cpu", .on_device = 0,
    .create = vx__create, .destroy = vx__destroy, .model = vx__model, .update_params = vx__update_params,
    .track_weights = vx__track_weights, .step = vx__step, .errmap_fetch = vx__errmap_fetch, .prune = vx__prune, .alive_mask = vx__alive_mask,
    .alive_count = vx__alive_count, .resample = vx__resample, .upsample = vx__upsample, .render = vx__render,
    .sync = vx__sync, .profile = vx__profile, .timings = vx__timings, .mem_in_use = vx__mem_in_use,
};
