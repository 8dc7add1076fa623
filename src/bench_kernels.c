/* bench_kernels.c - `voxray bench kernels`: every version of the trilinear op at the
 * tutorial's size and at a small-F size, and the grid gather/scatter, each validated
 * against the CPU reference (trilinear_cpu.c) on fresh random inputs before it is
 * timed; bandwidth is reported as a fraction of the device copy measured in the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "cuda_device.h"
#include "cuda_trilinear.h"
#endif

#ifndef VX_HAVE_CUDA
int vx_bench_copy_bandwidth(double *gbs) {
    *gbs = 0;
    return vx_error("bench: this voxray was built without CUDA (nvcc was not found)");
}
int vx_bench_kernels(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "voxray: bench kernels: this voxray was built without CUDA (nvcc was not found)\n");
    return 1;
}
#else

#define VX_CHECK_N 65536 /* points validated against the CPU in each case */

typedef struct {
    vx_cuda_timer *timer;
    double copy_gbs;
    int reps;
} vx_bench;

/* Mean milliseconds of one call of fn over b->reps runs after two warm-ups. */
typedef int (*vx_bench_fn)(void *ctx);
static int vx__time(vx_bench *b, vx_bench_fn fn, void *ctx, double *ms) {
    float t;
    for (int w = 0; w < 2; w++) if (fn(ctx)) return -1;
    if (vx_cuda_timer_start(b->timer)) return -1;
    for (int r = 0; r < b->reps; r++) if (fn(ctx)) return -1;
    if (vx_cuda_timer_stop(b->timer, &t)) return -1;
    *ms = t / b->reps;
    return 0;
}

typedef struct { void *dst; const void *src; size_t bytes; } vx_copy_ctx;
static int vx__copy(void *c) { vx_copy_ctx *x = c; return vx_cuda_copy(x->dst, x->src, x->bytes); }

int vx_bench_copy_bandwidth(double *gbs) {
    vx_bench b = {.reps = 20};
    vx_copy_ctx c = {.bytes = (size_t)1 << 30};
    void *a = NULL, *d = NULL;
    double ms;
    int rc = -1;
    if (vx_cuda_timer_create(&b.timer)) return -1;
    if (vx_cuda_alloc(&a, c.bytes, "copy source") || vx_cuda_alloc(&d, c.bytes, "copy target") ||
        vx_cuda_zero(a, c.bytes))
        goto done;
    c.src = a;
    c.dst = d;
    if (vx__time(&b, vx__copy, &c, &ms)) goto done;
    *gbs = 2.0 * c.bytes / (ms * 1e-3) / 1e9;
    rc = 0;
done:
    vx_cuda_free(a);
    vx_cuda_free(d);
    vx_cuda_timer_destroy(b.timer);
    return rc;
}

/* ---- the cell op ------------------------------------------------------------------ */

typedef struct {
    int version, n, f, backward;
    float *feats, *pts, *out, *dout, *dfeats;
} vx_cell_ctx;

static int vx__cell(void *c) {
    vx_cell_ctx *x = c;
    return x->backward ? vx_trilinear_backward_cuda(x->version, x->dout, x->pts, x->dfeats, x->n, x->f, 0)
                       : vx_trilinear_forward_cuda(x->version, x->feats, x->pts, x->out, x->n, x->f, 0);
}

/* Compare the first min(n, VX_CHECK_N) points of the device result with the CPU. */
static int vx__cell_validate(vx_cell_ctx *x) {
    int nchk = x->n < VX_CHECK_N ? x->n : VX_CHECK_N;
    size_t nf = (size_t)nchk * x->f, n8f = nf * 8;
    float *h_in = malloc(n8f * 4), *h_pts = malloc((size_t)nchk * 12), *h_ref = malloc(n8f * 4), *h_got = malloc(n8f * 4);
    int rc = -1;
    if (!h_in || !h_pts || !h_ref || !h_got) { vx_error("bench: out of memory for validation"); goto done; }
    if (vx_cuda_download(h_pts, x->pts, (size_t)nchk * 12)) goto done;
    size_t nout = x->backward ? n8f : nf;
    if (x->backward) {
        if (vx_cuda_download(h_in, x->dout, nf * 4) || vx_cuda_download(h_got, x->dfeats, n8f * 4)) goto done;
        vx_trilinear_backward_cpu(h_in, h_pts, h_ref, nchk, x->f);
    } else {
        if (vx_cuda_download(h_in, x->feats, n8f * 4) || vx_cuda_download(h_got, x->out, nf * 4)) goto done;
        vx_trilinear_forward_cpu(h_in, h_pts, h_ref, nchk, x->f);
    }
    for (size_t i = 0; i < nout; i++) {
        float e = fabsf(h_got[i] - h_ref[i]);
        if (!(e <= 1e-6f + fabsf(h_ref[i]) * 1e-6f)) {
            vx_error("bench: trilinear %s version %d differs from the CPU at [%zu]: %g vs %g",
                     x->backward ? "backward" : "forward", x->version, i, h_got[i], h_ref[i]);
            goto done;
        }
    }
    rc = 0;
done:
    free(h_in); free(h_pts); free(h_ref); free(h_got);
    return rc;
}

static int vx__bench_cell(vx_bench *b, int n, int f) {
    vx_cell_ctx x = {.n = n, .f = f};
    size_t nf = (size_t)n * f, n8f = nf * 8;
    int rc = -1;
    if (vx_cuda_alloc((void **)&x.feats, n8f * 4, "feats") || vx_cuda_alloc((void **)&x.dfeats, n8f * 4, "dfeats") ||
        vx_cuda_alloc((void **)&x.pts, (size_t)n * 12, "points") || vx_cuda_alloc((void **)&x.out, nf * 4, "out") ||
        vx_cuda_alloc((void **)&x.dout, nf * 4, "dout"))
        goto done;
    unsigned seed = (unsigned)time(NULL);
    if (vx_cuda_fill_uniform(x.feats, n8f, seed, -1, 1) || vx_cuda_fill_uniform(x.pts, (size_t)n * 3, seed + 1, -1, 1) ||
        vx_cuda_fill_uniform(x.dout, nf, seed + 2, -1, 1))
        goto done;
    double mb_fwd = (n8f * 4.0 + n * 12.0 + nf * 4.0) / 1e6, mb_bwd = (nf * 4.0 + n * 12.0 + n8f * 4.0) / 1e6;
    printf("\ntrilinear N = %d, F = %d (forward moves %.0f MB, backward %.0f MB; validated on %d points)\n",
           n, f, mb_fwd, mb_bwd, n < VX_CHECK_N ? n : VX_CHECK_N);
    printf("  %-9s %-28s %9s %9s %8s\n", "pass", "version", "ms", "GB/s", "of copy");
    for (int bw = 0; bw < 2; bw++) {
        int nv = bw ? VX_TRILINEAR_BWD_VERSIONS : VX_TRILINEAR_FWD_VERSIONS;
        for (int v = 1; v <= nv; v++) {
            double ms;
            x.version = v;
            x.backward = bw;
            if (vx_cuda_zero(bw ? (void *)x.dfeats : (void *)x.out, (bw ? n8f : nf) * 4) || vx__cell(&x) ||
                vx_cuda_sync() || vx__cell_validate(&x) || vx__time(b, vx__cell, &x, &ms))
                goto done;
            double gbs = (bw ? mb_bwd : mb_fwd) / 1e3 / (ms * 1e-3);
            printf("  %-9s %-28s %9.4f %9.0f %7.1f%%\n", bw ? "backward" : "forward",
                   vx_trilinear_version_name(bw, v), ms, gbs, 100.0 * gbs / b->copy_gbs);
        }
    }
    rc = 0;
done:
    vx_cuda_free(x.feats); vx_cuda_free(x.dfeats); vx_cuda_free(x.pts); vx_cuda_free(x.out); vx_cuda_free(x.dout);
    return rc;
}

/* ---- grid gather / scatter ---------------------------------------------------------- */

typedef struct {
    vx_grid_desc g;
    void *grid, *dgrid;
    int half, m, with_bwd;
    float *pts, *out;
    size_t grid_bytes;
} vx_gather_ctx;

static int vx__gather(void *c) {
    vx_gather_ctx *x = c;
    if (vx_grid_gather_cuda(&x->g, x->grid, x->half, x->pts, x->m, x->out)) return -1;
    if (!x->with_bwd) return 0;
    /* the backward zeroes the gradient grid, as grid_sample's backward does */
    if (vx_cuda_zero(x->dgrid, x->grid_bytes)) return -1;
    return vx_grid_scatter_cuda(&x->g, x->out, x->pts, x->m, x->dgrid, x->half);
}

static int vx__gather_validate(vx_gather_ctx *x, const float *d_grid32) {
    int nchk = x->m < 4096 ? x->m : 4096;
    size_t cnt = (size_t)x->g.nx * x->g.ny * x->g.nz * x->g.nc;
    float *grid = malloc(cnt * 4), *pts = malloc((size_t)nchk * 12), *ref = malloc((size_t)nchk * x->g.nc * 4);
    float *got = malloc((size_t)nchk * x->g.nc * 4);
    int rc = -1;
    if (!grid || !pts || !ref || !got) { vx_error("bench: out of memory for validation"); goto done; }
    if (vx_cuda_download(grid, d_grid32, cnt * 4) || vx_cuda_download(pts, x->pts, (size_t)nchk * 12) ||
        vx_grid_gather_cuda(&x->g, x->grid, x->half, x->pts, x->m, x->out) ||
        vx_cuda_download(got, x->out, (size_t)nchk * x->g.nc * 4))
        goto done;
    if (x->half)
        for (size_t i = 0; i < cnt; i++) grid[i] = vx_half_to_float(vx_float_to_half(grid[i]));
    vx_grid_gather_cpu(&x->g, grid, pts, nchk, ref);
    for (size_t i = 0; i < (size_t)nchk * x->g.nc; i++)
        if (!(fabsf(got[i] - ref[i]) <= 1e-5f + 1e-5f * fabsf(ref[i]))) {
            vx_error("bench: grid gather (%s, C = %d) differs from the CPU at [%zu]: %g vs %g",
                     x->half ? "f16" : "f32", x->g.nc, i, got[i], ref[i]);
            goto done;
        }
    rc = 0;
done:
    free(grid); free(pts); free(ref); free(got);
    return rc;
}

/* Our gather for a 256^3 grid at m random points, C channels; fills ms[f32/f16][fwd, fwd+bwd]. */
static int vx__bench_gather(vx_bench *b, int res, int nc, int m, double ms[2][2]) {
    vx_gather_ctx x = {.m = m};
    x.g.nx = x.g.ny = x.g.nz = res;
    x.g.nc = nc;
    /* world [-1, 1]^3, align_corners: index = (w + 1) / 2 * (res - 1) */
    float s = 0.5f * (res - 1);
    float w2i[12] = {s, 0, 0, s, 0, s, 0, s, 0, 0, s, s};
    memcpy(x.g.w2i, w2i, sizeof w2i);
    size_t cnt = (size_t)res * res * res * nc;
    float *grid32 = NULL;
    void *grid16 = NULL;
    int rc = -1;
    if (vx_cuda_alloc((void **)&grid32, cnt * 4, "grid") || vx_cuda_alloc(&grid16, cnt * 2, "half grid") ||
        vx_cuda_alloc(&x.dgrid, cnt * 4, "grid gradient") || vx_cuda_alloc((void **)&x.pts, (size_t)m * 12, "points") ||
        vx_cuda_alloc((void **)&x.out, (size_t)m * nc * 4, "gathered values"))
        goto done;
    unsigned seed = (unsigned)time(NULL) + nc;
    if (vx_cuda_fill_uniform(grid32, cnt, seed, -1, 1) || vx_cuda_to_half(grid32, grid16, cnt) ||
        vx_cuda_fill_uniform(x.pts, (size_t)m * 3, seed + 1, -1, 1))
        goto done;
    for (int h = 0; h < 2; h++) {
        x.half = h;
        x.grid = h ? grid16 : (void *)grid32;
        x.grid_bytes = cnt * (h ? 2 : 4);
        if (vx__gather_validate(&x, grid32)) goto done;
        for (int bw = 0; bw < 2; bw++) {
            x.with_bwd = bw;
            if (vx__time(b, vx__gather, &x, &ms[h][bw])) goto done;
        }
    }
    rc = 0;
done:
    vx_cuda_free(grid32); vx_cuda_free(grid16); vx_cuda_free(x.dgrid); vx_cuda_free(x.pts); vx_cuda_free(x.out);
    return rc;
}

/* PyTorch's grid_sample on the same sizes, through tools/bench_grid_sample.py: one line
 * per channel count, "C fwd_ms fwdbwd_ms". Returns 0 and fills t, or -1 (not available). */
static int vx__torch(int res, int m, double t[2][2]) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 tools/bench_grid_sample.py --res %d --points %d 2>&1", res, m);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        int c;
        double a, bb;
        if (sscanf(line, "grid_sample C=%d fwd_ms=%lf fwdbwd_ms=%lf", &c, &a, &bb) == 3) {
            int k = c == 4 ? 0 : c == 28 ? 1 : -1;
            if (k >= 0) { t[k][0] = a; t[k][1] = bb; got |= 1 << k; }
        } else {
            fprintf(stderr, "  torch: %s", line);
        }
    }
    int st = pclose(p);
    return st == 0 && got == 3 ? 0 : -1;
}

int vx_bench_kernels(int argc, char **argv) {
    int quick = 0, torch = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-torch")) torch = 0;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: voxray bench kernels [--quick] [--no-torch]\n"
                   "Time every trilinear version (N=80000 F=256, N=2^21 F=32) and the 256^3 grid\n"
                   "gather/scatter against PyTorch's grid_sample (tools/bench_grid_sample.py).\n"
                   "--quick uses small sizes (a smoke test).\n");
            return 0;
        } else {
            fprintf(stderr, "voxray: bench kernels: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    char info[256];
    if (!vx_cuda_probe(info, sizeof info)) {
        fprintf(stderr, "voxray: bench kernels: no usable CUDA device (%s)\n", info);
        return 1;
    }
    vx_bench b = {.reps = quick ? 3 : 20};
    if (vx_bench_copy_bandwidth(&b.copy_gbs) || vx_cuda_timer_create(&b.timer)) goto fail;
    printf("device: %s\n", info);
    printf("device-to-device copy: %.0f GB/s (bytes read + written); kernels below as a fraction of it\n",
           b.copy_gbs);
    if (vx__bench_cell(&b, quick ? 8000 : 80000, 256) || vx__bench_cell(&b, quick ? 1 << 16 : 1 << 21, 32)) goto fail;
    int res = quick ? 64 : 256, m = quick ? 1 << 16 : 1 << 22;
    double ms[2][2][2], t[2][2];
    int cs[2] = {4, 28};
    for (int k = 0; k < 2; k++)
        if (vx__bench_gather(&b, res, cs[k], m, ms[k])) goto fail;
    int have_torch = torch && vx__torch(res, m, t) == 0;
    printf("\ngrid gather, %d^3 grid, %d random points (world [-1,1]^3, align corners)\n", res, m);
    printf("  %-4s %-6s %10s %12s", "C", "store", "fwd ms", "fwd+bwd ms");
    if (have_torch) printf(" %12s %12s", "vs torch fwd", "fwd+bwd");
    printf("\n");
    for (int k = 0; k < 2; k++)
        for (int h = 0; h < 2; h++) {
            printf("  %-4d %-6s %10.3f %12.3f", cs[k], h ? "f16" : "f32", ms[k][h][0], ms[k][h][1]);
            if (have_torch) printf(" %11.2fx %11.2fx", t[k][0] / ms[k][h][0], t[k][1] / ms[k][h][1]);
            printf("\n");
        }
    if (have_torch)
        for (int k = 0; k < 2; k++)
            printf("  torch grid_sample C=%d float32 (N,C,D,H,W): fwd %.3f ms, fwd+bwd %.3f ms\n", cs[k], t[k][0], t[k][1]);
    else if (torch)
        printf("  (PyTorch grid_sample not measured: tools/bench_grid_sample.py failed or torch is absent)\n");
    vx_cuda_timer_destroy(b.timer);
    return 0;
fail:
    fprintf(stderr, "voxray: bench kernels: %s\n", vx_errmsg());
    vx_cuda_timer_destroy(b.timer);
    return 1;
}
#endif
