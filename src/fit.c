/* fit.c - `voxray fit` (optimise a voxel grid from posed photos, Plenoxels style) and
 * `voxray eval` (PSNR/SSIM of a scene against a dataset split): argument parsing, the
 * training loop over the vx_fit_*_cpu steps, validation renders and the final report. */
#include "fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "image.h"
#include "metrics.h"
#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "vx_cuda.h"
#endif

void vx_fit_config_default(vx_fit_config *c) {
    memset(c, 0, sizeof *c);
    c->stages = 1;
    c->res[0][0] = c->res[0][1] = c->res[0][2] = 128;
    c->crop = 1; /* stage_end all 0: equal shares */
    c->iters = 2000;
    c->batch = 4096;
    c->seed = 1;
    vx_fit_hparams_default(&c->hp);
    c->stop = 1e-4f;
    c->occ_cell = 8;
    c->val_every = 500;
    c->val_views = 3;
    c->log_every = 50;
}

void vx_fit_config_cuda_defaults(vx_fit_config *c, unsigned set) {
    static const int res[3] = {128, 256, 512};
    if (!(set & VX_FIT_SET_RES)) {
        c->stages = 3;
        for (int s = 0; s < 3; s++) c->res[s][0] = c->res[s][1] = c->res[s][2] = res[s];
        if (!(set & VX_FIT_SET_STAGE_ENDS)) {
            c->stage_end[0] = 0.1;
            c->stage_end[1] = 0.3;
        }
    }
    if (!(set & VX_FIT_SET_BATCH)) c->batch = 65536;
    if (!(set & VX_FIT_SET_ITERS)) {
        c->iters = 100000000; /* the clock ends the run */
        if (!(set & VX_FIT_SET_MAX_SECONDS)) c->max_seconds = 300;
    }
    if (!(set & VX_FIT_SET_VAL_EVERY)) c->val_every = 10000;
}

/* ---- geometry ---------------------------------------------------------------------------- */

int vx_fit_box_from_cameras(const vx_camera *cams, int n, double lo[3], double hi[3]) {
    if (n < 1) return vx_error("fit: no cameras to choose a box from");
    double A[9] = {0}, b[3] = {0};
    for (int i = 0; i < n; i++) {
        const float *m = cams[i].c2w;
        double f[3] = {-m[2], -m[6], -m[10]}, o[3] = {m[3], m[7], m[11]};
        double fl = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
        for (int a = 0; a < 3; a++) f[a] /= fl;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                double p = (r == c) - f[r] * f[c]; /* projector onto the plane normal to the axis */
                A[r * 3 + c] += p;
                b[r] += p * o[c];
            }
    }
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                 A[2] * (A[3] * A[7] - A[4] * A[6]);
    double ctr[3] = {0, 0, 0};
    if (fabs(det) > 1e-9 * n * n * n) { /* Cramer's rule */
        for (int k = 0; k < 3; k++) {
            double M[9];
            memcpy(M, A, sizeof M);
            for (int r = 0; r < 3; r++) M[r * 3 + k] = b[r];
            ctr[k] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) +
                      M[2] * (M[3] * M[7] - M[4] * M[6])) / det;
        }
    }
    double half = INFINITY;
    for (int i = 0; i < n; i++) {
        const float *m = cams[i].c2w;
        double d = sqrt((m[3] - ctr[0]) * (m[3] - ctr[0]) + (m[7] - ctr[1]) * (m[7] - ctr[1]) +
                        (m[11] - ctr[2]) * (m[11] - ctr[2]));
        double t = tan(0.5 * cams[i].fov_x);
        double tv = t * cams[i].height / cams[i].width;
        half = fmin(half, d * fmin(t, tv));
    }
    if (!(half > 0) || !isfinite(half)) return vx_error("fit: cannot choose a box from the cameras (use --bbox)");
    for (int a = 0; a < 3; a++) { lo[a] = ctr[a] - half; hi[a] = ctr[a] + half; }
    return 0;
}

/* ---- rendering and validation ------------------------------------------------------------- */

int vx_fit_render_view(const vx_fit_model *f, const vx_dataset *d, int v, vx_frame *fr) {
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

/* Photo | render side by side, written as one PNG. */
static int vx__write_pair(const char *path, const float *photo, const vx_frame *r) {
    vx_frame p;
    if (vx_frame_alloc(&p, 2 * r->width, r->height, 0)) return -1;
    for (int i = 0; i < r->height; i++) {
        memcpy(p.rgb + (size_t)i * 2 * r->width * 3, photo + (size_t)i * r->width * 3, r->width * 3 * sizeof(float));
        memcpy(p.rgb + ((size_t)i * 2 + 1) * r->width * 3, r->rgb + (size_t)i * r->width * 3, r->width * 3 * sizeof(float));
    }
    int rc = vx_image_write_png(path, &p, 0);
    vx_frame_free(&p);
    return rc;
}

/* The steps on the chosen backend: g == NULL runs the vx_fit_*_cpu functions on f, else
 * their vx_fit_*_cuda twins on the device copy (f is refreshed by vx__sync). */
typedef struct {
    vx_fit_model *f;
    vx_fit_cuda *g;
} vx__trainer;

#ifdef VX_HAVE_CUDA
#define VX__ON_GPU(t) ((t)->g != NULL)
#else
#define VX__ON_GPU(t) 0
#endif

/* The model's metadata wherever it lives (the device's after a resample there). */
static const vx_fit_model *vx__meta(const vx__trainer *t) { return VX__ON_GPU(t) ? vx_fit_cuda_model(t->g) : t->f; }

/* Bring the parameters to the host (for writing; the moments and the gradient stay on the
 * device). */
static int vx__sync(vx__trainer *t) { return VX__ON_GPU(t) ? vx_fit_cuda_download_params(t->g, t->f) : 0; }

/* Render view v of d from the current model into fr (allocated here): on the device with
 * the fit's own forward kernel, or with the CPU renderer. */
static int vx__render_model(vx__trainer *t, const vx_fit_config *cfg, const vx_dataset *d, int v, vx_frame *fr) {
    if (!VX__ON_GPU(t)) return vx_fit_render_view(t->f, d, v, fr);
    if (vx_frame_alloc(fr, d->width, d->height, 0)) return -1;
    if ((cfg->occ_cell > 0 && vx_fit_occupancy_cuda(t->g, cfg->occ_cell)) ||
        vx_fit_render_cuda(t->g, &d->cams[v], fr->rgb)) {
        vx_frame_free(fr);
        return -1;
    }
    return 0;
}

/* Mean PSNR over the first `views` views of d; renders go to dir/iter_N_vK.png if dir. */
static int vx__validate(vx__trainer *t, const vx_fit_config *cfg, const vx_dataset *d, int views, const char *dir,
                        int iter, double *psnr) {
    double sum = 0.0;
    views = vx_mini(views, d->n);
    int rc = 0;
    for (int v = 0; v < views && !rc; v++) {
        vx_frame fr;
        if (vx__render_model(t, cfg, d, v, &fr)) { rc = -1; break; }
        sum += vx_psnr(fr.rgb, vx_dataset_image(d, v), (size_t)d->width * d->height * 3);
        if (dir) {
            char name[64], path[4200];
            snprintf(name, sizeof name, "iter_%06d_v%d.png", iter, v);
            vx_path_join(dir, name, path, sizeof path);
            rc = vx_mkdirs_for(path) || vx__write_pair(path, vx_dataset_image(d, v), &fr) ? -1 : 0;
        }
        vx_frame_free(&fr);
    }
    if (!rc) *psnr = views ? sum / views : NAN;
    return rc;
}

/* ---- the training loop -------------------------------------------------------------------- */

static void vx__track_weights(vx__trainer *t, int on) {
    t->f->track_wmax = on;
#ifdef VX_HAVE_CUDA
    if (t->g) vx_fit_track_weights_cuda(t->g, on);
#endif
}

static int vx__prune(vx__trainer *t, float thresh, size_t *pruned) {
    if (VX__ON_GPU(t)) return vx_fit_prune_cuda(t->g, thresh, pruned);
    *pruned = vx_fit_prune_cpu(t->f, thresh);
    return 0;
}

/* The stage change: prune, then resample to the next stage's lattice: the same box at
 * res, or (crop) the box of the alive voxels at the voxel size edge0 / res[0]. */
static int vx__next_stage(vx__trainer *t, const vx_fit_config *cfg, int stage, double edge0, size_t *pruned) {
    if (vx__prune(t, cfg->hp.prune_weight, pruned)) return -1;
    const int *res = cfg->res[stage];
    const vx_fit_model *m = vx__meta(t);
    if (!cfg->crop) {
        if (VX__ON_GPU(t)) return vx_fit_upsample_cuda(t->g, res);
        return vx_fit_upsample_cpu(t->f, res);
    }
    int ilo[3], ihi[3], nres[3];
    size_t alive;
    double lo[3], hi[3];
    if (VX__ON_GPU(t)) {
        if (vx_fit_alive_bounds_cuda(t->g, ilo, ihi, &alive)) return -1;
    } else {
        alive = vx_fit_alive_bounds_cpu(t->f, ilo, ihi);
    }
    if (!alive) return vx_error("fit: pruning removed every voxel (no training ray saw any density); "
                                "check the dataset's poses and --bbox");
    if (vx_fit_crop_box(m, ilo, ihi, 2, edge0 / res[0], lo, hi, nres)) return -1;
    if (VX__ON_GPU(t)) return vx_fit_resample_cuda(t->g, lo, hi, nres);
    return vx_fit_resample_cpu(t->f, lo, hi, nres);
}

static int vx__step(vx__trainer *t, const vx_fit_config *cfg, const vx_dataset *train, vx_fit_batch *b, float decay,
                    uint64_t ray_seed, uint64_t tv_seed, double *loss) {
    const vx_fit_hparams *h = &cfg->hp;
    int tv = h->tv_sigma > 0 || h->tv_sh > 0;
    /* TV weights are per 4096 rays: the photometric loss is a mean, so a voxel's gradient from
     * one ray shrinks as 1/batch while TV's does not; where rays reach a voxel less than once a
     * step (fine grids), Adam then follows TV and smooths the model into fog (measured: a
     * 16x batch at the same weight lost 4 dB and its fine-stage loss rose). */
    float tvs = 4096.0f / (float)cfg->batch, tv_sigma = h->tv_sigma * tvs, tv_sh = h->tv_sh * tvs;
    if (VX__ON_GPU(t)) {
        /* the Adam step clears the gradient it consumed: no full-array zeroing per step */
        if (cfg->occ_cell > 0 && vx_fit_occupancy_cuda(t->g, cfg->occ_cell)) return -1;
        if (vx_fit_rays_sampled_cuda(t->g, cfg->batch, ray_seed, loss)) return -1;
        if (tv && vx_fit_tv_backward_cuda(t->g, tv_sigma, tv_sh, h->tv_fraction, tv_seed, h->tv_eps, NULL))
            return -1;
        return vx_fit_adam_step_cuda(t->g, h, h->lr_sigma * decay, h->lr_sh * decay);
    }
    vx_fit_sample_batch(train, ray_seed, b);
    if (cfg->occ_cell > 0 && vx_fit_occupancy_cpu(t->f, cfg->occ_cell)) return -1;
    vx_fit_zero_grad_cpu(t->f);
    *loss = vx_fit_rays_backward_cpu(t->f, b, NULL);
    if (tv) vx_fit_tv_backward_cpu(t->f, tv_sigma, tv_sh, h->tv_fraction, tv_seed, h->tv_eps);
    vx_fit_adam_step_cpu(t->f, h, h->lr_sigma * decay, h->lr_sh * decay);
    return 0;
}

/* Progress at which stage s ends (stage_end 0: equal shares). */
static double vx__stage_end(const vx_fit_config *cfg, int s) {
    if (s >= cfg->stages - 1) return 1.0;
    return cfg->stage_end[s] > 0 ? cfg->stage_end[s] : (double)(s + 1) / cfg->stages;
}

/* Stage of progress p: the first whose end lies beyond p. */
static int vx__stage_at(const vx_fit_config *cfg, double p) {
    for (int s = 0; s < cfg->stages - 1; s++)
        if (p < vx__stage_end(cfg, s)) return s;
    return cfg->stages - 1;
}

int vx_fit_train(vx_fit_model *f, const vx_fit_config *cfg, const vx_dataset *train, const vx_dataset *val,
                 vx_fit_stats *st) {
    memset(st, 0, sizeof *st);
    st->val_psnr = NAN;
    if (cfg->stages < 1 || cfg->stages > VX_FIT_MAX_STAGES) return vx_error("fit: %d stages is outside 1..%d", cfg->stages, VX_FIT_MAX_STAGES);
    if (cfg->iters < 1 || cfg->batch < 1) return vx_error("fit: iterations and batch must be >= 1");
    for (int s = 0; s + 1 < cfg->stages; s++)
        if (!(vx__stage_end(cfg, s) > (s ? vx__stage_end(cfg, s - 1) : 0.0) && vx__stage_end(cfg, s) < 1.0))
            return vx_error("fit: stage ends must rise strictly inside (0, 1)");
    vx_fit_batch b;
    memset(&b, 0, sizeof b);
    vx__trainer t = {f, NULL};
    double t_start = vx_now(), t_train = 0.0, loss_acc = 0.0;
    double edge0 = fmax(f->box_hi[0] - f->box_lo[0], fmax(f->box_hi[1] - f->box_lo[1], f->box_hi[2] - f->box_lo[2]));
    long long rays = 0;
    int rc = -1;
    if (cfg->use_cuda) {
#ifdef VX_HAVE_CUDA
        if (vx_fit_cuda_create(&t.g, f, cfg->batch) || vx_fit_cuda_set_views(t.g, train)) goto done;
#else
        vx_error("fit: this voxray was built without CUDA");
        goto done;
#endif
    } else if (vx_fit_batch_alloc(&b, cfg->batch)) {
        return -1;
    }
    if (vx_fit_update_params(f, cfg->stop)) goto done;
#ifdef VX_HAVE_CUDA
    if (t.g && vx_fit_update_params_cuda(t.g, cfg->stop)) goto done;
#endif
    uint64_t rng = cfg->seed * 0x2545F4914F6CDD1Dull + 1;
    int stage = 0, win = 20, it_log = 0;
    double t_log = -1e9;
    static const double checkpoints[5] = {15, 30, 60, 120, 300};
    vx__track_weights(&t, 0);
    for (int it = 1; it <= cfg->iters; it++) {
        /* progress p in [0,1) drives the schedule: the iteration fraction, or the fraction of
         * --max-seconds when a time budget is set (then the run ends on the clock) */
        double p = cfg->max_seconds > 0 ? fmin(t_train / cfg->max_seconds, 0.999999)
                                        : (double)(it - 1) / (double)cfg->iters;
        int want = vx__stage_at(cfg, p);
        if (want > stage) {
            size_t pr = 0;
            double ts = vx_now();
            stage = want;
            vx__track_weights(&t, 0);
            if (vx__next_stage(&t, cfg, stage, edge0, &pr)) goto done;
            t_train += vx_now() - ts; /* the stage change is training time */
            st->pruned += pr;
            const vx_fit_model *m = vx__meta(&t);
            if (cfg->log_every)
                printf("fit: stage %d: pruned %zu voxels, resampled to %dx%dx%d in [%.3f %.3f %.3f] - [%.3f %.3f %.3f] "
                       "(%.2f s)\n", stage + 1, pr, m->nx, m->ny, m->nz, m->box_lo[0], m->box_lo[1], m->box_lo[2],
                       m->box_hi[0], m->box_hi[1], m->box_hi[2], vx_now() - ts);
        }
        /* pruning looks at the weights of the last quarter of the stage only: early on every
         * voxel still holds the initial density and is seen by some ray */
        if (stage + 1 < cfg->stages && !vx__meta(&t)->track_wmax) {
            double s0 = stage ? vx__stage_end(cfg, stage - 1) : 0.0, s1 = vx__stage_end(cfg, stage);
            if (p >= s0 + 0.75 * (s1 - s0)) {
                size_t none;
                if (vx__prune(&t, 0.0f, &none)) goto done; /* resets the max weights */
                vx__track_weights(&t, 1);
            }
        }
        double t0 = vx_now(), loss;
        float decay = powf(cfg->hp.lr_final_factor, (float)p);
        uint64_t ray_seed = vx_splitmix64(&rng), tv_seed = vx_splitmix64(&rng);
#ifdef VX_HAVE_CUDA
        /* every 20th step on the device is timed kernel by kernel (the waits cost little) */
        int prof = t.g && it % 20 == 0;
        if (t.g) vx_fit_cuda_profile(t.g, prof);
#endif
        if (vx__step(&t, cfg, train, &b, decay, ray_seed, tv_seed, &loss)) goto done;
        double dt = vx_now() - t0;
        t_train += dt;
        rays += cfg->batch;
        st->stage[stage].seconds += dt;
        st->stage[stage].rays += cfg->batch;
        st->stage[stage].steps++;
#ifdef VX_HAVE_CUDA
        if (prof) {
            double ms[4];
            vx_fit_cuda_timings(t.g, ms);
            for (int k = 0; k < 4; k++) st->stage[stage].prof_ms[k] += ms[k];
            st->stage[stage].prof_steps++;
        }
#endif
        {
            const vx_fit_model *m = vx__meta(&t);
            st->stage[stage].res[0] = m->nx; st->stage[stage].res[1] = m->ny; st->stage[stage].res[2] = m->nz;
#ifdef VX_HAVE_CUDA
            if (t.g) st->stage[stage].alive = vx_fit_cuda_alive(t.g);
#endif
            if (!VX__ON_GPU(&t) && (st->stage[stage].steps == 1 || (cfg->log_every && it % cfg->log_every == 0))) {
                int lo[3], hi[3];
                st->stage[stage].alive = vx_fit_alive_bounds_cpu(t.f, lo, hi);
            }
        }
        st->iters_done = it;
        if (!isfinite(loss)) { vx_error("fit: the loss became %g at iteration %d", loss, it); goto done; }
        if (it <= win) st->loss_first += (loss - st->loss_first) / it;
        st->loss_last += (loss - st->loss_last) / vx_mini(it, win); /* running mean over ~win iterations */
        loss_acc += loss;
        if (cfg->time_curve && val && st->curve_n < 5 && t_train >= checkpoints[st->curve_n]) {
            double vp;
            if (vx__validate(&t, cfg, val, cfg->val_views, NULL, it, &vp)) goto done;
            st->curve_s[st->curve_n] = checkpoints[st->curve_n];
            st->curve_psnr[st->curve_n++] = vp;
            printf("time-to-PSNR: %3.0f s of training (iteration %d): %.2f dB on %d held-out views\n",
                   checkpoints[st->curve_n - 1], it, vp, vx_mini(cfg->val_views, val->n));
        }
        int last = it == cfg->iters || (cfg->max_seconds > 0 && t_train >= cfg->max_seconds);
        if (val && ((cfg->val_every > 0 && it % cfg->val_every == 0) || last))
            if (vx__validate(&t, cfg, val, cfg->val_views, cfg->val_dir, it, &st->val_psnr)) goto done;
        /* a progress line every log_every iterations, but at most one per 2 s of wall time */
        if (cfg->log_every && ((it % cfg->log_every == 0 && vx_now() - t_log >= 2.0) || last)) {
            double l = loss_acc / fmax(1, it - it_log);
            it_log = it;
            t_log = vx_now();
            char vbuf[32], mbuf[64] = "";
            if (isnan(st->val_psnr)) snprintf(vbuf, sizeof vbuf, "   --");
            else snprintf(vbuf, sizeof vbuf, "%5.2f", st->val_psnr);
            const vx_fit_model *m = vx__meta(&t);
#ifdef VX_HAVE_CUDA
            if (t.g) {
                size_t used = vx_fit_cuda_mem_in_use();
                st->peak_bytes = used > st->peak_bytes ? used : st->peak_bytes;
                if (used > st->stage[stage].peak_bytes) st->stage[stage].peak_bytes = used;
                snprintf(mbuf, sizeof mbuf, "  %zu alive  %.1f GiB", vx_fit_cuda_alive(t.g), used / 1073741824.0);
            }
#endif
            printf("iter %6d/%d  %dx%dx%d  loss %.5f (%.2f dB)  val %s dB  %.0f rays/s  %.1f s%s\n", it, cfg->iters,
                   m->nx, m->ny, m->nz, l, vx_psnr_from_mse(l), vbuf, rays / fmax(t_train, 1e-9), vx_now() - t_start,
                   mbuf);
            fflush(stdout);
            loss_acc = 0.0;
        }
        if (last) break;
    }
    if (st->iters_done < cfg->iters && cfg->log_every)
        printf("fit: stopped after %d of %d iterations: --max-seconds %.0f reached\n", st->iters_done, cfg->iters,
               cfg->max_seconds);
    if (cfg->log_every) {
        printf("fit: per stage  %-14s %10s %8s %12s %s\n", "lattice", "alive", "seconds", "rays/s",
               VX__ON_GPU(&t) ? "  ms/step: rays    TV  Adam   occ   GPU memory" : "");
        for (int s = 0; s <= stage; s++) {
            char lat[48], tail[160] = "";
            snprintf(lat, sizeof lat, "%dx%dx%d", st->stage[s].res[0], st->stage[s].res[1], st->stage[s].res[2]);
            int n = st->stage[s].prof_steps;
            if (n)
                snprintf(tail, sizeof tail, "          %6.2f %5.2f %5.2f %5.2f   %.1f GiB", st->stage[s].prof_ms[0] / n,
                         st->stage[s].prof_ms[1] / n, st->stage[s].prof_ms[2] / n, st->stage[s].prof_ms[3] / n,
                         st->stage[s].peak_bytes / 1073741824.0);
            printf("fit:   stage %d  %-14s %10zu %8.1f %12.0f%s\n", s + 1, lat, st->stage[s].alive, st->stage[s].seconds,
                   st->stage[s].rays / fmax(st->stage[s].seconds, 1e-9), tail);
        }
    }
    if (st->curve_n && cfg->log_every) {
        printf("time-to-PSNR:");
        for (int k = 0; k < st->curve_n; k++) printf("  %.0f s %.2f dB", st->curve_s[k], st->curve_psnr[k]);
        printf("\n");
    }
    if (vx__sync(&t)) goto done;
    rc = 0;
done:
    st->seconds = vx_now() - t_start;
    st->train_seconds = t_train;
    st->rays_per_s = rays / fmax(t_train, 1e-9);
#ifdef VX_HAVE_CUDA
    vx_fit_cuda_destroy(t.g);
#endif
    vx_fit_batch_free(&b);
    return rc;
}

/* ---- report ------------------------------------------------------------------------------- */

/* PSNR/SSIM per view of d rendered by render_fn, printed as a table with the mean. */
typedef int (*vx__render_fn)(void *ctx, const vx_dataset *d, int v, vx_frame *fr);

static int vx__report(const char *title, const vx_dataset *d, vx__render_fn fn, void *ctx, const char *save_dir,
                      double *mean_psnr, double *mean_ssim) {
    double sp = 0.0, ss = 0.0;
    printf("%s\n  %-32s %9s %7s\n", title, "view", "PSNR dB", "SSIM");
    for (int v = 0; v < d->n; v++) {
        vx_frame fr;
        if (fn(ctx, d, v, &fr)) return -1;
        const float *photo = vx_dataset_image(d, v);
        double p = vx_psnr(fr.rgb, photo, (size_t)d->width * d->height * 3);
        double s = vx_ssim(fr.rgb, photo, d->width, d->height, 3);
        printf("  %-32s %9.3f %7.4f\n", d->names[v], p, s);
        sp += p;
        ss += s;
        int rc = 0;
        if (save_dir) {
            char name[64], path[4200];
            snprintf(name, sizeof name, "final_%03d.png", v);
            vx_path_join(save_dir, name, path, sizeof path);
            rc = vx_mkdirs_for(path) || vx__write_pair(path, photo, &fr);
        }
        vx_frame_free(&fr);
        if (rc) return -1;
    }
    *mean_psnr = sp / d->n;
    *mean_ssim = ss / d->n;
    printf("  %-32s %9.3f %7.4f\n", "mean", *mean_psnr, *mean_ssim);
    return 0;
}

static int vx__render_renderer(void *ctx, const vx_dataset *d, int v, vx_frame *fr) {
    if (vx_frame_alloc(fr, d->width, d->height, 0)) return -1;
    if (vx_renderer_render((vx_renderer *)ctx, &d->cams[v], fr)) { vx_frame_free(fr); return -1; }
    return 0;
}

/* ---- voxray fit ---------------------------------------------------------------------------- */

static void vx__fit_usage(FILE *o) {
    fprintf(o,
            "usage: voxray fit DATASET -o SCENE_DIR [options]\n"
            "\n"
            "Optimise a voxel grid (density + spherical harmonics, Plenoxels style, no network)\n"
            "from posed photos in the NeRF 'Blender synthetic' layout, then write SCENE_DIR/scene.json\n"
            "and SCENE_DIR/grid.npy for voxray render / voxray view. Every 8th training view is held\n"
            "out for validation unless --val-split names a split.\n"
            "\n"
            "  -o, --output DIR     scene directory to write\n"
            "  --res R1[,R2..]      voxels along each box edge per coarse-to-fine stage, up to %d\n"
            "                       (default 128; CUDA: 128,256,512); after each stage the box shrinks\n"
            "                       to the voxels that survived pruning, keeping the voxel size edge/R\n"
            "                       of the first box\n"
            "  --stage-ends P1[,..] progress fractions at which each stage but the last ends\n"
            "                       (default: equal shares; CUDA without --res: 0.1,0.3)\n"
            "  --no-crop            keep the whole box in every stage\n"
            "  --dense-adam         update every alive parameter each step (default: only those\n"
            "                       with a gradient, i.e. touched by the batch or the TV subset)\n"
            "  --iters N            total iterations, split evenly over the stages (default 2000;\n"
            "                       CUDA: no limit, the clock ends the run)\n"
            "  --batch RAYS         rays per iteration (default 4096; CUDA: 65536)\n"
            "  --sh-degree D        0..3 (default 2)\n"
            "  --val-every K        validation renders every K iterations, 0: only at the end\n"
            "                       (default 500; CUDA: 10000)\n"
            "  --val-views N        held-out views in the progress PSNR (default 3)\n"
            "  --val-split NAME     use transforms_NAME.json as the held-out set\n"
            "  --downscale F        average FxF pixel blocks of every photo (default 1)\n"
            "  --bbox x0,y0,z0,x1,y1,z1  world box (default: from the cameras)\n"
            "  --step S             segment length in voxels (default 0.5)\n"
            "  --lr-sigma A --lr-sh B    Adam step sizes (default 0.5, 0.02)\n"
            "  --tv-sigma A --tv-sh B    total-variation weights per 4096 rays of batch (default 0: off)\n"
            "  --seed S             random seed (default 1)\n"
            "  --max-seconds S      stop once training (validation excluded) has taken S seconds\n"
            "                       (CUDA without --iters: 300, the recorded run of docs/FIT.md)\n"
            "  --time-curve         held-out PSNR after 15, 30, 60, 120 and 300 s of training\n"
            "  --backend auto|cpu|cuda   where to train (default auto)\n"
            "  -h, --help           this text\n",
            VX_FIT_MAX_STAGES);
}

static int vx__usage_error(const char *cmd, const char *msg) {
    fprintf(stderr, "voxray %s: %s (see voxray %s --help)\n", cmd, msg, cmd);
    return 2;
}

static int vx__parse_res(const char *s, vx_fit_config *c) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *save, *tok = strtok_r(buf, ",", &save);
    c->stages = 0;
    for (; tok; tok = strtok_r(NULL, ",", &save)) {
        if (c->stages == VX_FIT_MAX_STAGES) return vx_error("--res: at most %d stages", VX_FIT_MAX_STAGES);
        int r;
        if (vx_parse_int("--res", tok, 2, 1024, &r)) return -1;
        c->res[c->stages][0] = c->res[c->stages][1] = c->res[c->stages][2] = r;
        c->stages++;
    }
    if (!c->stages) return vx_error("--res: '%s' names no resolution", s);
    return 0;
}

/* Stage ends: "p1,p2,..", one per stage but the last, rising inside (0, 1); NULL leaves
 * the default (every stage an equal share). */
static int vx__parse_stage_ends(const char *s, vx_fit_config *c) {
    if (!s) return 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *save, *tok = strtok_r(buf, ",", &save);
    int k = 0;
    for (; tok; tok = strtok_r(NULL, ",", &save), k++) {
        if (k >= c->stages - 1) return vx_error("--stage-ends: '%s' has more than the %d values --res needs", s, c->stages - 1);
        if (vx_parse_double("--stage-ends", tok, 1e-6, 1.0 - 1e-6, &c->stage_end[k])) return -1;
        if (k && !(c->stage_end[k] > c->stage_end[k - 1])) return vx_error("--stage-ends: '%s' must rise", s);
    }
    if (k != c->stages - 1) return vx_error("--stage-ends: '%s' needs %d values for %d stages", s, c->stages - 1, c->stages);
    return 0;
}

static int vx__parse_bbox(const char *s, double lo[3], double hi[3]) {
    char buf[512];
    double v[6];
    snprintf(buf, sizeof buf, "%s", s);
    char *save, *tok = strtok_r(buf, ",", &save);
    for (int i = 0; i < 6; i++, tok = strtok_r(NULL, ",", &save)) {
        if (!tok) return vx_error("--bbox: '%s' must be six numbers x0,y0,z0,x1,y1,z1", s);
        if (vx_parse_double("--bbox", tok, -1e9, 1e9, &v[i])) return -1;
    }
    if (tok) return vx_error("--bbox: '%s' must be six numbers x0,y0,z0,x1,y1,z1", s);
    for (int a = 0; a < 3; a++) {
        lo[a] = v[a];
        hi[a] = v[3 + a];
        if (!(hi[a] > lo[a])) return vx_error("--bbox: max must exceed min on every axis");
    }
    return 0;
}

#ifdef VX_HAVE_CUDA
/* One stderr line naming the values vx_fit_config_cuda_defaults filled in (read back from
 * the config, so the line cannot disagree with the rule). */
static void vx__print_cuda_defaults(const vx_fit_config *c, unsigned set) {
    char line[512];
    size_t n = 0;
#define VX__ADD(...) (n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, __VA_ARGS__))
    if (!(set & VX_FIT_SET_RES)) {
        VX__ADD(" --res");
        for (int s = 0; s < c->stages; s++) VX__ADD("%c%d", s ? ',' : ' ', c->res[s][0]);
        if (!(set & VX_FIT_SET_STAGE_ENDS))
            for (int s = 0; s + 1 < c->stages; s++) VX__ADD("%s%g", s ? "," : " --stage-ends ", c->stage_end[s]);
    }
    if (!(set & VX_FIT_SET_BATCH)) VX__ADD(" --batch %d", c->batch);
    if (!(set & VX_FIT_SET_ITERS)) VX__ADD(" (no iteration limit)");
    if (!(set & (VX_FIT_SET_ITERS | VX_FIT_SET_MAX_SECONDS))) VX__ADD(" --max-seconds %g", c->max_seconds);
    if (!(set & VX_FIT_SET_VAL_EVERY)) VX__ADD(" --val-every %d", c->val_every);
#undef VX__ADD
    if (n) fprintf(stderr, "voxray: fit: CUDA defaults for the options not given:%s\n", line);
}
#endif

int vx_cmd_fit(int argc, char **argv) {
    const char *dataset = NULL, *out = NULL, *val_split = NULL, *stage_ends = NULL;
    vx_fit_config cfg;
    vx_fit_config_default(&cfg);
    int sh = 2, downscale = 1, has_bbox = 0, seed = 1;
    double step = 0.5, lo[3], hi[3], dv;
    vx_backend_kind backend = VX_BACKEND_AUTO;
    unsigned set = 0; /* VX_FIT_SET_*: options given, which CUDA defaults leave alone */
    char msg[600];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int need = i + 1 < argc;
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__fit_usage(stdout); return 0; }
        static const char *valued[] = {"-o", "--output", "--res", "--iters", "--batch", "--sh-degree", "--val-every",
                                       "--val-views", "--val-split", "--downscale", "--bbox", "--step", "--seed",
                                       "--lr-sigma", "--lr-sh", "--tv-sigma", "--tv-sh", "--backend", "--max-seconds",
                                       "--stage-ends"};
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            if (!strcmp(a, valued[k]) && !need) {
                snprintf(msg, sizeof msg, "%s needs a value", a);
                return vx__usage_error("fit", msg);
            }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) out = argv[++i];
        else if (!strcmp(a, "--res")) { bad = vx__parse_res(argv[++i], &cfg); set |= VX_FIT_SET_RES; }
        else if (!strcmp(a, "--iters")) { bad = vx_parse_int(a, argv[++i], 1, 100000000, &cfg.iters); set |= VX_FIT_SET_ITERS; }
        else if (!strcmp(a, "--batch")) { bad = vx_parse_int(a, argv[++i], 1, 1 << 24, &cfg.batch); set |= VX_FIT_SET_BATCH; }
        else if (!strcmp(a, "--sh-degree")) bad = vx_parse_int(a, argv[++i], 0, 3, &sh);
        else if (!strcmp(a, "--val-every")) {
            bad = vx_parse_int(a, argv[++i], 0, 100000000, &cfg.val_every);
            set |= VX_FIT_SET_VAL_EVERY;
        }
        else if (!strcmp(a, "--val-views")) bad = vx_parse_int(a, argv[++i], 0, 100000, &cfg.val_views);
        else if (!strcmp(a, "--val-split")) val_split = argv[++i];
        else if (!strcmp(a, "--downscale")) bad = vx_parse_int(a, argv[++i], 1, 64, &downscale);
        else if (!strcmp(a, "--bbox")) { bad = vx__parse_bbox(argv[++i], lo, hi); has_bbox = 1; }
        else if (!strcmp(a, "--step")) bad = vx_parse_double(a, argv[++i], 0.01, 16, &step);
        else if (!strcmp(a, "--seed")) { bad = vx_parse_int(a, argv[++i], 0, 2147483647, &seed); cfg.seed = (uint64_t)seed; }
        else if (!strcmp(a, "--lr-sigma")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.lr_sigma = (float)dv; }
        else if (!strcmp(a, "--lr-sh")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.lr_sh = (float)dv; }
        else if (!strcmp(a, "--tv-sigma")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.tv_sigma = (float)dv; }
        else if (!strcmp(a, "--tv-sh")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.tv_sh = (float)dv; }
        else if (!strcmp(a, "--backend")) bad = vx_backend_parse(argv[++i], &backend);
        else if (!strcmp(a, "--max-seconds")) {
            bad = vx_parse_double(a, argv[++i], 0, 1e7, &cfg.max_seconds);
            set |= VX_FIT_SET_MAX_SECONDS;
        }
        else if (!strcmp(a, "--time-curve")) cfg.time_curve = 1;
        else if (!strcmp(a, "--no-crop")) cfg.crop = 0;
        else if (!strcmp(a, "--dense-adam")) cfg.hp.lazy = 0;
        else if (!strcmp(a, "--stage-ends")) { stage_ends = argv[++i]; set |= VX_FIT_SET_STAGE_ENDS; }
        else if (a[0] == '-' && a[1]) { snprintf(msg, sizeof msg, "unknown option '%s'", a); return vx__usage_error("fit", msg); }
        else if (!dataset) dataset = a;
        else { snprintf(msg, sizeof msg, "unexpected argument '%s'", a); return vx__usage_error("fit", msg); }
        if (bad) return vx__usage_error("fit", vx_errmsg());
    }
    if (!dataset) return vx__usage_error("fit", "which dataset? DATASET is a directory with transforms_train.json");
    if (!out) return vx__usage_error("fit", "where to? -o SCENE_DIR is required");
    /* where to train: CUDA when asked for or (auto) when a device is usable; never a
     * silent fallback */
    if (backend != VX_BACKEND_CPU) {
#ifdef VX_HAVE_CUDA
        char info[256];
        if (vx_cuda_probe(info, sizeof info)) {
            cfg.use_cuda = 1;
            fprintf(stderr, "voxray: fit: training with CUDA on %s\n", info);
            vx_fit_config_cuda_defaults(&cfg, set);
            vx__print_cuda_defaults(&cfg, set);
        } else if (backend == VX_BACKEND_CUDA) {
            fprintf(stderr, "voxray fit: --backend cuda: no usable CUDA device (%s)\n", info);
            return 1;
        } else {
            vx_warn("fit: training on the CPU: no usable CUDA device (%s)", info);
        }
#else
        if (backend == VX_BACKEND_CUDA) {
            fprintf(stderr, "voxray fit: --backend cuda: this voxray was built without CUDA (nvcc was not found); "
                            "use --backend cpu\n");
            return 1;
        }
        vx_warn("fit: training on the CPU: this voxray was built without CUDA");
#endif
    }
    /* after the CUDA defaults, which may have changed the number of stages */
    if (vx__parse_stage_ends(stage_ends, &cfg)) return vx__usage_error("fit", vx_errmsg());
    vx_dataset all, train, held;
    memset(&held, 0, sizeof held);
    if (vx_dataset_load(dataset, "train", downscale, &all)) { fprintf(stderr, "voxray fit: %s\n", vx_errmsg()); return 1; }
    int rc = 1;
    if (val_split) {
        train = all;
        memset(&all, 0, sizeof all);
        if (vx_dataset_load(dataset, val_split, downscale, &held)) goto fail;
    } else if (vx_dataset_holdout(&all, 8, &train, &held)) goto fail;
    vx_dataset_free(&all);
    if (!has_bbox && vx_fit_box_from_cameras(train.cams, train.n, lo, hi)) goto fail;
    printf("fit: %d training views, %d held out, %dx%d pixels; box [%.3f %.3f %.3f] - [%.3f %.3f %.3f]\n", train.n,
           held.n, train.width, train.height, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    vx_fit_model f;
    float white[3] = {1, 1, 1};
    if (vx_fit_model_init_cpu(&f, cfg.res[0], sh, lo, hi, (float)step, 0.0f, white, cfg.hp.init_sigma)) goto fail;
    char vdir[4200];
    vx_path_join(out, "val", vdir, sizeof vdir);
    cfg.val_dir = vdir;
    vx_fit_stats st;
    if (vx_fit_train(&f, &cfg, &train, &held, &st)) { vx_fit_model_free(&f); goto fail; }
    /* the manifest camera: from the first held-out view towards the box centre, with the
     * world axis the cameras' up vectors agree on as up (+Z for Blender scenes), so
     * `voxray view` orbits upright */
    const float *m = held.cams[0].c2w;
    double cam[10] = {m[3], m[7], m[11], 0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2]),
                      0, 0, 0, held.cams[0].fov_x * 180.0 / M_PI};
    double upsum[3] = {0, 0, 0};
    for (int v = 0; v < train.n; v++)
        for (int a = 0; a < 3; a++) upsum[a] += train.cams[v].c2w[4 * a + 1];
    int ax = 0;
    for (int a = 1; a < 3; a++) if (fabs(upsum[a]) > fabs(upsum[ax])) ax = a;
    cam[6 + ax] = upsum[ax] < 0 ? -1.0 : 1.0;
    double vd[3] = {cam[3] - cam[0], cam[4] - cam[1], cam[5] - cam[2]};
    double vl = sqrt(vd[0] * vd[0] + vd[1] * vd[1] + vd[2] * vd[2]);
    if (!(vl > 0) || fabs(vd[ax]) > 0.99 * vl) /* looking along that axis: keep the camera's own up */
        for (int a = 0; a < 3; a++) cam[6 + a] = m[4 * a + 1];
    const char *base = strrchr(dataset, '/');
    base = base && base[1] ? base + 1 : dataset;
    if (vx_fit_write_scene(&f, out, base, cam)) { vx_fit_model_free(&f); goto fail; }
    printf("fit: %.1f s, %.0f rays/s, loss %.5f -> %.5f; wrote %s/scene.json and %s/grid.npy (%dx%dx%d x %d)\n",
           st.seconds, st.rays_per_s, st.loss_first, st.loss_last, out, out, f.nx, f.ny, f.nz, f.nc);
    double mp, ms;
    vx_scene fs;
    vx_render_opts ro;
    vx_renderer *rr = NULL;
    vx_fit_as_scene(&f, &fs);
    vx_render_opts_default(&ro);
    int r2 = vx_renderer_create(&rr, &fs, &ro, cfg.use_cuda ? VX_BACKEND_CUDA : VX_BACKEND_CPU);
    if (!r2) r2 = vx__report("fit: held-out views", &held, vx__render_renderer, rr, vdir, &mp, &ms);
    if (rr) vx_renderer_destroy(rr);
    vx_fit_model_free(&f);
    if (r2) goto fail;
    rc = 0;
fail:
    if (rc) fprintf(stderr, "voxray fit: %s\n", vx_errmsg());
    vx_dataset_free(&all);
    vx_dataset_free(&train);
    vx_dataset_free(&held);
    return rc;
}

/* ---- voxray eval --------------------------------------------------------------------------- */

static void vx__eval_usage(FILE *o) {
    fprintf(o,
            "usage: voxray eval SCENE DATASET [--split test] [--every K] [--downscale F] [--backend B]\n"
            "                   [--save DIR]\n"
            "\n"
            "Render every view of DATASET/transforms_SPLIT.json with the normal renderer and report\n"
            "PSNR and SSIM (Gaussian 11x11, sigma 1.5) against the photos composited on white,\n"
            "per image and the mean.\n"
            "\n"
            "  --split NAME     which transforms file (default test)\n"
            "  --every K        only views whose index is a multiple of K (8: the views `voxray fit`\n"
            "                   held out of the train split)\n"
            "  --downscale F    average FxF pixel blocks of every photo (default 1)\n"
            "  --backend B      auto, cpu or cuda (default auto)\n"
            "  --save DIR       write photo|render pairs as DIR/final_NNN.png\n"
            "  -h, --help       this text\n");
}

int vx_cmd_eval(int argc, char **argv) {
    const char *scene = NULL, *dataset = NULL, *split = "test", *save = NULL;
    int every = 1, downscale = 1;
    vx_backend_kind backend = VX_BACKEND_AUTO;
    char msg[600];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__eval_usage(stdout); return 0; }
        if ((!strcmp(a, "--split") || !strcmp(a, "--every") || !strcmp(a, "--downscale") || !strcmp(a, "--backend") ||
             !strcmp(a, "--save")) && i + 1 >= argc) {
            snprintf(msg, sizeof msg, "%s needs a value", a);
            return vx__usage_error("eval", msg);
        }
        if (!strcmp(a, "--split")) split = argv[++i];
        else if (!strcmp(a, "--every")) bad = vx_parse_int(a, argv[++i], 1, 100000, &every);
        else if (!strcmp(a, "--downscale")) bad = vx_parse_int(a, argv[++i], 1, 64, &downscale);
        else if (!strcmp(a, "--backend")) bad = vx_backend_parse(argv[++i], &backend);
        else if (!strcmp(a, "--save")) save = argv[++i];
        else if (a[0] == '-' && a[1]) { snprintf(msg, sizeof msg, "unknown option '%s'", a); return vx__usage_error("eval", msg); }
        else if (!scene) scene = a;
        else if (!dataset) dataset = a;
        else { snprintf(msg, sizeof msg, "unexpected argument '%s'", a); return vx__usage_error("eval", msg); }
        if (bad) return vx__usage_error("eval", vx_errmsg());
    }
    if (!scene || !dataset) return vx__usage_error("eval", "needs SCENE and DATASET");
    vx_scene s;
    vx_load_opts lo;
    memset(&lo, 0, sizeof lo);
    if (vx_scene_load(scene, &lo, &s)) { fprintf(stderr, "voxray eval: %s\n", vx_errmsg()); return 1; }
    vx_dataset all, d;
    memset(&d, 0, sizeof d);
    vx_renderer *r = NULL;
    int rc = 1;
    if (vx_dataset_load(dataset, split, downscale, &all)) goto done;
    if (every > 1) {
        vx_dataset rest;
        if (all.n < 2) { vx_error("%s: split '%s' has one view; --every needs more", dataset, split); goto done; }
        if (vx_dataset_holdout(&all, every, &rest, &d)) goto done;
        vx_dataset_free(&rest);
    } else {
        d = all;
        memset(&all, 0, sizeof all);
    }
    vx_render_opts o;
    vx_render_opts_default(&o);
    if (vx_renderer_create(&r, &s, &o, backend)) goto done;
    char title[512];
    snprintf(title, sizeof title, "eval: %s on %s split '%s' (%d views, %dx%d, %s)", scene, dataset, split, d.n, d.width,
             d.height, vx_renderer_backend_name(r));
    double mp, ms;
    if (vx__report(title, &d, vx__render_renderer, r, save, &mp, &ms)) goto done;
    rc = 0;
done:
    if (rc) fprintf(stderr, "voxray eval: %s\n", vx_errmsg());
    if (r) vx_renderer_destroy(r);
    vx_dataset_free(&all);
    vx_dataset_free(&d);
    vx_scene_free(&s);
    return rc;
}
