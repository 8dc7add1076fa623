/* fit_emu.h - what the emulated fit-kernel tests (tests/emu/test_fit_*_emu.cpp) share:
 * the CUDA emulator and the fit headers, the kernels inside namespace vx_emu (fit.o, from
 * nvcc, defines host stubs of the same names, and the two must not meet at link time),
 * random rays, the outputs of one emulated step, and the tolerant comparison. */
#ifndef VX_FIT_EMU_H
#define VX_FIT_EMU_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include "emu/cuda_emu.h"
#include "camera.h"
#include "fit.h"
#include "fit_march.h"
#include "load.cuh"
#include "mlp.h"
#include "vx_common.h"

namespace vx_emu {
#include "fit_mlp_batch.cuh"
} // namespace vx_emu
using namespace vx_emu;

extern "C" {
#include <cmocka.h>
}

#include <algorithm>
#include <ctime>
#include <vector>

#define OK(call) do { if ((call) != 0) fail_msg("%s: %s", #call, vx_errmsg()); } while (0)

static uint64_t g_state; /* seeded by vx_emu_seed (VX_SEED replays) */
static double uni(double lo, double hi) { return lo + (hi - lo) * vx_rand01(&g_state); }

/* Bricked storage for f: the voxels of brick (0, 0, 0) die first, so the null brick
 * serves it, then the identity resample makes the bricks and keeps every value. */
static inline void emu_make_bricked(vx_fit_model *f) {
    for (int z = 0; z < 8 && z < f->nz; z++)
        for (int y = 0; y < 8 && y < f->ny; y++)
            for (int x = 0; x < 8 && x < f->nx; x++) {
                size_t iv = ((size_t)z * f->ny + y) * f->nx + x;
                f->alive[iv] = 0;
                memset(f->data + iv * f->nc, 0, f->nc * sizeof(float));
            }
    f->sparse_fit = 1;
    int res[3] = {f->nx, f->ny, f->nz};
    OK(vx_fit_resample_cpu(f, f->box_lo, f->box_hi, res));
    assert_true(f->table && f->table[0] == 0);
}

static inline void random_batch(vx_fit_batch *b, int n) {
    OK(vx_fit_batch_alloc(b, n));
    for (int r = 0; r < n; r++) {
        double az = uni(0, 6.283), el = uni(-1.2, 1.2), p[3] = {uni(-0.5, 0.5), uni(-0.5, 0.5), uni(-0.5, 0.5)};
        double e[3] = {p[0] + 4 * cos(el) * sin(az), p[1] + 4 * sin(el), p[2] + 4 * cos(el) * cos(az)};
        double d[3] = {p[0] - e[0], p[1] - e[1], p[2] - e[2]}, l = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        for (int a = 0; a < 3; a++) {
            b->origin[3 * r + a] = (float)e[a];
            b->dir[3 * r + a] = (float)(d[a] / l);
            b->target[3 * r + a] = (float)vx_rand01(&g_state);
        }
    }
}

/* What a kernel step produced: colours, loss, gradients, max weights. */
struct out {
    std::vector<float> rgb, grad, wgrad, wmax;
    double loss = 0.0;
    int passes = 0, slot_passes = 0; /* passes; of them, gather version 2's (one march) */
    int most = 0;                    /* the most samples a ray had (in the pass that took it) */
};

static inline void out_init(out *o, const vx_fit_model *f, int n) {
    size_t nv = vx_fit_storage_voxels(f);
    o->rgb.assign((size_t)3 * n, -1.0f);
    o->grad.assign(nv * f->nc + 4, 0.0f);
    o->wgrad.assign(f->mlp_layers ? (size_t)vx_mlp_weight_count(f->mlp_layers) : 0, 0.0f);
    o->wmax.assign(nv, 0.0f);
}

static inline vx_fit_ray_src host_src(const vx_fit_batch *b) {
    vx_fit_ray_src src;
    memset(&src, 0, sizeof src);
    src.origin = b->origin; src.dir = b->dir; src.target = b->target;
    src.bg = b->random_bg ? b->bg : NULL;
    return src;
}

/* Every ray of b against its own random background (fit --random-bg as a host batch
 * carries it; the targets stay as drawn). */
static inline void random_backgrounds(vx_fit_batch *b) {
    b->random_bg = 1;
    for (int i = 0; i < 3 * b->n; i++) b->bg[i] = (float)vx_rand01(&g_state);
}

/* max |a - b| <= tol * max|a| + abs_tol, but for at most `allowed` entries (a hidden unit
 * within rounding of relu's kink can switch on one side only). */
static void compare_most(const float *a, const float *b, size_t n, double tol, double abs_tol, size_t allowed,
                         const char *what) {
    double scale = 0, worst = 0;
    size_t bad = 0, at = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(a[i]));
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (e > worst) { worst = e; at = i; }
        if (e > tol * scale + abs_tol) bad++;
    }
    print_message("%s: max diff %.3g (scale %.3g), %zu of %zu beyond tolerance\n", what, worst, scale, bad, n);
    if (bad > allowed) fail_msg("%s: %zu entries differ (worst: CPU %.9g kernel %.9g at %zu)", what, bad, a[at], b[at], at);
}

static void vx_emu_seed(void) {
    const char *s = getenv("VX_SEED");
    g_state = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    print_message("seed %llu (VX_SEED replays)\n", (unsigned long long)g_state);
}

#endif
