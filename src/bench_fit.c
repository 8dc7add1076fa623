/* bench_fit.c - `voxray bench fit SCENE DATASET`: times the training steps of `voxray fit`
 * on a fitted scene (so the occupancy and the alive voxels are those of a real run):
 * ray kernel versions 1 and 2 (an mlp scene: its per-ray and batched kernels), TV, Adam
 * and the occupancy rebuild (with --coarse R1[,R2..] the coarse levels' restriction and steps too),
 * in ms per step, rays/s and GB/s, next to the device's measured copy bandwidth. Needs a
 * CUDA device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "dataset.h"
#include "fit.h"
#include "fit_coarse.h"
#include "fit_train.h"
#include "scene.h"
#include "sparse_grid.h"
#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "cuda_device.h"
#include "cuda_fit.h"
#endif

static void vx__bench_fit_usage(FILE *o) {
    fprintf(o, "usage: voxray bench fit SCENE DATASET [--batch RAYS] [--steps K] [--downscale F] [--dense]\n"
               "                       [--coarse R1[,R2..] [--no-coarse-density]]\n"
               "Times the `voxray fit` steps on the CUDA device with SCENE (a scene `voxray fit`\n"
               "wrote: sh or mlp decoder, relu density) as the model and DATASET's training views\n"
               "(every 8th held out, as fit does): median ms per step over K steps (default 20) of\n"
               "RAYS rays (default 131072) for ray kernel versions 1 and 2 (mlp: the per-ray and the\n"
               "batched kernel), version 2 (batched) with the per-point colour loss of --rgbper 0.01,\n"
               "TV, Adam, occupancy and a whole step with fit's CUDA defaults (--rgbper 0.01 included).\n"
               "The model is held as training holds it after the first stage: 8^3 bricks with alive\n"
               "voxels only (--dense: the whole lattice, as before bricked training). --coarse R adds\n"
               "fit's coarse level (R vertices along the scene box's longest edge; R/8 of the lattice\n"
               "is what a 512^3 fit with --coarse 64 holds; R1,R2,.. one level each, as fit) and times\n"
               "their restriction, with every alive voxel's gradient non-zero (the most atomics a step\n"
               "can ask; both versions of its kernel), and their Adam steps with the prolongation; the\n"
               "whole step then includes them. The levels carry the density too, as fit's do by default\n"
               "(--no-coarse-density: the colour channels only). An mlp scene also gets the batched\n"
               "step with the network's hidden layers on the tensor cores (fit --mlp-tensor-cores;\n"
               "sm_80 and up), that step again with the one-march gather (version 2, opt-in), and\n"
               "both steps kernel by kernel.\n");
}

#ifdef VX_HAVE_CUDA
/* The model `voxray fit` would hold after training SCENE: its grid, alive where any channel
 * is non-zero (training zeroes exactly the dead voxels). */
static int vx__model_from_scene(const vx_scene *s, vx_fit_model *f) {
    const vx_grid *g = &s->grid;
    int mlp = s->dec.type == VX_DEC_MLP;
    if (!(mlp || (s->dec.type == VX_DEC_SH && s->dec.color_act == VX_CACT_PLENOXELS)) || s->dec.density_act != VX_DACT_RELU)
        return vx_error("%s: not a scene `voxray fit` writes (sh decoder with plenoxels colour, or mlp; relu density)",
                        g->source);
    double lo[3], hi[3];
    vx_grid_world_bounds(g, lo, hi);
    int res[3] = {g->nx, g->ny, g->nz};
    if (vx_fit_model_init_cpu(f, res, mlp ? 0 : s->dec.sh_degree, lo, hi, s->step, s->dec.density_scale, s->background,
                              0.0f) ||
        (mlp && vx_fit_model_use_mlp_cpu(f, vx_decoder_mlp_layers(&s->dec), 1)))
        return -1;
    if (mlp)
        memcpy(f->mlp, vx_decoder_mlp_weights(&s->dec),
               (size_t)vx_mlp_weight_count(f->mlp_layers) * sizeof(float));
    if (f->nc != g->nc) { vx_fit_model_free(f); return vx_error("%s: %d channels for SH degree %d", g->source, g->nc, s->dec.sh_degree); }
    size_t nv = (size_t)g->nx * g->ny * g->nz;
    memcpy(f->data, g->data, nv * g->nc * sizeof(float));
    for (size_t i = 0; i < nv; i++) {
        unsigned char a = 0;
        for (int c = 0; c < g->nc && !a; c++) a = g->data[i * g->nc + c] != 0.0f;
        f->alive[i] = a;
    }
    return 0;
}

/* Median of k timed calls of one step kind; returns -1 on the first failure. */
typedef int (*vx__step_fn)(vx_fit_device *g, void *ctx, int k);

static int vx__time(vx_fit_device *g, vx__step_fn fn, void *ctx, int k, double *ms) {
    double *t = vx_calloc((size_t)k, sizeof *t, "bench times");
    if (!t) return -1;
    for (int i = -2; i < k; i++) { /* two warm-up calls */
        if (vx_cuda_sync()) { free(t); return -1; }
        double t0 = vx_now();
        if (fn(g, ctx, i + 2) || vx_cuda_sync()) { free(t); return -1; }
        if (i >= 0) t[i] = 1e3 * (vx_now() - t0);
    }
    *ms = vx_median(t, k);
    free(t);
    return 0;
}

typedef struct {
    const vx_dataset *d;
    vx_fit_batch *b;
    int batch;
    vx_fit_hparams hp;
} vx__bench_ctx;

static int vx__rays_v1(vx_fit_device *g, void *ctx, int k) {
    vx__bench_ctx *c = ctx;
    double loss;
    vx_fit_sample_batch(c->d, 1000 + (uint64_t)k, c->b); /* host sampling + upload: version 1's path */
    return vx_fit_set_ray_version_cuda(g, 1) || vx_fit_rays_backward_cuda(g, c->b, NULL, &loss);
}
static int vx__rays_v2(vx_fit_device *g, void *ctx, int k) {
    vx__bench_ctx *c = ctx;
    double loss;
    return vx_fit_rays_sampled_cuda(g, c->batch, 1000 + (uint64_t)k, &loss);
}
static int vx__rays_mlp(vx_fit_device *g, void *ctx, int k, int kernel) {
    vx__bench_ctx *c = ctx;
    double loss;
    return vx_fit_set_mlp_kernel_cuda(g, kernel) || vx_fit_rays_sampled_cuda(g, c->batch, 1000 + (uint64_t)k, &loss);
}
static int vx__rays_mlp_per_ray(vx_fit_device *g, void *ctx, int k) { return vx__rays_mlp(g, ctx, k, 1); }
static int vx__rays_mlp_batched(vx_fit_device *g, void *ctx, int k) { return vx__rays_mlp(g, ctx, k, 2); }
/* The sampled-ray step with the per-point colour loss at 0.01 (fit --rgbper; the CUDA
 * default of both decoders): SH runs version 2's per-point instantiation, the mlp the
 * batched composite kernel's second one; with random_bg against random backgrounds (fit
 * --random-bg; the photos' coverage is on the device with them). Off again after the call. */
static int vx__rays_px(vx_fit_device *g, const vx__bench_ctx *c, int k, int random_bg, int tc) {
    double loss;
    vx_fit_set_rgbper_cuda(g, VX_FIT_CUDA_RGBPER);
    vx_fit_set_random_bg_cuda(g, random_bg);
    int rc = vx_fit_set_mlp_kernel_cuda(g, 2) || vx_fit_set_mlp_tc_cuda(g, tc) ||
             vx_fit_rays_sampled_cuda(g, c->batch, 1000 + (uint64_t)k, &loss);
    vx_fit_set_random_bg_cuda(g, 0);
    vx_fit_set_rgbper_cuda(g, 0.0f);
    if (tc) vx_fit_set_mlp_tc_cuda(g, 0);
    return rc;
}
static int vx__rays_rgbper(vx_fit_device *g, void *ctx, int k) { return vx__rays_px(g, ctx, k, 0, 0); }
static int vx__rays_random_bg(vx_fit_device *g, void *ctx, int k) { return vx__rays_px(g, ctx, k, 1, 0); }
/* fit --mlp-tensor-cores: the mlp's batched step with the network's hidden layers in TF32 */
static int vx__rays_tc(vx_fit_device *g, void *ctx, int k) { return vx__rays_px(g, ctx, k, 0, 1); }
/* The same with gather version 2 (one march a ray into staging slots; vx_fit_set_mlpb_gather_cuda) */
static int vx__rays_tc_g2(vx_fit_device *g, void *ctx, int k) {
    int rc = vx_fit_set_mlpb_gather_cuda(g, 2) || vx__rays_px(g, ctx, k, 0, 1);
    vx_fit_set_mlpb_gather_cuda(g, 1);
    return rc;
}
static int vx__tv(vx_fit_device *g, void *ctx, int k) {
    vx__bench_ctx *c = ctx;
    return vx_fit_tv_backward_cuda(g, c->hp.tv_sigma, c->hp.tv_sh, c->hp.tv_fraction, (uint64_t)k, c->hp.tv_eps, NULL);
}
/* Adam with zero rates (the model stays as loaded); dense, so every alive parameter is
 * read and written whatever the gradient holds: a bandwidth figure. */
static int vx__adam(vx_fit_device *g, void *ctx, int k) {
    vx__bench_ctx *c = ctx;
    vx_fit_hparams h = c->hp;
    (void)k;
    h.lazy = 0;
    return vx_fit_adam_step_cuda(g, &h, 0.0f, 0.0f);
}
/* The coarse level (--coarse): the restriction of the fine gradient (left in place, so
 * every call sees the same one), and the coarse Adam step with its prolongation at a zero
 * rate (the model does not move; the kernels' work does not depend on the values). */
static int vx__coarse_restrict(vx_fit_device *g, int version) {
    int rc = vx_fit_set_coarse_version_cuda(g, version) || vx_fit_coarse_restrict_cuda(g);
    vx_fit_set_coarse_version_cuda(g, VX_FIT_COARSE_VERSION_DEFAULT);
    return rc;
}
static int vx__coarse_restrict1(vx_fit_device *g, void *ctx, int k) { (void)ctx; (void)k; return vx__coarse_restrict(g, 1); }
static int vx__coarse_restrict2(vx_fit_device *g, void *ctx, int k) { (void)ctx; (void)k; return vx__coarse_restrict(g, 2); }
static int vx__coarse_apply(vx_fit_device *g, void *ctx, int k) {
    vx__bench_ctx *c = ctx;
    (void)k;
    return vx_fit_coarse_apply_cuda(g, &c->hp, 0.0f, 0.0f);
}
/* One whole training step as `voxray fit` runs it with the CUDA defaults, the per-point
 * colour loss at 0.01 included (zero rates: the model does not move); the coarse level's
 * kernels when the model has one (as fit_backend_cuda.c orders them). */
static int vx__full(vx_fit_device *g, void *ctx, int k) {
    vx__bench_ctx *c = ctx;
    double loss;
    vx_fit_set_rgbper_cuda(g, VX_FIT_CUDA_RGBPER);
    int rc = vx_fit_set_mlp_kernel_cuda(g, 2) || /* an mlp model's batched kernel; nothing for sh */
             vx_fit_occupancy_build_cuda(g, 8) || vx_fit_rays_sampled_cuda(g, c->batch, 5000 + (uint64_t)k, &loss) ||
             vx__tv(g, ctx, k) || vx_fit_coarse_restrict_cuda(g) || vx_fit_adam_step_cuda(g, &c->hp, 0.0f, 0.0f) ||
             vx_fit_coarse_apply_cuda(g, &c->hp, 0.0f, 0.0f);
    vx_fit_set_rgbper_cuda(g, 0.0f);
    return rc;
}
static int vx__occ(vx_fit_device *g, void *ctx, int k) {
    (void)ctx; (void)k;
    return vx_fit_occupancy_build_cuda(g, 8);
}

/* The batched mlp step kernel by kernel (synchronised after each, so the sum is a little
 * above the unprofiled step): ms a step, and the network kernels' GFLOP/s from the
 * samples they ran (multiply-adds of the weight matrices, 2 flops each; biases left out). */
static int vx__mlp_breakdown(vx_fit_device *g, vx__bench_ctx *c, int steps, int layers, int tc) {
    double ms[5], samples, loss;
    vx_fit_profile_cuda(g, 1);
    if (vx_fit_set_mlp_kernel_cuda(g, 2) || vx_fit_set_mlp_tc_cuda(g, tc)) return -1;
    for (int k = 0; k < steps + 2; k++) {
        if (k == 2) vx_fit_mlp_timings_cuda(g, ms, &samples); /* two warm-up steps */
        if (vx_fit_rays_sampled_cuda(g, c->batch, 7000 + (uint64_t)k, &loss)) return -1;
    }
    vx_fit_mlp_timings_cuda(g, ms, &samples);
    vx_fit_profile_cuda(g, 0);
    double W = VX_MLP_WIDTH, hid = VX_MLP_IN * W + (layers == 2 ? W * W : 0.0);
    double fwd = 2.0 * (hid + 3 * W);                                        /* hidden layers + output */
    double bwd = 2.0 * (hid + 6 * W + (layers == 2 ? 2 * W * W : 0.0) + 32 * W + 16 * W); /* + dW2, deltas, dW1, d1, dW0, dX */
    static const char *names[5] = {"gather (march, count, write inputs)", "network forward", "composite per ray",
                                   "network backward (deltas, dW, dX)", "scatter to the grid"};
    vx_fit_set_mlp_tc_cuda(g, 0);
    printf("batched mlp step, kernel by kernel, hidden layers in %s (%d steps; %.1f samples a ray with density):\n",
           tc ? "TF32 on the tensor cores" : "FP32", steps, samples / steps / c->batch);
    for (int k = 0; k < 5; k++) {
        double per = ms[k] / steps;
        char extra[64] = "";
        if (k == 1 || k == 3)
            snprintf(extra, sizeof extra, "%.0f GFLOP/s", (k == 1 ? fwd : bwd) * samples / steps / (per * 1e-3) / 1e9);
        printf("  %-46s %10.3f %25s\n", names[k], per, extra);
    }
    return 0;
}

/* --coarse R1[,R2..]: the levels over the scene's box (with the density unless
 * --no-coarse-density, as fit), and a non-zero gradient in every alive voxel's channels the
 * levels read (small values, so nothing overflows whatever the rows add to it). */
static int vx__coarse_setup(vx_fit_model *f, const int *coarse, int ncoarse, int density) {
    if (!ncoarse) return 0;
    f->coarse_density = density; /* before the levels: their entries' channel count */
    for (int l = 0; l < ncoarse; l++) {
        vx_fit_coarse_map m;
        if (vx_fit_coarse_init_cpu(f, coarse[l]) || vx_fit_coarse_map_of(f, l, &m)) return -1;
    }
    size_t nv = vx_fit_storage_voxels(f);
    for (size_t v = 0; v < nv; v++)
        if (f->alive[v])
            for (int c = vx_fit_coarse_ch0(f); c < f->nc; c++) f->grad[v * f->nc + c] = 1e-6f * (float)(1 + (v * 7 + (size_t)c) % 13);
    return 0;
}
#endif

/* "R1[,R2..]": up to VX_FIT_LEVELS resolutions of 2..1024, as fit --coarse takes them. */
static int vx__parse_levels(const char *s, int res[VX_FIT_LEVELS], int *n) {
    char buf[256], *it[VX_FIT_LEVELS];
    if (vx_parse_list("--coarse", s, buf, sizeof buf, it, VX_FIT_LEVELS, n)) return -1;
    for (int k = 0; k < *n; k++)
        if (vx_parse_int("--coarse", it[k], 2, 1024, &res[k])) return -1;
    return 0;
}

int vx_bench_fit(int argc, char **argv) {
    const char *scene = NULL, *dataset = NULL;
    int batch = 131072, steps = 20, downscale = 1, dense = 0, coarse = 0, density = VX_FIT_COARSE_DENSITY_DEFAULT;
    int levels[VX_FIT_LEVELS];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__bench_fit_usage(stdout); return 0; }
        if ((!strcmp(a, "--batch") || !strcmp(a, "--steps") || !strcmp(a, "--downscale") || !strcmp(a, "--coarse")) &&
            i + 1 >= argc) {
            fprintf(stderr, "voxray bench fit: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--dense")) dense = 1;
        else if (!strcmp(a, "--no-coarse-density")) density = 0;
        else if (!strcmp(a, "--batch")) bad = vx_parse_int(a, argv[++i], 1, 1 << 24, &batch);
        else if (!strcmp(a, "--steps")) bad = vx_parse_int(a, argv[++i], 1, 100000, &steps);
        else if (!strcmp(a, "--downscale")) bad = vx_parse_int(a, argv[++i], 1, 64, &downscale);
        else if (!strcmp(a, "--coarse")) bad = vx__parse_levels(argv[++i], levels, &coarse); /* coarse: how many */
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "voxray bench fit: unknown option '%s'\n", a); return 2; }
        else if (!scene) scene = a;
        else if (!dataset) dataset = a;
        else { fprintf(stderr, "voxray bench fit: unexpected argument '%s'\n", a); return 2; }
        if (bad) { fprintf(stderr, "voxray bench fit: %s\n", vx_errmsg()); return 2; }
    }
    if (!scene || !dataset) { vx__bench_fit_usage(stderr); return 2; }
#ifndef VX_HAVE_CUDA
    (void)dense; (void)coarse; (void)density; (void)levels;
    fprintf(stderr, "voxray bench fit: this voxray was built without CUDA\n");
    return 1;
#else
    char info[256];
    if (!vx_cuda_probe(info, sizeof info)) { fprintf(stderr, "voxray bench fit: no usable CUDA device (%s)\n", info); return 1; }
    vx_scene s;
    vx_load_opts lo;
    memset(&lo, 0, sizeof lo);
    vx_dataset all, train, held;
    vx_fit_model f;
    vx_fit_batch b;
    vx_fit_device *g = NULL;
    memset(&all, 0, sizeof all); memset(&train, 0, sizeof train); memset(&held, 0, sizeof held);
    memset(&f, 0, sizeof f); memset(&b, 0, sizeof b);
    int rc = 1;
    if (vx_scene_load(scene, &lo, &s) || (s.grid.sparse && vx_grid_densify(&s.grid))) {
        fprintf(stderr, "voxray bench fit: %s\n", vx_errmsg());
        return 1;
    }
    double copy_gbs = 0.0;
    int res[3];
    if (vx__model_from_scene(&s, &f)) goto done;
    res[0] = f.nx; res[1] = f.ny; res[2] = f.nz;
    f.sparse_fit = !dense; /* the identity resample keeps every value and makes the bricks */
    if ((!dense && vx_fit_resample_cpu(&f, f.box_lo, f.box_hi, res)) || vx__coarse_setup(&f, levels, coarse, density) ||
        vx_dataset_load(dataset, "train", downscale, &all) ||
        vx_dataset_holdout(&all, 8, &train, &held) || vx_fit_batch_alloc(&b, batch) ||
        vx_fit_model_upload_cuda(&g, &f, batch) || vx_fit_views_upload_cuda(g, &train) || vx_fit_update_params_cuda(g, 1e-4f) ||
        vx_fit_occupancy_build_cuda(g, 8) || vx_bench_copy_bandwidth(&copy_gbs))
        goto done;
    vx__bench_ctx ctx;
    ctx.d = &train; ctx.b = &b; ctx.batch = batch;
    vx_fit_hparams_default(&ctx.hp);
    size_t alive = vx_fit_alive_count_cuda(g), nv = (size_t)f.nx * f.ny * f.nz;
    printf("bench fit: %s, %dx%dx%d x %d channels, %zu of %zu voxels alive; %d views %dx%d; %s\n", scene, f.nx, f.ny,
           f.nz, f.nc, alive, nv, train.n, train.width, train.height, info);
    printf("storage: %s, %zu voxel entries, %.2f GiB of parameters, gradient and moments\n",
           f.table ? "8^3 bricks with alive voxels" : "dense lattice", vx_fit_storage_voxels(&f),
           (double)vx_fit_storage_voxels(&f) * f.nc * 16 / 1073741824.0);
    size_t coarse_entries = 0; /* all levels' */
    for (int l = 0; l < coarse; l++) {
        printf("coarse level %d: %dx%dx%d x %d channels (%s), every alive voxel's gradient there non-zero\n", l,
               f.lv[l].n[0], f.lv[l].n[1], f.lv[l].n[2], vx_fit_coarse_nch(&f),
               f.coarse_density ? "the density and the colour" : "the colour only, --no-coarse-density");
        coarse_entries += vx_fit_coarse_entries(&f, l);
    }
    int mlp = f.mlp_layers > 0;
    /* the tensor-core rows where the GPU has them (sm_80 and up), said when it has not */
    int tc = mlp && !vx_fit_set_mlp_tc_cuda(g, 1);
    if (mlp && !tc) {
        printf("(no tensor-core rows: %s)\n", vx_errmsg());
        vx_clear_error();
    }
    vx_fit_set_mlp_tc_cuda(g, 0);
    printf("copy bandwidth (device to device, read + write): %.0f GB/s\n", copy_gbs);
    printf("  %-46s %10s %14s %10s\n", "step", "ms/step", "rays/s", "GB/s");
    int nch = vx_fit_coarse_nch(&f); /* the levels' channels */
    char rname[2][64]; /* the restriction's rows, fit's version marked */
    for (int v = 1; v <= 2; v++)
        snprintf(rname[v - 1], sizeof rname[0], "coarse levels: restriction v%d%s", v,
                 v == VX_FIT_COARSE_VERSION_DEFAULT ? " (fit's)" : "");
    double grad_bytes = (double)alive * nch * 4; /* the levels' channels of the gradient, read once a level */
    struct { const char *name; vx__step_fn fn; int rays; double bytes; } rows[] = {
        /* first: the gradient vx__coarse_setup made is still there (Adam's row consumes it) */
        {rname[0], coarse ? vx__coarse_restrict1 : NULL, 0, grad_bytes * coarse},
        {rname[1], coarse ? vx__coarse_restrict2 : NULL, 0, grad_bytes * coarse},
        {"coarse levels: Adam + prolongation", coarse ? vx__coarse_apply : NULL, 0,
         grad_bytes * 2 + (double)coarse_entries * 4 * 6},
        {mlp ? "rays, mlp per-ray kernel (device rays)" : "rays v1 (generic, host-drawn rays)",
         mlp ? vx__rays_mlp_per_ray : vx__rays_v1, 1, 0},
        {mlp ? "rays, mlp batched kernel (device rays)" : "rays v2 (SH-specialised, device rays)",
         mlp ? vx__rays_mlp_batched : vx__rays_v2, 1, 0},
        {mlp ? "rays, mlp batched, --rgbper 0.01" : "rays v2, --rgbper 0.01", vx__rays_rgbper, 1, 0},
        {mlp ? "rays, mlp batched, --rgbper 0.01 --random-bg" : "rays v2, --rgbper 0.01 --random-bg", vx__rays_random_bg, 1, 0},
        {"rays, mlp batched, --rgbper 0.01, tensor cores", tc ? vx__rays_tc : NULL, 1, 0},
        {"rays, the same with gather v2 (one march)", tc ? vx__rays_tc_g2 : NULL, 1, 0},
        {"TV (10% of alive voxels)", vx__tv, 0, 0},
        {"Adam (alive voxels, dense)", vx__adam, 0, (double)alive * f.nc * 4 * 4 * 2},
        {"occupancy from alive voxels", vx__occ, 0, 0},
        {mlp ? "whole step as fit runs it (batched, --rgbper)" : "whole step as fit runs it (rays v2, --rgbper)",
         vx__full, 1, 0},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        double ms;
        if (!rows[r].fn) continue;
        if (vx__time(g, rows[r].fn, &ctx, steps, &ms)) goto done;
        char rays[32] = "", gbs[32] = "";
        if (rows[r].rays) snprintf(rays, sizeof rays, "%.0f", batch / (ms * 1e-3));
        if (rows[r].bytes > 0) snprintf(gbs, sizeof gbs, "%.0f", rows[r].bytes / (ms * 1e-3) / 1e9);
        printf("  %-46s %10.3f %14s %10s\n", rows[r].name, ms, rays, gbs);
    }
    printf("(Adam's GB/s counts parameters, gradient and both moments, each read and written)\n");
    if (coarse)
        printf("(the levels' GB/s: the restriction reads the levels' channels of the gradient once a level;\n"
               " the prolongation reads and writes those channels of the parameters, the\n"
               " coarse Adam steps read and write their steps and both moments)\n");
    if (mlp && (vx__mlp_breakdown(g, &ctx, steps, f.mlp_layers, 0) || (tc && vx__mlp_breakdown(g, &ctx, steps, f.mlp_layers, 1))))
        goto done;
    rc = 0;
done:
    if (rc) fprintf(stderr, "voxray bench fit: %s\n", vx_errmsg());
    vx_fit_model_free_cuda(g);
    vx_fit_batch_free(&b);
    vx_fit_model_free(&f);
    vx_dataset_free(&all); vx_dataset_free(&train); vx_dataset_free(&held);
    vx_scene_free(&s);
    return rc;
#endif
}
