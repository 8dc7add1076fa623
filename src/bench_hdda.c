/* bench_hdda.c - `voxray bench hdda SCENE...`: NanoVDB's own HDDA ray march (hdda_march.h;
 * kernels/hdda.cu on CUDA, render_hdda_cpu.cpp on the CPU) against voxray's sparse renderer
 * on the same bricks, camera, step, decoder and compositing; prints both times, the sample
 * counts and how far the two images are apart. cmd/bench.c dispatches here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bench.h"
#include "cli.h"
#include "sparse_grid.h"
#include "vx_common.h"
#ifdef VX_HAVE_NANOVDB
#include "render_hdda.h"
#endif
#if defined(VX_HAVE_NANOVDB) && defined(VX_HAVE_CUDA)
#include "cuda_hdda.h"
#include "cuda_render.h"
#endif

static void vx__hdda_help(void) {
    printf("usage: voxray bench hdda SCENE... [--size WxH] [--frames N] [options]\n"
           "NanoVDB's HDDA ray march against voxray's sparse renderer on the same volume: the\n"
           "scene's bricks (a dense scene is made sparse first) become a NanoVDB grid, one leaf\n"
           "per brick; both march the same camera rays with the same segments, decoder and\n"
           "compositing. voxray skips empty space with its occupancy grid and reads bricks\n"
           "through its table; NanoVDB's HDDA skips empty tree nodes and samples through its\n"
           "accessor (src/hdda_march.h says exactly what each does). Scalar scenes only (fog\n"
           ".vdb/.nvdb, scans). Median ms/frame of N frames (default 20) on CUDA (kernel time,\n"
           "events) or the CPU (--backend cpu); 'max diff' compares the two images (0..1).\n\n%s",
           vx_cli_common_help());
}

#ifdef VX_HAVE_NANOVDB
/* Largest and mean absolute difference over the rgb of two frames, and the share of
 * channel values more than 1/255 apart. */
static void vx__diff(const vx_frame *a, const vx_frame *b, double *mx, double *mean, double *over) {
    size_t n = (size_t)a->width * a->height * 3, cnt = 0;
    double s = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a->rgb[i] - b->rgb[i]);
        s += d;
        m = d > m ? d : m;
        cnt += d > 1.0 / 255;
    }
    *mx = m;
    *mean = s / (double)n;
    *over = (double)cnt / (double)n;
}

/* Time `frames` frames of one renderer; fills t (ms each) and f with one frame. */
typedef struct {
    const vx_cli_common *cc;
    const vx_scene *s;
    const vx_volume *v;
    const vx_hdda_grid *h;
    const vx_camera *cam;
    int frames, use_cuda;
} vx_hdda_run;

static int vx__time_voxray(const vx_hdda_run *r, double *t, vx_frame *f) {
#ifdef VX_HAVE_CUDA
    if (r->use_cuda) {
        vx_cuda_volume *cv = NULL;
        if (vx_volume_upload_cuda(&cv, r->v, &r->s->grid, 0)) return -1;
        int ok = 1;
        for (int i = -3; i < r->frames && ok; i++) {
            float ms;
            long long sm, hit;
            ok = !vx_render_device_cuda(cv, r->cam, 0, &ms, &sm, &hit);
            if (i >= 0) t[i] = ms;
        }
        ok = ok && !vx_render_cuda(cv, r->cam, f);
        vx_volume_free_cuda(cv);
        return ok ? 0 : -1;
    }
#endif
    for (int i = -1; i < r->frames; i++) {
        double t0 = vx_now();
        if (vx_render_cpu(r->v, r->cam, &r->cc->ropts, f)) return -1;
        if (i >= 0) t[i] = (vx_now() - t0) * 1e3;
    }
    return 0;
}

static int vx__time_hdda(const vx_hdda_run *r, double *t, vx_frame *f) {
#ifdef VX_HAVE_CUDA
    if (r->use_cuda) {
        vx_cuda_hdda *d = NULL;
        if (vx_hdda_upload_cuda(&d, r->h, &r->v->mp)) return -1;
        int ok = 1;
        for (int i = -3; i < r->frames && ok; i++) {
            float ms;
            long long sm, hit;
            ok = !vx_render_hdda_device_cuda(d, r->cam, &ms, &sm, &hit);
            if (i >= 0) t[i] = ms;
        }
        ok = ok && !vx_render_hdda_cuda(d, r->cam, f);
        vx_hdda_free_cuda(d);
        return ok ? 0 : -1;
    }
#endif
    for (int i = -1; i < r->frames; i++) {
        double t0 = vx_now();
        if (vx_render_hdda_cpu(r->h, &r->v->mp, r->cam, f)) return -1;
        if (i >= 0) t[i] = (vx_now() - t0) * 1e3;
    }
    return 0;
}

/* One scene at one size: a table row. */
static int vx__hdda_one(const vx_cli_common *cc, vx_scene *s, int w, int h, int frames, int use_cuda) {
    vx_camera cam;
    if (vx_cli_camera(cc, s, w, h, &cam)) return -1;
    vx_volume v;
    if (vx_volume_prepare(&v, s, &cc->ropts)) return -1;
    int rc = -1;
    vx_hdda_grid *hg = NULL;
    vx_frame fa = {0}, fb = {0};
    double *ta = vx_calloc((size_t)frames * 2, sizeof *ta, "frame times"), *tb = ta + frames;
    if (!ta) goto done;
    double t0 = vx_now();
    if (vx_hdda_grid_build(&hg, &s->grid)) goto done;
    double build_ms = (vx_now() - t0) * 1e3;
    size_t bytes;
    (void)vx_hdda_grid_data(hg, &bytes);
    if (vx_frame_alloc(&fa, w, h, 0) || vx_frame_alloc(&fb, w, h, 0)) goto done;
    vx_hdda_run r = {cc, s, &v, hg, &cam, frames, use_cuda};
    if (vx__time_voxray(&r, ta, &fa) || vx__time_hdda(&r, tb, &fb)) goto done;
    double ma = vx_median(ta, frames), mb = vx_median(tb, frames), dmax, dmean, over;
    vx__diff(&fa, &fb, &dmax, &dmean, &over);
    printf("  %-10s %6zu %8.1f %8.1f %4dx%-4d %9.3f %9.3f %6.2fx %11lld %11lld %8.4f %9.6f %7.3f%%\n", s->name,
           s->grid.sparse->nbricks, bytes / 1048576.0, build_ms, w, h, ma, mb, mb / ma, fa.samples, fb.samples,
           dmax, dmean, 100 * over);
    rc = 0;
done:
    vx_frame_free(&fa);
    vx_frame_free(&fb);
    vx_hdda_grid_free(hg);
    free(ta);
    vx_volume_free(&v);
    return rc;
}
#endif

int vx_bench_hdda(int argc, char **argv) {
    vx_cli_common cc;
    vx_cli_common_init(&cc);
    const char *scenes[64];
    int nscenes = 0, frames = 20, w = 0, h = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__hdda_help(); return 0; }
        if (!strcmp(a, "--frames")) {
            if (i + 1 >= argc || vx_parse_int("--frames", argv[++i], 1, 100000, &frames)) goto bad;
            continue;
        }
        int r = vx_cli_parse_common(&cc, &i, argc, argv);
        if (r < 0) goto bad;
        if (r > 0) continue;
        if (a[0] == '-') { fprintf(stderr, "voxray: bench hdda: unknown option '%s'\n", a); return 2; }
        if (nscenes == 64) { fprintf(stderr, "voxray: bench hdda: at most 64 scenes\n"); return 2; }
        scenes[nscenes++] = a;
    }
    if (!nscenes) { fprintf(stderr, "voxray: bench hdda: no scene given (see --help)\n"); return 2; }
    if (cc.ropts.jitter || cc.ropts.half || cc.ropts.no_skip || (cc.ropts.occ_cell && cc.ropts.occ_cell != 8)) {
        fprintf(stderr, "voxray: bench hdda: --jitter, --half, --no-skip and other cell sizes are not compared\n");
        return 2;
    }
    w = cc.width > 0 ? cc.width : 800;
    h = cc.height > 0 ? cc.height : 800;
#ifndef VX_HAVE_NANOVDB
    (void)frames; (void)w; (void)h; (void)scenes;
    fprintf(stderr, "voxray: bench hdda: this voxray was built without NanoVDB (install libnanovdb-dev, or "
                    "`make deps-bundle` for the device, and rebuild)\n");
    return 1;
#else
    vx_backend_kind kind;
    char info[256];
    if (vx_backend_resolve(cc.backend, "bench hdda: using the CPU backend", &kind, info, sizeof info)) goto fail;
    int use_cuda = kind == VX_BACKEND_CUDA;
    printf("%s: %s; voxray = sparse bricks + occupancy skipping, hdda = NanoVDB HDDA + ReadAccessor\n",
           use_cuda ? "device" : "backend", use_cuda ? info : "cpu");
    printf("  %-10s %6s %8s %8s %-9s %9s %9s %7s %11s %11s %8s %9s %8s\n", "scene", "leaves", "nvdb MiB", "build ms",
           "size", "voxray ms", "hdda ms", "ratio", "vx samples", "hdda samp", "max diff", "mean diff", ">1/255");
    for (int k = 0; k < nscenes; k++) {
        vx_scene s;
        cc.scene_path = scenes[k];
        if (vx_cli_load_scene(&cc, &s)) goto fail;
        if (s.dec.type != VX_DEC_SCALAR || s.grid.nc != 1) {
            vx_error("%s: bench hdda takes scalar scenes (one channel, scalar decoder)", scenes[k]);
            vx_scene_free(&s);
            goto fail;
        }
        if (!s.grid.sparse) { /* the bricks where the decoder can give density, as convert --sparse */
            vx_grid sg;
            if (vx_sparse_from_dense(&s.grid, &s.dec, 0.0f, &sg)) { vx_scene_free(&s); goto fail; }
            vx_grid_free(&s.grid);
            s.grid = sg;
        }
        int rc = vx__hdda_one(&cc, &s, w, h, frames, use_cuda);
        vx_scene_free(&s);
        if (rc) goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "voxray: bench hdda: %s\n", vx_errmsg());
    return 1;
#endif
bad:
    fprintf(stderr, "voxray: bench hdda: %s\n", vx_errmsg());
    return 2;
}
