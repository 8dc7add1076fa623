/* cmd/bench.c - `voxray bench`: dispatches `bench kernels` (bench_kernels.c) and times
 * `bench render SCENE...`: ms/frame, frames/s, samples/s and samples per ray on the
 * CUDA renderer (kernel time from CUDA events, plus one frame with the copy back), or
 * on the CPU backend when asked or when no device is usable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "sparse_grid.h"
#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "cuda_device.h"
#include "cuda_render.h"
#endif

#define VX_BENCH_MAX_SIZES 8

static void vx__bench_help(void) {
    printf("usage: voxray bench kernels [--quick] [--no-torch]\n"
           "       voxray bench fit SCENE DATASET [--batch RAYS] [--steps K] (see bench fit --help)\n"
           "       voxray bench render SCENE... [--size WxH]... [--frames N] [--stores f32,f16] [options]\n"
           "       voxray bench hdda SCENE... [--size WxH] [--frames N] (NanoVDB's HDDA vs voxray)\n"
           "Render timings: median ms/frame of N frames (default 50) for each scene and size\n"
           "(--size may repeat; default 800x800), samples per second and per ray that met\n"
           "the volume; the CUDA time is the kernel alone (events), 'e2e' adds the copy back\n"
           "(median of up to 5 frames into one host frame, after one that touches its pages).\n"
           "--stores f32,f16 times each device storage in turn from one load of the scene\n"
           "(default: f32, or f16 with --half; the CPU renders float32 only). On CUDA a scene\n"
           "of the mlp decoder is timed three ways: deferred (the default: the network batched\n"
           "over the frame's composited samples), the same with the network's hidden layers on\n"
           "the tensor cores (row 'NAME tc', --mlp-tensor-cores; sm_80 and up), and in the\n"
           "marching thread (row 'NAME fused').\n\n%s",
           vx_cli_common_help());
}

/* The mlp decoder's rows on CUDA: the deferred colour with the network in FP32 (the
 * default), the same on the tensor cores (--mlp-tensor-cores), and the network in the
 * marching thread. */
enum { VX__WAY_DEFERRED, VX__WAY_TC, VX__WAY_FUSED, VX__WAYS };
static const char *const vx__way_name[VX__WAYS] = {"", " tc", " fused"};

/* A scene made ready once for all its sizes: grid and occupancy on the device, or the CPU
 * renderer (a 4096^3 upload takes longer than its frames). */
typedef struct {
    int use_cuda;
    double empty;      /* fraction of occupancy cells that are empty */
    double ready_s;    /* seconds to prepare it */
    vx_renderer *r;    /* CPU */
#ifdef VX_HAVE_CUDA
    vx_volume v;       /* CUDA */
    vx_cuda_volume *cv;
#endif
    int way;           /* CUDA, mlp decoder: VX__WAY_* (vx_volume_set_mlp_deferred_cuda,
                        * vx_volume_set_mlp_tc_cuda) */
} vx__bench_target;

static int vx__bench_open(const vx_cli_common *cc, const vx_scene *s, int use_cuda, vx__bench_target *t) {
    memset(t, 0, sizeof *t);
    t->use_cuda = use_cuda;
    double t0 = vx_now();
#ifdef VX_HAVE_CUDA
    if (use_cuda) {
        if (vx_volume_prepare(&t->v, s, &cc->ropts)) return -1;
        t->empty = t->v.occ_empty_fraction;
        if (vx_volume_upload_cuda(&t->cv, &t->v, &s->grid, cc->ropts.half)) { vx_volume_free(&t->v); return -1; }
        t->ready_s = vx_now() - t0;
        return 0;
    }
#endif
    if (vx_renderer_create(&t->r, s, &cc->ropts, VX_BACKEND_CPU)) return -1;
    t->empty = vx_renderer_volume(t->r)->occ_empty_fraction;
    t->ready_s = vx_now() - t0;
    return 0;
}

static void vx__bench_close(vx__bench_target *t) {
#ifdef VX_HAVE_CUDA
    if (t->use_cuda) {
        vx_volume_free_cuda(t->cv);
        vx_volume_free(&t->v);
        return;
    }
#endif
    vx_renderer_destroy(t->r);
}

/* One scene at one size: prints a table row. */
static int vx__bench_one(const vx_cli_common *cc, const vx_scene *s, vx__bench_target *tg, int w, int h, int frames) {
    const int use_cuda = tg->use_cuda;
    vx_camera cam;
    if (vx_cli_camera(cc, s, w, h, &cam)) return -1;
    double *t = vx_calloc((size_t)frames, sizeof *t, "frame times");
    if (!t) return -1;
    long long samples = 0, hit = 0;
    double e2e = 0, empty = tg->empty, mib = 0;
    int rc = -1;
    vx_frame f = {0};
    if (vx_frame_alloc(&f, w, h, 0)) goto done;
#ifdef VX_HAVE_CUDA
    if (use_cuda) {
        vx_cuda_volume *cv = tg->cv;
        int ok = 1;
        vx_volume_set_mlp_deferred_cuda(cv, tg->way != VX__WAY_FUSED);
        if (vx_volume_set_mlp_tc_cuda(cv, tg->way == VX__WAY_TC)) goto done;
        for (int i = -3; i < frames && ok; i++) { /* three warm-up frames */
            float ms;
            ok = !vx_render_device_cuda(cv, &cam, 0, &ms, &samples, &hit);
            if (i >= 0) t[i] = ms;
        }
        /* e2e: the median of a few frames copied back into the same host frame, after one
         * untimed copy: the first touches the frame's fresh pages (a page fault per 4 KiB,
         * ~6 ms at 800x800), which a viewer or a turntable pays once, not per frame */
        double te[5];
        int ne = frames < 5 ? frames : 5;
        ok = ok && !vx_render_cuda(cv, &cam, &f);
        for (int i = 0; i < ne && ok; i++) {
            double t0 = vx_now();
            ok = !vx_render_cuda(cv, &cam, &f);
            te[i] = (vx_now() - t0) * 1e3;
        }
        if (ok) e2e = vx_median(te, ne);
        mib = (double)vx_volume_bytes_cuda(cv) / (1 << 20);
        if (!ok) goto done;
    } else
#endif
    {
        int ok = 1;
        for (int i = -1; i < frames && ok; i++) {
            double t0 = vx_now();
            ok = !vx_renderer_render(tg->r, &cam, &f);
            if (i >= 0) t[i] = (vx_now() - t0) * 1e3;
        }
        samples = f.samples;
        hit = f.rays_hit;
        if (!ok) goto done;
    }
    double med = vx_median(t, frames);
    /* e2e (kernel + copy back) only exists on CUDA; on the CPU ms/frame is already end to
     * end, and samples/s is given in millions (CPU rates are a few hundred M/s) */
    char e2e_s[32] = "-", rate_s[32], mib_s[32] = "-", store[16];
    if (use_cuda) snprintf(e2e_s, sizeof e2e_s, "%.3f", e2e);
    if (use_cuda) snprintf(mib_s, sizeof mib_s, "%.0f", mib);
    snprintf(store, sizeof store, "%s%s", use_cuda && cc->ropts.half ? "f16" : "f32", s->grid.sparse ? " sp" : "");
    if (use_cuda) snprintf(rate_s, sizeof rate_s, "%.2f G", samples / (med * 1e-3) / 1e9);
    else snprintf(rate_s, sizeof rate_s, "%.1f M", samples / (med * 1e-3) / 1e6);
    char name[sizeof s->name + 8];
    snprintf(name, sizeof name, "%s%s", s->name, vx__way_name[tg->way]);
    printf("  %-10s %4dx%-4d %4dx%-4d %-7s %7s %9.3f %9.0f %9s %10s %8.1f %6.0f%%\n", name, s->grid.nx,
           s->grid.nz, w, h, store, mib_s, med, 1e3 / med, e2e_s, rate_s, hit ? (double)samples / hit : 0.0,
           100 * empty);
    rc = 0;
done:
    vx_frame_free(&f);
    free(t);
    return rc;
}

static int vx__bench_render(int argc, char **argv) {
    vx_cli_common cc;
    vx_cli_common_init(&cc);
    const char *scenes[64];
    int nscenes = 0, frames = 50, nsizes = 0, sizes[VX_BENCH_MAX_SIZES][2], stores[2] = {0, 0}, nstores = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__bench_help(); return 0; }
        if (!strcmp(a, "--frames")) {
            if (i + 1 >= argc || vx_parse_int("--frames", argv[++i], 1, 100000, &frames)) goto bad;
            continue;
        }
        if (!strcmp(a, "--stores")) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (!strcmp(v, "f32") || !strcmp(v, "f16")) { stores[0] = v[1] == '1'; nstores = 1; }
            else if (!strcmp(v, "f32,f16") || !strcmp(v, "f16,f32")) { stores[0] = v[1] == '1'; stores[1] = !stores[0]; nstores = 2; }
            else { vx_error("--stores: '%s' is not f32, f16, f32,f16 or f16,f32", v); goto bad; }
            continue;
        }
        if (!strcmp(a, "--size")) {
            if (nsizes == VX_BENCH_MAX_SIZES) { vx_error("--size: at most %d sizes", VX_BENCH_MAX_SIZES); goto bad; }
            if (i + 1 >= argc || vx_parse_size("--size", argv[++i], &sizes[nsizes][0], &sizes[nsizes][1])) goto bad;
            nsizes++;
            continue;
        }
        int r = vx_cli_parse_common(&cc, &i, argc, argv);
        if (r < 0) goto bad;
        if (r > 0) continue;
        if (a[0] == '-') { fprintf(stderr, "voxray: bench render: unknown option '%s'\n", a); return 2; }
        if (nscenes == 64) { fprintf(stderr, "voxray: bench render: at most 64 scenes\n"); return 2; }
        scenes[nscenes++] = a;
    }
    if (!nscenes) { fprintf(stderr, "voxray: bench render: no scene given (see --help)\n"); return 2; }
    if (!nsizes) { sizes[0][0] = cc.width > 0 ? cc.width : 800; sizes[0][1] = cc.height > 0 ? cc.height : 800; nsizes = 1; }
    vx_backend_kind kind;
    char info[256];
    if (vx_backend_resolve(cc.backend, "bench render: using the CPU backend", &kind, info, sizeof info)) goto fail;
    int use_cuda = kind == VX_BACKEND_CUDA;
    if (!nstores) { stores[0] = cc.ropts.half; nstores = 1; }
    if (!use_cuda) { stores[0] = 0; nstores = 1; }
    if (use_cuda) {
        double gbs;
        if (vx_bench_copy_bandwidth(&gbs)) goto fail;
        printf("device: %s; device-to-device copy %.0f GB/s\n", info, gbs);
    } else {
        printf("backend: cpu\n");
    }
    printf("  %-10s %-9s %-9s %-7s %7s %9s %9s %9s %10s %8s %7s\n", "scene", "grid", "size", "store", "dev MiB",
           "ms/frame", "frames/s", "e2e ms", "samples/s", "spp ray", "empty");
    for (int k = 0; k < nscenes; k++) {
        vx_scene s;
        cc.scene_path = scenes[k];
        double t_load = vx_now();
        if (vx_cli_load_scene(&cc, &s)) goto fail;
        double loaded = vx_now();
        char bricks[128] = "";
        if (s.grid.sparse) {
            vx_sparse_stats st;
            vx_sparse_stats_of(&s.grid, &st);
            snprintf(bricks, sizeof bricks, " (%zu of %zu bricks, %.1f MiB in memory)", st.bricks, st.table_entries,
                     st.bytes_sparse / 1048576.0);
        }
        fprintf(stderr, "voxray: bench render: %s%s loaded in %.1f s\n", scenes[k], bricks, loaded - t_load);
        for (int st = 0; st < nstores; st++) {
            vx__bench_target tg;
            cc.ropts.half = stores[st];
            if (vx__bench_open(&cc, &s, use_cuda, &tg)) { vx_scene_free(&s); goto fail; }
            fprintf(stderr, "voxray: bench render: %s %s ready to render in %.1f s\n", scenes[k],
                    use_cuda ? (stores[st] ? "f16" : "f32") : "cpu", tg.ready_s);
            int ways = 1; /* the mlp decoder on CUDA: deferred, on the tensor cores, fused */
#ifdef VX_HAVE_CUDA
            if (use_cuda && tg.v.mp.dec.type == VX_DEC_MLP) ways = VX__WAYS;
#endif
            int tc_ok = 1;
            for (int z = 0; z < nsizes; z++)
                for (int way = 0; way < ways; way++) {
#ifdef VX_HAVE_CUDA
                    if (way == VX__WAY_TC && tc_ok && vx_volume_set_mlp_tc_cuda(tg.cv, 1)) {
                        fprintf(stderr, "voxray: bench render: no tensor-core row: %s\n", vx_errmsg());
                        vx_clear_error();
                        tc_ok = 0;
                    }
#endif
                    if (way == VX__WAY_TC && !tc_ok) continue;
                    tg.way = way;
                    if (vx__bench_one(&cc, &s, &tg, sizes[z][0], sizes[z][1], frames)) {
                        vx__bench_close(&tg);
                        vx_scene_free(&s);
                        goto fail;
                    }
                }
            vx__bench_close(&tg);
        }
        vx_scene_free(&s);
    }
    return 0;
bad:
    fprintf(stderr, "voxray: bench render: %s\n", vx_errmsg());
    return 2;
fail:
    fprintf(stderr, "voxray: bench render: %s\n", vx_errmsg());
    return 1;
}

int vx_cmd_bench(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        vx__bench_help();
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "kernels")) return vx_bench_kernels(argc - 1, argv + 1);
    if (!strcmp(argv[1], "render")) return vx__bench_render(argc - 1, argv + 1);
    if (!strcmp(argv[1], "fit")) return vx_bench_fit(argc - 1, argv + 1);
    if (!strcmp(argv[1], "hdda")) return vx_bench_hdda(argc - 1, argv + 1);
    fprintf(stderr, "voxray: bench: '%s' is not one of kernels, render, fit, hdda\n", argv[1]);
    return 2;
}
