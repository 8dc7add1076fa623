/* fit_train.c - the training loop of `voxray fit`: the coarse-to-fine schedule (stages,
 * pruning, crop and resample), the learning-rate decay, validation renders, progress lines
 * on stderr and the per-stage table. Steps run on the table of fit_backend.h it is given. */
#include "fit_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit_backend.h"
#include "fit_report.h"
#include "metrics.h"
#include "vx_common.h"

void vx_fit_config_default(vx_fit_config *c) {
    memset(c, 0, sizeof *c);
    c->stages = 1;
    c->res[0][0] = c->res[0][1] = c->res[0][2] = 128;
    c->crop = 1; /* stage_end all 0: equal shares */
    c->crop_keep = VX_FIT_CROP_KEEP;
    c->iters = 2000;
    c->batch = 4096;
    c->seed = 1;
    vx_fit_hparams_default(&c->hp);
    c->stop = 1e-4f;
    c->occ_cell = 8;
    c->val_every = 500;
    c->val_views = 3;
    c->log_every = 50;
    c->backend = VX_BACKEND_CPU;
}

void vx_fit_config_cuda_defaults(vx_fit_config *c, unsigned set, int rgbper_kernel) {
    static const int res[3] = {128, 256, 512};
    if (!(set & VX_FIT_SET_RES)) {
        c->stages = 3;
        for (int s = 0; s < 3; s++) c->res[s][0] = c->res[s][1] = c->res[s][2] = res[s];
        if (!(set & VX_FIT_SET_STAGE_ENDS)) {
            c->stage_end[0] = 0.1;
            c->stage_end[1] = 0.3;
        }
    }
    int coarsest = c->res[0][0];
    for (int a = 1; a < 3; a++) coarsest = c->res[0][a] < coarsest ? c->res[0][a] : coarsest;
    if (!(set & VX_FIT_SET_TV) && coarsest >= 128) {
        c->hp.tv_sigma = c->hp.tv_sh = 1e-7f;
        c->hp.tv_until = 0.3f;
    }
    if (!(set & VX_FIT_SET_RGBPER) && rgbper_kernel) c->hp.rgbper = VX_FIT_CUDA_RGBPER;
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

/* ---- the training loop -------------------------------------------------------------------- */

/* The backend the steps run on, taken once from cfg->backend. */
typedef struct {
    const vx_fit_backend_ops *ops;
    vx_fit_backend *b;
    vx_fit_errmap *map; /* --error-map: where rays are drawn (NULL: uniformly) */
} vx__trainer;

/* The stage change: prune, then resample to the next stage's lattice: the same box at
 * res, or (crop) the box of the alive voxels at the voxel size edge0 / res[0], leaving out
 * small groups of stray voxels apart from the object (vx_fit_island_bounds: on mic's 64^3
 * CPU stage 55 of them, 513 voxels, spread over the whole box and kept it uncropped). */
static int vx__next_stage(vx__trainer *t, const vx_fit_config *cfg, int stage, double edge0, size_t *pruned) {
    if (t->ops->prune(t->b, cfg->hp.prune_weight, pruned)) return -1;
    const int *res = cfg->res[stage];
    if (!cfg->crop) return t->ops->upsample(t->b, res);
    const vx_fit_model *m = t->ops->model(t->b);
    int n[3] = {m->nx, m->ny, m->nz}, ilo[3], ihi[3], nres[3];
    size_t alive = 0, left = 0, parts = 0;
    double lo[3], hi[3];
    unsigned char *mask = vx_malloc((size_t)n[0] * n[1] * n[2], "fit alive mask");
    int rc = !mask || t->ops->alive_mask(t->b, mask, &alive) ||
             (alive && vx_fit_island_bounds(mask, n, alive, cfg->crop_keep, ilo, ihi, &left, &parts));
    free(mask);
    if (rc) return -1;
    if (!alive) return vx_error("fit: pruning removed every voxel (no training ray saw any density); "
                                "check the dataset's poses and --bbox");
    if (cfg->log_every && parts)
        fprintf(stderr, "fit: stage %d: the crop leaves out %zu stray voxels in %zu groups apart from the rest "
                "(%zu alive)\n", stage + 1, left, parts, alive);
    if (vx_fit_crop_box(m, ilo, ihi, 2, edge0 / res[0], lo, hi, nres)) return -1;
    return t->ops->resample(t->b, lo, hi, nres);
}

static int vx__step(vx__trainer *t, const vx_fit_config *cfg, double p, float decay, uint64_t ray_seed,
                    uint64_t tv_seed, double *loss) {
    const vx_fit_hparams *h = &cfg->hp;
    /* TV weights are per 4096 rays: the photometric loss is a mean, so a voxel's gradient from
     * one ray shrinks as 1/batch while TV's does not; where rays reach a voxel less than once a
     * step (fine grids), Adam then follows TV and smooths the model into fog (measured: a
     * 16x batch at the same weight lost 4 dB and its fine-stage loss rose). */
    float tvs = p < h->tv_until ? 4096.0f / (float)cfg->batch : 0.0f; /* --tv-until: TV early only */
    vx_fit_step s = {.batch = cfg->batch, .occ_cell = cfg->occ_cell, .ray_seed = ray_seed, .tv_seed = tv_seed,
                     .lr_sigma = h->lr_sigma * decay, .lr_sh = h->lr_sh * decay, .lr_mlp = h->lr_mlp * decay,
                     .lr_coarse = (h->lr_coarse > 0 ? h->lr_coarse : h->lr_sh) * decay,
                     .lr_coarse_sigma = vx_fit_lr_coarse_sigma(h) * decay,
                     .tv_sigma = h->tv_sigma * tvs,
                     .tv_sh = h->tv_sh * tvs, .hp = h, .map = t->map};
    return t->ops->step(t->b, &s, loss);
}

/* Mean PSNR over the first `views` views of d; renders go to dir/iter_N_vK.png if dir. */
static int vx__validate(vx__trainer *t, const vx_fit_config *cfg, const vx_dataset *d, int views, const char *dir,
                        int iter, double *psnr) {
    double sum = 0.0;
    views = vx_mini(views, d->n);
    int rc = 0;
    for (int v = 0; v < views && !rc; v++) {
        vx_frame fr;
        if (t->ops->render(t->b, d, v, cfg->occ_cell, &fr)) { rc = -1; break; }
        sum += vx_psnr(fr.rgb, vx_dataset_image(d, v), (size_t)d->width * d->height * 3);
        if (dir) {
            char name[64], path[4200];
            snprintf(name, sizeof name, "iter_%06d_v%d.png", iter, v);
            vx_path_join(dir, name, path, sizeof path);
            rc = vx_mkdirs_for(path) || vx_fit_write_pair(path, vx_dataset_image(d, v), &fr) ? -1 : 0;
        }
        vx_frame_free(&fr);
    }
    if (!rc) *psnr = views ? sum / views : NAN;
    return rc;
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
    vx__trainer t = {vx_fit_backend_for(cfg->backend), NULL, NULL};
    vx_fit_errmap map;
    memset(&map, 0, sizeof map);
    double t_start = vx_now(), t_train = 0.0, loss_acc = 0.0;
    double edge0 = fmax(f->box_hi[0] - f->box_lo[0], fmax(f->box_hi[1] - f->box_lo[1], f->box_hi[2] - f->box_lo[2]));
    long long rays = 0;
    double tracked = 0; /* rays drawn since the max weights were last reset (--final-prune) */
    int rc = -1;
    f->sparse_fit = !cfg->dense;
    vx_fit_mlp_dir_cut_cpu(f, cfg->hp.mlp_dir_terms); /* before the first step, not only after */
    if (!t.ops || t.ops->create(&t.b, f, train, cfg->batch) || t.ops->update_params(t.b, cfg->stop)) goto done;
    if (cfg->error_map > 0) {
        if (vx_fit_errmap_init(&map, train, cfg->error_map, cfg->batch)) goto done;
        t.map = &map;
        if (cfg->log_every)
            fprintf(stderr, "fit: error map: %d tiles of %dx%d pixels, %d of every %d rays drawn from it\n", map.t.n,
                    map.t.tile, map.t.tile, map.t.n_map, cfg->batch);
    }
    uint64_t rng = cfg->seed * 0x2545F4914F6CDD1Dull + 1;
    int stage = 0, win = 20, it_log = 0;
    double t_log = -1e9;
    static const double checkpoints[5] = {15, 30, 60, 120, 300};
    t.ops->track_weights(t.b, 0);
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
            t.ops->track_weights(t.b, 0);
            if (vx__next_stage(&t, cfg, stage, edge0, &pr)) goto done;
            t_train += vx_now() - ts; /* the stage change is training time */
            st->pruned += pr;
            const vx_fit_model *m = t.ops->model(t.b);
            if (cfg->log_every)
                fprintf(stderr, "fit: stage %d: pruned %zu voxels, resampled to %dx%dx%d in [%.3f %.3f %.3f] - "
                        "[%.3f %.3f %.3f] (%.2f s)\n", stage + 1, pr, m->nx, m->ny, m->nz, m->box_lo[0], m->box_lo[1],
                        m->box_lo[2], m->box_hi[0], m->box_hi[1], m->box_hi[2], vx_now() - ts);
            for (int l = 0; cfg->log_every && l < m->nlevels; l++) /* cut to the crop (fit_coarse.h) */
                fprintf(stderr, "fit: stage %d: coarse level %d holds %dx%dx%d vertices\n", stage + 1, l + 1,
                        m->lv[l].n[0], m->lv[l].n[1], m->lv[l].n[2]);
        }
        /* pruning looks at the weights of the last quarter of the stage only: early on every
         * voxel still holds the initial density and is seen by some ray */
        if ((stage + 1 < cfg->stages || cfg->final_prune) && !t.ops->model(t.b)->track_wmax) {
            double s0 = stage ? vx__stage_end(cfg, stage - 1) : 0.0, s1 = vx__stage_end(cfg, stage);
            if (p >= s0 + 0.75 * (s1 - s0)) {
                size_t none;
                if (t.ops->prune(t.b, 0.0f, &none)) goto done; /* resets the max weights */
                t.ops->track_weights(t.b, 1);
                tracked = 0;
            }
        }
        double t0 = vx_now(), loss;
        float decay = powf(cfg->hp.lr_final_factor, (float)p);
        uint64_t ray_seed = vx_splitmix64(&rng), tv_seed = vx_splitmix64(&rng);
        /* every 20th step on a device is timed kernel by kernel (the waits cost little) */
        int prof = it % 20 == 0;
        t.ops->profile(t.b, prof);
        if (vx__step(&t, cfg, p, decay, ray_seed, tv_seed, &loss)) goto done;
        if (t.map && it % VX_FIT_ERRMAP_EVERY == 0) { /* the next rays follow the errors seen */
            if (t.ops->errmap_fetch(t.b, t.map)) goto done;
            vx_fit_errmap_update(t.map);
        }
        double dt = vx_now() - t0;
        t_train += dt;
        rays += cfg->batch;
        tracked += cfg->batch;
        st->stage[stage].seconds += dt;
        st->stage[stage].rays += cfg->batch;
        st->stage[stage].steps++;
        double ms[VX_FIT_PROF_N];
        if (prof && t.ops->timings(t.b, ms)) {
            for (int k = 0; k < VX_FIT_PROF_N; k++) st->stage[stage].prof_ms[k] += ms[k];
            st->stage[stage].prof_steps++;
        }
        {
            const vx_fit_model *m = t.ops->model(t.b);
            st->stage[stage].res[0] = m->nx; st->stage[stage].res[1] = m->ny; st->stage[stage].res[2] = m->nz;
            /* alive voxels change only at a stage change: counted at a stage's first step
             * (and at progress lines, where the CPU count is cheap enough) */
            if (st->stage[stage].steps == 1 || (cfg->log_every && it % cfg->log_every == 0))
                st->stage[stage].alive = t.ops->alive_count(t.b);
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
            fprintf(stderr, "time-to-PSNR: %3.0f s of training (iteration %d): %.2f dB on %d held-out views\n",
                    checkpoints[st->curve_n - 1], it, vp, vx_mini(cfg->val_views, val->n));
        }
        int last = it == cfg->iters || (cfg->max_seconds > 0 && t_train >= cfg->max_seconds);
        if (last && cfg->final_prune && stage + 1 == cfg->stages && t.ops->model(t.b)->track_wmax) {
            size_t pr = 0; /* before the final validation: what is scored is what is written */
            double pixels = (double)train->n * train->width * train->height;
            t.ops->track_weights(t.b, 0);
            if (tracked < 2.0 * pixels) { /* too few rays drawn to tell unseen voxels from undrawn ones */
                fprintf(stderr, "fit: --final-prune skipped: the last quarter of the last stage drew %.0f rays, "
                        "fewer than twice the %.0f training pixels\n", tracked, pixels);
            } else {
                if (t.ops->prune(t.b, cfg->hp.prune_weight, &pr)) goto done;
                st->pruned += pr;
                st->final_pruned = pr;
                if (cfg->log_every)
                    fprintf(stderr, "fit: final prune: %zu voxels no training ray weighted above %g (%zu alive)\n", pr,
                            cfg->hp.prune_weight, t.ops->alive_count(t.b));
            }
        }
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
            const vx_fit_model *m = t.ops->model(t.b);
            if (t.ops->on_device) {
                size_t used = t.ops->mem_in_use();
                st->peak_bytes = used > st->peak_bytes ? used : st->peak_bytes;
                if (used > st->stage[stage].peak_bytes) st->stage[stage].peak_bytes = used;
                snprintf(mbuf, sizeof mbuf, "  %zu alive  %.1f GiB", t.ops->alive_count(t.b), used / 1073741824.0);
            }
            fprintf(stderr, "iter %6d/%d  %dx%dx%d  loss %.5f (%.2f dB)  val %s dB  %.0f rays/s  %.1f s%s\n", it,
                    cfg->iters, m->nx, m->ny, m->nz, l, vx_psnr_from_mse(l), vbuf, rays / fmax(t_train, 1e-9), vx_now() - t_start,
                   mbuf);
            loss_acc = 0.0;
        }
        if (last) break;
    }
    if (st->iters_done < cfg->iters && cfg->log_every)
        fprintf(stderr, "fit: stopped after %d of %d iterations: --max-seconds %.0f reached\n", st->iters_done,
                cfg->iters, cfg->max_seconds);
    if (cfg->log_every) {
        printf("fit: per stage  %-14s %10s %8s %12s %s\n", "lattice", "alive", "seconds", "rays/s",
               t.ops->on_device ? "  ms/step: rays    TV  Adam level   occ   GPU memory" : "");
        for (int s = 0; s <= stage; s++) {
            char lat[48], tail[160] = "";
            snprintf(lat, sizeof lat, "%dx%dx%d", st->stage[s].res[0], st->stage[s].res[1], st->stage[s].res[2]);
            int n = st->stage[s].prof_steps;
            const double *ms = st->stage[s].prof_ms;
            if (n)
                snprintf(tail, sizeof tail, "          %6.2f %5.2f %5.2f %5.2f %5.2f   %.1f GiB", ms[VX_FIT_PROF_RAYS] / n,
                         ms[VX_FIT_PROF_TV] / n, ms[VX_FIT_PROF_ADAM] / n, ms[VX_FIT_PROF_LEVEL] / n,
                         ms[VX_FIT_PROF_OCC] / n, st->stage[s].peak_bytes / 1073741824.0);
            printf("fit:   stage %d  %-14s %10zu %8.1f %12.0f%s\n", s + 1, lat, st->stage[s].alive, st->stage[s].seconds,
                   st->stage[s].rays / fmax(st->stage[s].seconds, 1e-9), tail);
        }
    }
    if (st->curve_n && cfg->log_every) {
        printf("time-to-PSNR:");
        for (int k = 0; k < st->curve_n; k++) printf("  %.0f s %.2f dB", st->curve_s[k], st->curve_psnr[k]);
        printf("\n");
    }
    if (t.ops->sync(t.b)) goto done;
    rc = 0;
done:
    st->seconds = vx_now() - t_start;
    st->train_seconds = t_train;
    st->rays_per_s = rays / fmax(t_train, 1e-9);
    if (t.ops) t.ops->destroy(t.b);
    vx_fit_errmap_free(&map);
    return rc;
}
