/* fit_cpu.c - the CPU path of `voxray fit`: model allocation, ray sampling, the batched
 * ray backward, TV, Adam, occupancy, pruning, resampling and cropping, writing the scene.
 * The reference the CUDA twin (kernels/fit.cu) is tested against; per-ray maths lives in
 * fit_march.h. */
#include "fit.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fit_coarse.h"
#include "fit_march.h"
#include "mlp.h"
#include "npy.h"
#include "render.h"
#include "sparse_grid.h"
#include "outputs.h"
#include "vx_common.h"

void vx_fit_hparams_default(vx_fit_hparams *h) {
    memset(h, 0, sizeof *h);
    h->lr_sigma = 0.5f;
    h->lr_sh = 0.02f;
    h->lr_mlp = 1e-3f; /* DirectVoxGO's rgbnet rate */
    h->lr_final_factor = 0.05f;
    h->beta1 = 0.9f;
    h->beta2 = 0.99f;
    h->eps = 1e-8f;
    h->tv_sigma = 0.0f; /* off: on mic it cost 1.7 dB at 200x200 and 0.5 dB at 800x800 (docs/FIT.md) */
    h->tv_sh = 0.0f;
    h->tv_fraction = 0.1f;
    h->tv_eps = 1e-6f;
    h->tv_until = 1.0f;
    h->prune_weight = 1e-3f;
    h->init_sigma = 0.1f;
    h->lazy = 1;
}

int vx_fit_batch_alloc(vx_fit_batch *b, int n) {
    memset(b, 0, sizeof *b);
    if (n < 1 || n > (1 << 26)) return vx_error("batch of %d rays is outside 1..%d", n, 1 << 26);
    b->n = n;
    b->origin = vx_malloc((size_t)n * 3 * sizeof(float), "fit batch origins");
    b->dir = vx_malloc((size_t)n * 3 * sizeof(float), "fit batch directions");
    b->target = vx_malloc((size_t)n * 3 * sizeof(float), "fit batch targets");
    b->bg = vx_malloc((size_t)n * 3 * sizeof(float), "fit batch backgrounds");
    if (!b->origin || !b->dir || !b->target || !b->bg) { vx_fit_batch_free(b); return -1; }
    return 0;
}

void vx_fit_batch_free(vx_fit_batch *b) {
    free(b->origin);
    free(b->dir);
    free(b->target);
    free(b->bg);
    memset(b, 0, sizeof *b);
}

void vx_fit_sample_batch(const vx_dataset *d, uint64_t seed, vx_fit_batch *b) {
    vx_fit_sample_batch_map(d, seed, NULL, b);
}

void vx_fit_sample_batch_map(const vx_dataset *d, uint64_t seed, const vx_fit_tiles *tiles, vx_fit_batch *b) {
    /* each ray depends only on (seed, r): the same rays for any thread count, and the CUDA
     * sampler draws them with the same vx_fit_pick_pixel(_map) */
    vx_fit_tiles uniform = {.views = d->n, .w = d->width, .h = d->height};
    const vx_fit_tiles *t = tiles ? tiles : &uniform;
    b->random_bg = t->random_bg;
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < b->n; r++) {
        int v, i, j;
        vx_fit_pick_pixel_map(t, seed, (unsigned long long)r, &v, &i, &j);
        vx_vec3 o, dir;
        float x, y;
        vx_fit_pixel_point(t, seed, (unsigned long long)r, i, j, &x, &y);
        vx_camera_ray(&d->cams[v], x, y, &o, &dir);
        const float *px = vx_dataset_image(d, v) + 3 * ((size_t)i * d->width + j);
        b->origin[3 * r] = o.x; b->origin[3 * r + 1] = o.y; b->origin[3 * r + 2] = o.z;
        b->dir[3 * r] = dir.x; b->dir[3 * r + 1] = dir.y; b->dir[3 * r + 2] = dir.z;
        if (t->random_bg) {
            float a = d->alpha ? vx_dataset_alpha(d, v)[(size_t)i * d->width + j] : 1.0f;
            vx_fit_ray_background(seed, (unsigned long long)r, b->bg + 3 * r);
            vx_fit_target_on(px, a, b->bg + 3 * r, b->target + 3 * r);
        } else {
            for (int c = 0; c < 3; c++) b->target[3 * r + c] = px[c];
        }
    }
}

/* ---- model ------------------------------------------------------------------------------ */

size_t vx_fit_storage_voxels(const vx_fit_model *f) {
    return f->nslots ? f->nslots * VX_BRICK_VOXELS : (size_t)f->nx * f->ny * f->nz;
}

void vx_fit_index_of(const vx_fit_model *f, vx_fit_index *ix) {
    ix->nx = f->nx; ix->ny = f->ny; ix->nz = f->nz;
    for (int a = 0; a < 3; a++) ix->bn[a] = f->bn[a];
    ix->table = f->table;
    ix->bxyz = f->bxyz;
}

static void vx__free_arrays(vx_fit_model *f) {
    free(f->data); free(f->grad); free(f->adam_m); free(f->adam_v);
    free(f->alive); free(f->wmax); free(f->occ); free(f->table); free(f->bxyz); free(f->view_table);
    f->data = f->grad = f->adam_m = f->adam_v = f->wmax = NULL;
    f->alive = f->occ = NULL;
    f->table = f->bxyz = f->view_table = NULL;
    f->nslots = 0;
    memset(&f->view, 0, sizeof f->view);
}

/* The vx_sparse face of bricked storage: the live bricks only (absent ones -1, reading the
 * zero background), so renderers skip them and the CUDA upload holds no block for them. */
int vx_fit_view_update(vx_fit_model *f) {
    memset(&f->view, 0, sizeof f->view);
    free(f->view_table);
    f->view_table = NULL;
    if (!f->table) return 0;
    size_t entries = (size_t)f->bn[0] * f->bn[1] * f->bn[2];
    f->view_table = vx_malloc(entries * sizeof(int32_t), "fit scene brick table");
    if (!f->view_table) return -1;
    for (size_t k = 0; k < entries; k++) f->view_table[k] = f->table[k] - 1; /* the null brick -> -1 */
    for (int a = 0; a < 3; a++) f->view.bn[a] = f->bn[a];
    f->view.nc = f->nc;
    f->view.table = f->view_table;
    f->view.nbricks = f->nslots - 1;
    f->view.pool = f->data + (size_t)VX_BRICK_VOXELS * f->nc;
    return 0;
}

/* Allocate every array for the lattice f->nx*ny*nz of f->nc channels (zeroed): dense when
 * nslots == 0, else bricked with nslots pool slots (table all 0 = the null brick, the
 * caller fills it and bxyz). Dense voxels start alive, bricked ones dead. */
static int vx__alloc_arrays(vx_fit_model *f, size_t nslots) {
    size_t nv, n;
    if (f->nx < 1 || f->ny < 1 || f->nz < 1 || f->nx > 4096 || f->ny > 4096 || f->nz > 4096)
        return vx_error("fit: resolution %dx%dx%d is outside 1..4096", f->nx, f->ny, f->nz);
    int n3[3] = {f->nx, f->ny, f->nz};
    for (int a = 0; a < 3; a++) f->bn[a] = (n3[a] + VX_BRICK - 1) / VX_BRICK;
    size_t entries = (size_t)f->bn[0] * f->bn[1] * f->bn[2];
    if (nslots) {
        if (nslots > entries + 1 || nslots > 0x7fffffffull / VX_BRICK_VOXELS)
            return vx_error("fit: %zu bricks for a %dx%dx%d lattice", nslots, f->nx, f->ny, f->nz);
        f->table = vx_calloc(entries, sizeof(int32_t), "fit brick table");
        f->bxyz = vx_calloc(3 * nslots, sizeof(int32_t), "fit brick coordinates");
        if (!f->table || !f->bxyz) { vx__free_arrays(f); return -1; }
        f->nslots = nslots;
        nv = nslots * VX_BRICK_VOXELS;
    } else {
        nv = (size_t)f->nx * f->ny * f->nz;
    }
    if (vx_mul_size(nv, (size_t)f->nc, &n) || n > (nslots ? VX_MAX_SPARSE_BYTES : VX_MAX_GRID_BYTES) / sizeof(float)) {
        vx__free_arrays(f);
        return vx_error("fit: a %dx%dx%d grid of %d channels is too large", f->nx, f->ny, f->nz, f->nc);
    }
    f->data = vx_calloc(n, sizeof(float), "fit grid");
    f->grad = vx_calloc(n, sizeof(float), "fit gradient");
    f->adam_m = vx_calloc(n, sizeof(float), "fit Adam first moment");
    f->adam_v = vx_calloc(n, sizeof(float), "fit Adam second moment");
    f->alive = vx_malloc(nv, "fit alive mask");
    f->wmax = vx_calloc(nv, sizeof(float), "fit max weights");
    if (!f->data || !f->grad || !f->adam_m || !f->adam_v || !f->alive || !f->wmax) {
        vx__free_arrays(f);
        return -1;
    }
    memset(f->alive, nslots ? 0 : 1, nv);
    if (vx_fit_view_update(f)) { vx__free_arrays(f); return -1; }
    return 0;
}

void vx_fit_as_scene(const vx_fit_model *f, vx_scene *s) {
    memset(s, 0, sizeof *s);
    s->grid.nx = f->nx; s->grid.ny = f->ny; s->grid.nz = f->nz; s->grid.nc = f->nc;
    if (f->table)
        s->grid.sparse = (vx_sparse *)&f->view; /* read only: the renderer never writes a grid */
    else
        s->grid.data = f->data;
    s->grid.src_dtype = VX_DT_F32;
    snprintf(s->grid.source, sizeof s->grid.source, "fit grid");
    vx_grid_set_bbox(&s->grid, f->box_lo, f->box_hi, 0);
    s->dec.type = VX_DEC_SH;
    s->dec.sh_degree = f->sh_degree;
    s->dec.density_act = VX_DACT_RELU;
    s->dec.color_act = VX_CACT_PLENOXELS;
    if (f->mlp_layers) {
        s->dec.type = VX_DEC_MLP;
        s->dec.color_act = VX_CACT_SIGMOID;
        vx_decoder_set_mlp(&s->dec, f->mlp_layers, f->mlp); /* borrowed like the grid */
        s->dec.shade = f->mlp_reflect; /* the direction mode, VX_MLP_DIR_* */
    }
    s->dec.density_scale = f->density_scale;
    for (int c = 0; c < 3; c++) s->background[c] = f->bg[c];
    s->step = f->step;
    snprintf(s->name, sizeof s->name, "fit");
}

int vx_fit_update_params(vx_fit_model *f, float stop) {
    vx_scene s;
    vx_volume v;
    vx_render_opts o;
    vx_fit_as_scene(f, &s);
    vx_render_opts_default(&o);
    o.no_skip = 1;
    o.stop = stop;
    /* the renderer's own preparation, so the model marches exactly like the saved scene */
    if (vx_volume_prepare(&v, &s, &o)) return -1;
    f->mp = v.mp;
    vx_volume_free(&v);
    return 0;
}

int vx_fit_model_init_cpu(vx_fit_model *f, const int res[3], int sh_degree, const double lo[3],
                          const double hi[3], float step, float density_scale, const float bg[3],
                          float init_sigma) {
    memset(f, 0, sizeof *f);
    if (sh_degree < 0 || sh_degree > 3) return vx_error("fit: SH degree %d is outside 0..3", sh_degree);
    for (int a = 0; a < 3; a++)
        if (!(hi[a] > lo[a]) || !isfinite(lo[a]) || !isfinite(hi[a]))
            return vx_error("fit: box [%g, %g] on axis %d is empty or not finite", lo[a], hi[a], a);
    if (!(step > 0) || !isfinite(step)) return vx_error("fit: step %g must be > 0", step);
    f->nx = res[0]; f->ny = res[1]; f->nz = res[2];
    f->sh_degree = sh_degree;
    f->nc = 1 + 3 * (sh_degree + 1) * (sh_degree + 1);
    memcpy(f->box_lo, lo, sizeof f->box_lo);
    memcpy(f->box_hi, hi, sizeof f->box_hi);
    f->step = step;
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    f->density_scale = density_scale > 0 ? density_scale : (float)(100.0 / diag);
    for (int c = 0; c < 3; c++) f->bg[c] = bg[c];
    if (vx__alloc_arrays(f, 0)) return -1;
    size_t nv = vx_fit_storage_voxels(f);
    for (size_t i = 0; i < nv; i++) f->data[i * f->nc] = init_sigma; /* SH zero: grey 0.5 */
    f->track_wmax = 1;
    if (vx_fit_update_params(f, 0.0f)) { vx_fit_model_free(f); return -1; }
    return 0;
}

int vx_fit_model_use_mlp_cpu(vx_fit_model *f, int layers, unsigned seed) {
    /* on failure the model is freed, as vx_fit_model_init_cpu's is: callers free nothing */
    int bad_layers = layers < 1 || layers > 2, not_dense = f->table || f->t;
    if (bad_layers || not_dense) {
        vx_fit_model_free(f);
        return bad_layers ? vx_error("fit: the mlp decoder has 1 or 2 hidden layers, not %d", layers)
                          : vx_error("fit: the mlp decoder is chosen before training, on a dense model");
    }
    size_t nv = vx_fit_storage_voxels(f);
    float *dens = vx_malloc(nv * sizeof(float), "fit initial density");
    if (!dens) { vx_fit_model_free(f); return -1; }
    for (size_t i = 0; i < nv; i++) dens[i] = f->data[i * f->nc];
    vx__free_arrays(f);
    f->nc = VX_MLP_CHANNELS;
    f->mlp_layers = layers;
    size_t nw = (size_t)vx_mlp_weight_count(layers);
    f->mlp = vx_floats64(nw, "fit mlp weights"); /* read in rows of 64 (vx_common.h) */
    f->mlp_grad = vx_floats64(nw, "fit mlp gradient");
    f->mlp_m = vx_calloc(nw, sizeof(float), "fit mlp Adam first moment");
    f->mlp_v = vx_calloc(nw, sizeof(float), "fit mlp Adam second moment");
    f->mlp_threads = 1;
#ifdef _OPENMP
    f->mlp_threads = omp_get_max_threads();
#endif
    f->mlp_tgrad = vx_floats64((size_t)f->mlp_threads * nw, "fit mlp gradient per thread");
    if (!f->mlp || !f->mlp_grad || !f->mlp_m || !f->mlp_v || !f->mlp_tgrad || vx__alloc_arrays(f, 0)) {
        free(dens);
        vx_fit_model_free(f);
        return -1;
    }
    for (size_t i = 0; i < nv; i++) f->data[i * f->nc] = dens[i]; /* features zero, as DirectVoxGO starts */
    free(dens);
    vx_mlp_init(layers, seed, f->mlp);
    if (vx_fit_update_params(f, f->mp.stop)) { vx_fit_model_free(f); return -1; }
    return 0;
}

void vx_fit_model_free(vx_fit_model *f) {
    vx__free_arrays(f);
    free(f->mlp); free(f->mlp_grad); free(f->mlp_m); free(f->mlp_v); free(f->mlp_tgrad);
    f->mlp = f->mlp_grad = f->mlp_m = f->mlp_v = f->mlp_tgrad = NULL;
    vx_fit_coarse_free(f);
}

void vx_fit_zero_grad_cpu(vx_fit_model *f) {
    memset(f->grad, 0, vx_fit_storage_voxels(f) * f->nc * sizeof(float));
    if (f->mlp_layers) memset(f->mlp_grad, 0, (size_t)vx_mlp_weight_count(f->mlp_layers) * sizeof(float));
}

/* ---- the loss and its backward ------------------------------------------------------------ */

double vx_fit_rays_backward_cpu(vx_fit_model *f, const vx_fit_batch *b, float *out_rgb) {
    const vx_march_params *m = &f->mp;
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    float scale = 1.0f / (3.0f * (float)b->n);
    vx_fit_reg reg = {f->reg_sparsity / (float)b->n, f->reg_distortion / (float)b->n, f->reg_binary / (float)b->n};
    int on = vx_fit_reg_on(&reg);
    double loss = 0.0, rloss = 0.0;
    /* the mlp weights' gradient: one array per thread, summed after (no atomics per weight) */
    int nthreads = f->mlp_threads, nw = f->mlp_layers ? vx_mlp_weight_count(f->mlp_layers) : 0;
    float *tg = nw ? f->mlp_tgrad : NULL;
    int team = 1; /* no more threads than per-thread arrays */
#ifdef _OPENMP
    team = tg ? nthreads : omp_get_max_threads();
#endif
    if (tg) memset(tg, 0, (size_t)nthreads * nw * sizeof(float));
    #pragma omp parallel for schedule(dynamic, 64) reduction(+ : loss, rloss) num_threads(team)
    for (int r = 0; r < b->n; r++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        vx_vec3 o = vx_v3(b->origin[3 * r], b->origin[3 * r + 1], b->origin[3 * r + 2]);
        vx_vec3 d = vx_v3(b->dir[3 * r], b->dir[3 * r + 1], b->dir[3 * r + 2]);
        vx_fit_reg_sums sums;
        vx_ray_result fwd = on ? vx_fit_march_reg(m, &L, f->data, f->occ, o, d, &sums)
                               : vx_fit_march(m, &L, f->data, f->occ, o, d);
        if (b->random_bg) /* the ray's own background behind what it left transmitted */
            for (int c = 0; c < 3; c++) fwd.rgb[c] += fwd.trans * (b->bg[3 * r + c] - m->bg[c]);
        float g[3], pl = 0.0f;
        loss += vx_fit_mse_backward(fwd.rgb, b->target + 3 * r, scale, g);
        if (on) rloss += vx_fit_reg_loss(&reg, &sums);
        vx_fit_px_loss px = {b->target + 3 * r, f->reg_rgbper / (float)b->n, &pl};
        vx_fit_march_backward_ex(m, &L, f->data, f->occ, o, d, &fwd, g, f->grad, f->track_wmax ? f->wmax : NULL, NULL,
                                 on ? &reg : NULL, &sums, tg ? tg + (size_t)tid * nw : NULL, &px);
        rloss += pl;
        if (out_rgb)
            for (int c = 0; c < 3; c++) out_rgb[3 * r + c] = fwd.rgb[c];
    }
    if (tg)
        for (int t = 0; t < nthreads; t++)
            for (int i = 0; i < nw; i++) f->mlp_grad[i] += tg[(size_t)t * nw + i];
    f->reg_loss = rloss;
    return loss;
}

double vx_fit_tv_backward_cpu(vx_fit_model *f, float w_sigma, float w_sh, float fraction, uint64_t seed,
                              float eps) {
    size_t nv = vx_fit_storage_voxels(f);
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    double total = 0.0;
    #pragma omp parallel for schedule(static) reduction(+ : total)
    for (long long iv = 0; iv < (long long)nv; iv++) {
        int x, y, z;
        if (!f->alive[iv] || !vx_fit_tv_selected(seed, (unsigned long long)iv, fraction)) continue;
        if (vx_fit_xyz(&L, (size_t)iv, &x, &y, &z)) continue; /* alive entries always are lattice points */
        for (int c = 0; c < f->nc; c++) {
            float w = c == 0 ? w_sigma : w_sh;
            if (w == 0.0f) continue;
            total += w * vx_fit_tv_voxel(f->data, f->grad, &L, f->nc, x, y, z, c, w, eps);
        }
    }
    return total;
}

void vx_fit_adam_step_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr_sigma, float lr_sh) {
    f->t++;
    float bc1 = (float)(1.0 - pow(h->beta1, (double)f->t)), bc2 = (float)(1.0 - pow(h->beta2, (double)f->t));
    size_t nv = vx_fit_storage_voxels(f);
    int nc = f->nc;
    #pragma omp parallel for schedule(static)
    for (long long iv = 0; iv < (long long)nv; iv++) {
        if (!f->alive[iv]) continue;
        size_t i = (size_t)iv * nc;
        for (int c = 0; c < nc; c++) {
            vx_fit_adam_update(f->data + i + c, f->adam_m + i + c, f->adam_v + i + c, f->grad[i + c],
                               c == 0 ? lr_sigma : lr_sh, h->beta1, h->beta2, h->eps, bc1, bc2, h->lazy);
            /* consumed, as in the CUDA twin: the next scatter starts from zero without a full
             * clear (dead voxels' entries are never read) */
            f->grad[i + c] = 0.0f;
        }
    }
}

void vx_fit_mlp_dir_cut_cpu(vx_fit_model *f, int terms) {
    if (!f->mlp_layers) return;
    int lo, hi;
    vx_mlp_dir_cut(terms, &lo, &hi);
    for (int i = lo; i < hi; i++) f->mlp[i] = f->mlp_m[i] = f->mlp_v[i] = f->mlp_grad[i] = 0.0f;
}

void vx_fit_adam_step_mlp_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr) {
    if (!f->mlp_layers) return;
    float bc1 = (float)(1.0 - pow(h->beta1, (double)f->t)), bc2 = (float)(1.0 - pow(h->beta2, (double)f->t));
    for (int i = 0, n = vx_mlp_weight_count(f->mlp_layers); i < n; i++) {
        /* dense: every weight is shared by every sample, so every step moves it */
        vx_fit_adam_update(f->mlp + i, f->mlp_m + i, f->mlp_v + i, f->mlp_grad[i], lr, h->beta1, h->beta2, h->eps,
                           bc1, bc2, 0);
        f->mlp_grad[i] = 0.0f;
    }
    vx_fit_mlp_dir_cut_cpu(f, h->mlp_dir_terms); /* the cut weights stay zero */
}

int vx_fit_occupancy_build_cpu(vx_fit_model *f, int cell) {
    vx_scene s;
    vx_fit_as_scene(f, &s);
    free(f->occ);
    f->occ = NULL;
    if (vx_occupancy_build_cpu(&s.grid, &s.dec, cell, &f->occ, f->occ_n)) return -1;
    f->occ_cell = cell;
    f->mp.occ_b = cell;
    memcpy(f->mp.occ_n, f->occ_n, sizeof f->occ_n);
    return 0;
}

size_t vx_fit_prune_cpu(vx_fit_model *f, float thresh) {
    size_t nv = vx_fit_storage_voxels(f), pruned = 0;
    int nc = f->nc;
    for (size_t iv = 0; iv < nv; iv++) {
        if (f->alive[iv] && f->wmax[iv] < thresh) {
            f->alive[iv] = 0;
            memset(f->data + iv * nc, 0, nc * sizeof(float));
            memset(f->adam_m + iv * nc, 0, nc * sizeof(float));
            memset(f->adam_v + iv * nc, 0, nc * sizeof(float));
            pruned++;
        }
        f->wmax[iv] = 0.0f;
    }
    return pruned;
}

int vx_fit_model_resize_cpu(vx_fit_model *f, const int res[3], size_t nslots) {
    vx__free_arrays(f);
    f->nx = res[0]; f->ny = res[1]; f->nz = res[2];
    if (vx__alloc_arrays(f, nslots)) return -1;
    f->occ_n[0] = f->occ_n[1] = f->occ_n[2] = 0;
    return vx_fit_update_params(f, f->mp.stop);
}

void vx_fit_resample_map(const vx_fit_model *f, const double lo[3], const double hi[3], const int res[3], float a[3],
                         float b[3]) {
    int n[3] = {f->nx, f->ny, f->nz};
    for (int k = 0; k < 3; k++) {
        /* cell-centred: new centre lo + (i + 0.5) h' lies at old index (x - box_lo)/h - 0.5 */
        double h_old = (f->box_hi[k] - f->box_lo[k]) / n[k], h_new = (hi[k] - lo[k]) / res[k];
        double s = h_new / h_old;
        a[k] = (float)s;
        b[k] = (float)((lo[k] - f->box_lo[k]) / h_old + 0.5 * s - 0.5);
    }
}

size_t vx_fit_live_slots(const unsigned char *live, size_t entries) {
    size_t n = 1; /* the null brick */
    for (size_t k = 0; k < entries; k++) n += live[k] != 0;
    return n;
}

void vx_fit_fill_slots(const unsigned char *live, const int bn[3], int32_t *table, int32_t *bxyz) {
    size_t entries = (size_t)bn[0] * bn[1] * bn[2];
    int32_t slot = 1;
    bxyz[0] = bxyz[1] = bxyz[2] = 0;
    for (size_t k = 0; k < entries; k++) {
        if (!live[k]) { table[k] = 0; continue; }
        table[k] = slot;
        bxyz[3 * slot] = (int32_t)(k % bn[0]);
        bxyz[3 * slot + 1] = (int32_t)((k / bn[0]) % bn[1]);
        bxyz[3 * slot + 2] = (int32_t)(k / ((size_t)bn[0] * bn[1]));
        slot++;
    }
}

/* Bricked storage for f's new lattice holding exactly the bricks with an alive voxel
 * (old voxels Lo / oalive seen through the map a, b): allocates f's arrays and fills the
 * table and bxyz in table order. */
static int vx__alloc_live_bricks(vx_fit_model *f, const vx_fit_index *Lo, const unsigned char *oalive, const float a[3],
                                 const float b[3]) {
    int bn[3] = {(f->nx + VX_BRICK - 1) / VX_BRICK, (f->ny + VX_BRICK - 1) / VX_BRICK, (f->nz + VX_BRICK - 1) / VX_BRICK};
    size_t entries = (size_t)bn[0] * bn[1] * bn[2];
    unsigned char *live = vx_calloc(entries, 1, "fit live-brick flags");
    if (!live) return -1;
    #pragma omp parallel for schedule(dynamic, 1)
    for (int z = 0; z < f->nz; z++)
        for (int y = 0; y < f->ny; y++)
            for (int x = 0; x < f->nx; x++) {
                size_t k = ((size_t)(z >> VX_BRICK_LOG2) * bn[1] + (y >> VX_BRICK_LOG2)) * bn[0] + (x >> VX_BRICK_LOG2);
                if (!live[k] && vx_fit_resample_alive(Lo, oalive, vx_fit_resample_point(a, b, x, y, z))) {
                    #pragma omp atomic write
                    live[k] = 1;
                }
            }
    if (vx__alloc_arrays(f, vx_fit_live_slots(live, entries))) { free(live); return -1; }
    vx_fit_fill_slots(live, bn, f->table, f->bxyz);
    free(live);
    return vx_fit_view_update(f);
}

int vx_fit_resample_cpu(vx_fit_model *f, const double lo[3], const double hi[3], const int res[3]) {
    for (int k = 0; k < 3; k++) {
        if (res[k] < 1 || res[k] > 4096)
            return vx_error("fit: resample resolution %d on axis %d is outside 1..4096", res[k], k);
        if (!(hi[k] > lo[k]) || !isfinite(lo[k]) || !isfinite(hi[k]))
            return vx_error("fit: resample box [%g, %g] on axis %d is empty or not finite", lo[k], hi[k], k);
    }
    float ma[3], mb[3];
    vx_fit_resample_map(f, lo, hi, res, ma, mb);
    vx_fit_model o = *f; /* the old arrays */
    vx_fit_index Lo, Ln;
    vx_fit_index_of(&o, &Lo);
    f->nx = res[0]; f->ny = res[1]; f->nz = res[2];
    f->data = f->grad = f->adam_m = f->adam_v = f->wmax = NULL;
    f->alive = f->occ = NULL;
    f->table = f->bxyz = f->view_table = NULL;
    f->nslots = 0;
    memset(&f->view, 0, sizeof f->view);
    int rc = f->sparse_fit ? vx__alloc_live_bricks(f, &Lo, o.alive, ma, mb) : vx__alloc_arrays(f, 0);
    if (rc) { vx__free_arrays(f); *f = o; return -1; }
    vx_fit_index_of(f, &Ln);
    size_t nv = vx_fit_storage_voxels(f);
    #pragma omp parallel for schedule(static)
    for (long long iv = 0; iv < (long long)nv; iv++) {
        int x, y, z;
        float *out = f->data + (size_t)iv * f->nc;
        if (vx_fit_xyz(&Ln, (size_t)iv, &x, &y, &z)) { f->alive[iv] = 0; continue; } /* stays zero */
        vx_vec3 p = vx_fit_resample_point(ma, mb, x, y, z);
        f->alive[iv] = (unsigned char)vx_fit_resample_alive(&Lo, o.alive, p);
        if (f->alive[iv])
            vx_fit_fetch(&Lo, o.data, o.nc, p, out);
        else
            memset(out, 0, f->nc * sizeof(float));
    }
    vx__free_arrays(&o);
    f->occ_n[0] = f->occ_n[1] = f->occ_n[2] = 0;
    memcpy(f->box_lo, lo, sizeof f->box_lo);
    memcpy(f->box_hi, hi, sizeof f->box_hi);
    /* density_scale stays: it is part of what the parameters mean, not of the box */
    return vx_fit_update_params(f, f->mp.stop);
}

int vx_fit_upsample_cpu(vx_fit_model *f, const int res[3]) { return vx_fit_resample_cpu(f, f->box_lo, f->box_hi, res); }

size_t vx_fit_alive_bounds_cpu(const vx_fit_model *f, int lo[3], int hi[3]) {
    size_t count = 0, nv = vx_fit_storage_voxels(f);
    int l[3] = {f->nx, f->ny, f->nz}, h[3] = {-1, -1, -1};
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    for (size_t iv = 0; iv < nv; iv++) {
        int p[3];
        if (!f->alive[iv] || vx_fit_xyz(&L, iv, &p[0], &p[1], &p[2])) continue;
        for (int k = 0; k < 3; k++) {
            if (p[k] < l[k]) l[k] = p[k];
            if (p[k] > h[k]) h[k] = p[k];
        }
        count++;
    }
    if (count) {
        memcpy(lo, l, sizeof l);
        memcpy(hi, h, sizeof h);
    }
    return count;
}

size_t vx_fit_alive_mask_cpu(const vx_fit_model *f, unsigned char *mask) {
    size_t count = 0, nv = vx_fit_storage_voxels(f);
    memset(mask, 0, (size_t)f->nx * f->ny * f->nz);
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    for (size_t iv = 0; iv < nv; iv++) {
        int x, y, z;
        if (!f->alive[iv] || vx_fit_xyz(&L, iv, &x, &y, &z)) continue;
        mask[((size_t)z * f->ny + y) * f->nx + x] = 1;
        count++;
    }
    return count;
}

/* One breadth-first pass over the 26-connected component of mask[seed] (== from): marks
 * its voxels `to`, returns its size and widens lo/hi by its bounds. queue: room for every
 * alive voxel. */
static size_t vx__flood(unsigned char *mask, const int n[3], size_t seed, unsigned char from, unsigned char to,
                        size_t *queue, int lo[3], int hi[3]) {
    size_t head = 0, tail = 0, sx = (size_t)n[0], sxy = sx * n[1];
    mask[seed] = to;
    queue[tail++] = seed;
    while (head < tail) {
        size_t v = queue[head++];
        int p[3] = {(int)(v % sx), (int)(v / sx % n[1]), (int)(v / sxy)};
        for (int a = 0; a < 3; a++) {
            if (p[a] < lo[a]) lo[a] = p[a];
            if (p[a] > hi[a]) hi[a] = p[a];
        }
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int x = p[0] + dx, y = p[1] + dy, z = p[2] + dz;
                    if (x < 0 || y < 0 || z < 0 || x >= n[0] || y >= n[1] || z >= n[2]) continue;
                    size_t u = (size_t)z * sxy + (size_t)y * sx + x;
                    if (mask[u] != from) continue;
                    mask[u] = to;
                    queue[tail++] = u;
                }
    }
    return tail;
}

int vx_fit_island_bounds(unsigned char *mask, const int n[3], size_t alive, double keep, int lo[3], int hi[3],
                         size_t *left, size_t *left_parts) {
    size_t nl = (size_t)n[0] * n[1] * n[2], largest = 0;
    size_t *queue = vx_malloc((alive ? alive : 1) * sizeof *queue, "fit crop search queue");
    if (!queue) return -1;
    /* pass 1 finds the largest component, pass 2 spans the kept ones */
    for (size_t v = 0; v < nl; v++) {
        if (mask[v] != 1) continue;
        int l[3] = {0, 0, 0}, h[3] = {0, 0, 0}; /* unused here */
        size_t s = vx__flood(mask, n, v, 1, 2, queue, l, h);
        if (s > largest) largest = s;
    }
    *left = *left_parts = 0;
    for (int a = 0; a < 3; a++) { lo[a] = n[a]; hi[a] = -1; }
    for (size_t v = 0; v < nl; v++) {
        if (mask[v] != 2) continue;
        int l[3] = {n[0], n[1], n[2]}, h[3] = {-1, -1, -1};
        size_t s = vx__flood(mask, n, v, 2, 3, queue, l, h);
        if (s < largest && (double)s < keep * (double)alive) {
            *left += s;
            (*left_parts)++;
            continue;
        }
        for (int a = 0; a < 3; a++) {
            if (l[a] < lo[a]) lo[a] = l[a];
            if (h[a] > hi[a]) hi[a] = h[a];
        }
    }
    free(queue);
    return 0;
}

int vx_fit_crop_box(const vx_fit_model *f, const int ilo[3], const int ihi[3], int margin, double voxel,
                    double lo[3], double hi[3], int res[3]) {
    if (!(voxel > 0) || !isfinite(voxel)) return vx_error("fit: crop voxel size %g must be > 0", voxel);
    if (margin < 0) return vx_error("fit: crop margin %d must be >= 0", margin);
    int n[3] = {f->nx, f->ny, f->nz}, r[3];
    double l[3], u[3];
    for (int k = 0; k < 3; k++) {
        if (ilo[k] > ihi[k]) return vx_error("fit: crop range %d..%d on axis %d is empty", ilo[k], ihi[k], k);
        double h = (f->box_hi[k] - f->box_lo[k]) / n[k];
        double e0 = f->box_lo[k] + (double)(ilo[k] - margin) * h, e1 = f->box_lo[k] + (double)(ihi[k] + 1 + margin) * h;
        e0 = fmax(e0, f->box_lo[k]);
        e1 = fmin(e1, f->box_hi[k]);
        if (!(e1 > e0)) return vx_error("fit: crop range %d..%d on axis %d lies outside the box", ilo[k], ihi[k], k);
        double cells = ceil((e1 - e0) / voxel - 1e-9);
        if (cells > 4096) return vx_error("fit: crop needs %.0f voxels on axis %d (at most 4096)", cells, k);
        r[k] = cells < 1 ? 1 : (int)cells;
        /* grow about the centre so the voxels are exactly `voxel` wide */
        double c = 0.5 * (e0 + e1), half = 0.5 * r[k] * voxel;
        l[k] = c - half;
        u[k] = c + half;
    }
    memcpy(lo, l, sizeof l);
    memcpy(hi, u, sizeof u);
    memcpy(res, r, sizeof r);
    return 0;
}

/* ---- output ------------------------------------------------------------------------------- */

static cJSON *vx__vec(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static char *vx__manifest(const vx_fit_model *f, const char *name, const double cam[10], const char *grid_file) {
    cJSON *root = cJSON_CreateObject(), *dec = cJSON_CreateObject();
    if (!root || !dec) { cJSON_Delete(root); cJSON_Delete(dec); return NULL; }
    double bg[3] = {f->bg[0], f->bg[1], f->bg[2]};
    cJSON_AddStringToObject(root, "name", name);
    cJSON_AddStringToObject(root, "grid", grid_file);
    cJSON_AddItemToObject(root, "bbox_min", vx__vec(f->box_lo, 3));
    cJSON_AddItemToObject(root, "bbox_max", vx__vec(f->box_hi, 3));
    cJSON_AddBoolToObject(root, "align_corners", 0);
    if (f->mlp_layers) {
        cJSON_AddStringToObject(dec, "type", "mlp");
        cJSON_AddNumberToObject(dec, "layers", f->mlp_layers);
        cJSON_AddStringToObject(dec, "weights", "mlp.npy");
        if (f->mlp_reflect) cJSON_AddStringToObject(dec, "direction", vx_mlp_dir_name(f->mlp_reflect));
        cJSON_AddStringToObject(dec, "density_activation", "relu");
        cJSON_AddStringToObject(dec, "color_activation", "sigmoid");
    } else {
        cJSON_AddStringToObject(dec, "type", "sh");
        cJSON_AddNumberToObject(dec, "degree", f->sh_degree);
        cJSON_AddStringToObject(dec, "density_activation", "relu");
        cJSON_AddStringToObject(dec, "color_activation", "plenoxels");
    }
    cJSON_AddNumberToObject(dec, "density_scale", f->density_scale);
    cJSON_AddItemToObject(root, "decoder", dec);
    cJSON_AddItemToObject(root, "background", vx__vec(bg, 3));
    cJSON_AddNumberToObject(root, "step", f->step);
    if (cam) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddItemToObject(c, "eye", vx__vec(cam, 3));
        cJSON_AddItemToObject(c, "target", vx__vec(cam + 3, 3));
        cJSON_AddItemToObject(c, "up", vx__vec(cam + 6, 3));
        cJSON_AddNumberToObject(c, "fov", cam[9]);
        cJSON_AddItemToObject(root, "camera", c);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

int vx_fit_write_scene(const vx_fit_model *f, const char *dir, const char *name, const double cam[10],
                       vx_fit_storage storage) {
    char gpath[4096], jpath[4096], wpath[4096];
    if (!dir || !dir[0]) return vx_error("fit: empty output directory");
    if (strlen(dir) > 3900) return vx_error("%s: output directory name too long", dir);
    const char *file = storage == VX_FIT_WRITE_DENSE ? "grid.npy" : "grid.sparse.npz";
    vx_path_join(dir, file, gpath, sizeof gpath);
    vx_path_join(dir, "scene.json", jpath, sizeof jpath);
    vx_path_join(dir, "mlp.npy", wpath, sizeof wpath);
    if (vx_mkdirs_for(gpath)) return -1;
    char *text = vx__manifest(f, name, cam, file);
    if (!text) return vx_error("%s: out of memory building scene.json", jpath);
    vx_scene s;
    vx_fit_as_scene(f, &s);
    vx_grid sg;
    memset(&sg, 0, sizeof sg);
    int rc = 0;
    /* sparse: the bricks whose cells can have density (the exact drop rule: the relu
     * decoder gives sigma 0 wherever a brick and its one-voxel rim hold no positive density),
     * so the written scene renders as the model does; a bricked model is thinned the same
     * way (its null brick and bricks of zero density go) without ever being dense */
    if (storage != VX_FIT_WRITE_DENSE)
        rc = f->table ? vx_sparse_rethin(&s.grid, &s.dec, 0.0f, &sg) : vx_sparse_from_dense(&s.grid, &s.dec, 0.0f, &sg);
    else if (f->table)
        rc = vx_sparse_to_dense(&s.grid, &sg); /* a bricked model written dense */
    vx_outputs_stage_begin(); /* both files or neither */
    if (rc == 0)
        rc = storage == VX_FIT_WRITE_DENSE
                 ? vx_npy_write_grid(gpath, f->table ? &sg : &s.grid, 0)
                 : vx_sparse_write(gpath, &sg, storage == VX_FIT_WRITE_SPARSE_HALF, VX_SPARSE_DEFLATE);
    if (rc == 0 && f->mlp_layers) rc = vx_mlp_save(wpath, f->mlp_layers, f->mlp);
    if (rc == 0) rc = vx_write_file_atomic(jpath, text, strlen(text));
    cJSON_free(text);
    vx_grid_free(&sg);
    return vx_outputs_stage_end(rc == 0);
}
