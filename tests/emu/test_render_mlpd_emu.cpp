/* test_render_mlpd_emu.cpp - the mlp decoder's deferred colour (kernels/render_mlpd.cuh: the
 * count and write marches, the tiled network, the per-pixel resolve) run on the CPU through
 * tests/emu/cuda_emu.h, launched as render.cu's vx__launch_mlpd does, and compared with the
 * CPU renderer (render_cpu.c): random mlp grids and weights, 1 and 2 hidden layers, dense
 * and sparse (apron blocks) float32 storage, with and without empty-space skipping and
 * jitter, a sort-last piece, and the network seeing the reflected direction. tests/gpu/test_render_cuda.c checks the same on the device. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include "emu/cuda_emu.h"
#include "camera.h"
#include "decode.h"
#include "load.cuh"
#include "march.h"
#include "mlp.h"
#include "render.h"
#include "sparse.h"
#include "sparse_apron.h"
#include "sparse_grid.h"
#include "volume.h"
#include "vx_common.h"

namespace vx_emu { /* render.o, from nvcc, holds host stubs of the kernels' names */
#include "render_mlpd.cuh"
float4 vx_mlpb_smem4[VX_MLPB_FLOATS / 4 + 4]; /* the network kernel's dynamic shared memory */
} // namespace vx_emu
using namespace vx_emu;

extern "C" {
#include <cmocka.h>
}

#include <cmath>
#include <ctime>
#include <vector>

#define OK(call) do { if ((call) != 0) fail_msg("%s: %s", #call, vx_errmsg()); } while (0)

static uint64_t g_state; /* VX_SEED replays */
static float uni(float lo, float hi) { return lo + (hi - lo) * (float)vx_rand01(&g_state); }

/* A random mlp grid: a few soft balls of density (negative outside), features in [-1, 1]. */
static void random_grid(vx_grid *g, int nx, int ny, int nz) {
    memset(g, 0, sizeof *g);
    OK(vx_grid_alloc(g, nx, ny, nz, VX_MLP_CHANNELS, "random mlp grid"));
    g->align_corners = 1;
    float c[3][3], r[3];
    for (int b = 0; b < 3; b++) {
        c[b][0] = uni(0.25f, 0.75f) * nx; c[b][1] = uni(0.25f, 0.75f) * ny; c[b][2] = uni(0.25f, 0.75f) * nz;
        r[b] = uni(0.15f, 0.3f) * nx;
    }
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++) {
                float *v = g->data + (((size_t)z * ny + y) * nx + x) * VX_MLP_CHANNELS, d = -1.0f;
                for (int b = 0; b < 3; b++)
                    d = fmaxf(d, r[b] - sqrtf((x - c[b][0]) * (x - c[b][0]) + (y - c[b][1]) * (y - c[b][1]) +
                                              (z - c[b][2]) * (z - c[b][2])));
                v[0] = d > 0 ? d * 0.3f + uni(0, 0.05f) : -uni(0, 1);
                for (int k = 1; k < VX_MLP_CHANNELS; k++) v[k] = uni(-1, 1);
            }
}

/* Index space is world space; the camera looks at the lattice's centre from a random side. */
static void setup(vx_march_params *m, vx_camera *cam, const vx_grid *g, int occ_b, unsigned jitter, int w, int h) {
    memset(m, 0, sizeof *m);
    m->nx = g->nx; m->ny = g->ny; m->nz = g->nz; m->nc = g->nc;
    m->w2i[0] = m->w2i[5] = m->w2i[10] = 1.0f;
    m->box_hi[0] = g->nx - 1; m->box_hi[1] = g->ny - 1; m->box_hi[2] = g->nz - 1;
    m->dt = uni(0.3f, 0.6f);
    m->bg[0] = 1.0f; m->bg[1] = 0.9f; m->bg[2] = 0.8f;
    m->stop = occ_b ? 1e-3f : 0.0f;
    m->jitter_seed = jitter;
    m->occ_b = occ_b;
    int n[3] = {g->nx, g->ny, g->nz};
    for (int a = 0; a < 3; a++) m->occ_n[a] = occ_b ? (n[a] - 1) / occ_b + 1 : 0;
    double ctr[3] = {0.5 * (g->nx - 1), 0.5 * (g->ny - 1), 0.5 * (g->nz - 1)}, up[3] = {0, 0, 1};
    vx_vec3 dir = vx_norm(vx_v3(uni(-1, 1), uni(0.3f, 1), uni(-1, 1)));
    double eye[3] = {ctr[0] + 2.0 * g->nx * dir.x, ctr[1] + 2.0 * g->nx * dir.y, ctr[2] + 2.0 * g->nx * dir.z};
    OK(vx_camera_look_at(cam, eye, ctr, up, 34.0, w, h));
}

/* render.cu's vx__launch_mlpd on the emulator: count, size, write, network (tc: its hidden
 * layers on the emulated tensor cores, render --mlp-tensor-cores), resolve. */
template <class S, bool P>
static void deferred(const vx_march_params &m, const vx_camera &cam, const S &store, const unsigned char *occ,
                     const float *wts, int layers, std::vector<float> &rgb, std::vector<float> &alpha,
                     std::vector<float> &depth, unsigned long long counters[3], bool tc = false) {
    size_t npix = (size_t)cam.width * cam.height;
    rgb.assign(npix * 3, -1.0f);
    alpha.assign(npix, -1.0f);
    depth.assign(npix, -1.0f);
    std::vector<unsigned long long> start(npix, ~0ull);
    std::vector<int> n(npix, -1);
    counters[0] = counters[1] = counters[2] = 0;
    dim3 blocks((unsigned)(cam.width + 7) / 8, (unsigned)(cam.height + 7) / 8), threads(8, 8);
    vx_emu_launch(blocks, threads, vx_mlpd_count_kernel<S, P>, m, cam, store, occ, rgb.data(), alpha.data(),
                  depth.data(), counters, start.data(), n.data());
    unsigned long long kept = counters[2], total = 0;
    for (size_t p = 0; p < npix; p++) { /* every pixel got a place, the places tile [0, kept) */
        assert_true(n[p] >= 0);
        total += (unsigned long long)n[p];
        if (n[p]) assert_true(start[p] + (unsigned long long)n[p] <= kept);
    }
    assert_true(total == kept);
    print_message("  %llu samples kept of %llu marched\n", kept, counters[0]);
    if (!kept) return;
    std::vector<float> x(kept * 32, NAN), w(kept, NAN);
    std::vector<float4> col(kept);
    auto write = vx_decoder_mlp_reflect(&m.dec) ? vx_mlpd_write_kernel<S, P, true> : vx_mlpd_write_kernel<S, P, false>;
    vx_emu_launch(blocks, threads, write, m, cam, store, occ, (const unsigned long long *)start.data(), n.data(),
                  x.data(), w.data());
    unsigned long long tiles = (kept + VX_MLPB_TILE - 1) / VX_MLPB_TILE;
    unsigned nb = (unsigned)(tiles < 3 ? tiles : 3); /* persistent blocks: several tiles each */
    auto net = layers == 1 ? (tc ? vx_mlpd_network_kernel<1, true> : vx_mlpd_network_kernel<1, false>)
                           : (tc ? vx_mlpd_network_kernel<2, true> : vx_mlpd_network_kernel<2, false>);
    vx_emu_launch(dim3(nb), dim3(VX_MLPB_THREADS), net, wts, (const float *)x.data(), col.data(), kept);
    vx_emu_launch(dim3((unsigned)((npix + 255) / 256)), dim3(256), vx_mlpd_resolve_kernel, npix,
                  (const unsigned long long *)start.data(), (const int *)n.data(), (const float *)w.data(),
                  (const float4 *)col.data(), rgb.data());
}

static void compare(const char *what, const vx_frame *ref, const std::vector<float> &rgb,
                    const std::vector<float> &alpha, const std::vector<float> &depth,
                    const unsigned long long counters[3], double rgb_tol = 2e-5) {
    size_t np = (size_t)ref->width * ref->height;
    double er = 0, ea = 0, ed = 0, dmax = 1e-6;
    for (size_t i = 0; i < np; i++) {
        for (int c = 0; c < 3; c++) er = fmax(er, fabs((double)rgb[3 * i + c] - ref->rgb[3 * i + c]));
        ea = fmax(ea, fabs((double)alpha[i] - ref->alpha[i]));
        ed = fmax(ed, fabs((double)depth[i] - ref->depth[i]));
        dmax = fmax(dmax, fabs(ref->depth[i]));
        if (std::isnan(rgb[3 * i]) || std::isnan(alpha[i])) fail_msg("%s: NaN at pixel %zu", what, i);
    }
    print_message("%-36s rgb max %.2e  opacity %.2e  depth rel %.2e  samples %llu / %lld  hit %llu / %lld\n", what,
                  er, ea, ed / dmax, counters[0], ref->samples, counters[1], ref->rays_hit);
    /* the same march and the same sums in the same order: float rounding only (the
     * emulator's expf and FMA contraction may differ from the CPU build's); on the tensor
     * cores the hidden layers' operands are rounded to TF32 (rgb_tol) */
    if (!(er <= rgb_tol)) fail_msg("%s: colour %g away from the CPU renderer", what, er);
    if (!(ea <= 1e-5 && ed / dmax <= 1e-5)) fail_msg("%s: opacity %g / depth %g away from the CPU", what, ea, ed / dmax);
    assert_true((long long)counters[0] == ref->samples);
    assert_true((long long)counters[1] == ref->rays_hit);
}

static void test_deferred(void **state) {
    (void)state;
    const int w = 24, h = 20;
    int cases = 0;
    for (int layers = 1; layers <= 2; layers++)
        for (int variant = 0; variant < 5; variant++) { /* 0: plain, 1: skipping + stop + jitter, 2: a piece,
                                                          * 3: the reflected direction, with skipping, 4: the
                                                          * view direction with the reflected one */
            vx_grid g;
            random_grid(&g, 10 + (int)uni(0, 4), 11 + (int)uni(0, 4), 9 + (int)uni(0, 4));
            float wts[VX_MLP_MAX_WEIGHTS];
            vx_mlp_init(layers, (unsigned)(vx_rand01(&g_state) * 1e6) + 7u, wts);
            for (int i = 0; i < vx_mlp_weight_count(layers); i++) wts[i] *= 3.0f; /* colours across [0, 1] */
            vx_march_params m;
            vx_camera cam;
            setup(&m, &cam, &g, variant == 1 || variant >= 3 ? 4 : 0, variant == 1 ? 5u + (unsigned)layers : 0u, w, h);
            m.dec.type = VX_DEC_MLP;
            m.dec.density_act = VX_DACT_RELU;
            m.dec.color_act = VX_CACT_SIGMOID;
            m.dec.density_scale = 2.0f;
            vx_decoder_set_mlp(&m.dec, layers, wts);
            m.dec.shade = variant == 3 ? VX_MLP_DIR_REFLECTED : variant == 4 ? VX_MLP_DIR_BOTH : VX_MLP_DIR_VIEW;
            if (variant == 2) { /* sort-last: only the samples in the lower half of x */
                m.own = 1;
                m.own_lo[0] = 0; m.own_lo[1] = 0; m.own_lo[2] = 0;
                m.own_hi[0] = 0.5f * (g.nx - 1); m.own_hi[1] = (float)g.ny; m.own_hi[2] = (float)g.nz;
            }
            unsigned char *occ = NULL;
            if (m.occ_b) {
                int dims[3];
                OK(vx_occupancy_build_cpu(&g, &m.dec, m.occ_b, &occ, dims));
            }
            vx_volume v;
            memset(&v, 0, sizeof v);
            v.mp = m;
            v.data = g.data;
            v.occ = occ;
            vx_frame ref;
            OK(vx_frame_alloc(&ref, w, h, 1));
            OK(vx_render_cpu(&v, &cam, NULL, &ref));
            std::vector<float> rgb, alpha, depth;
            unsigned long long counters[3];
            char what[96];
            snprintf(what, sizeof what, "mlp %d layer(s), %s, dense", layers,
                     variant == 0 ? "plain" : variant == 1 ? "skip+stop+jitter" : variant == 2 ? "piece"
                     : variant == 3 ? "reflected" : "view+reflected");
            size_t sy = (size_t)g.nx * g.nc;
            vx_dense_store<float> ds = {g.data, sy, sy * g.ny, (size_t)g.nc};
            if (variant == 2) deferred<vx_dense_store<float>, true>(m, cam, ds, occ, wts, layers, rgb, alpha, depth, counters);
            else deferred<vx_dense_store<float>, false>(m, cam, ds, occ, wts, layers, rgb, alpha, depth, counters);
            compare(what, &ref, rgb, alpha, depth, counters);
            if (variant >= 3) { /* the reflection changes the colours: the view direction's differ */
                vx_frame view;
                OK(vx_frame_alloc(&view, w, h, 1));
                v.mp.dec.shade = 0;
                OK(vx_render_cpu(&v, &cam, NULL, &view));
                double moved = 0.0;
                for (size_t i = 0; i < rgb.size(); i++) moved = fmax(moved, fabs((double)view.rgb[i] - rgb[i]));
                print_message("  %s against the view direction: rgb max %.2e\n", vx_mlp_dir_name(m.dec.shade), moved);
                assert_true(moved > 1e-2);
                vx_frame_free(&view);
            }
            if (variant < 2) { /* the network on the (emulated) tensor cores: the same march, TF32 colours */
                std::vector<float> rgb_tc, alpha_tc, depth_tc;
                unsigned long long counters_tc[3];
                deferred<vx_dense_store<float>, false>(m, cam, ds, occ, wts, layers, rgb_tc, alpha_tc, depth_tc,
                                                      counters_tc, true);
                char w2[128];
                snprintf(w2, sizeof w2, "%s, tensor cores", what);
                compare(w2, &ref, rgb_tc, alpha_tc, depth_tc, counters_tc, 1e-3);
                assert_true(alpha_tc == alpha && depth_tc == depth); /* the march does not change */
                double moved = 0.0;
                for (size_t i = 0; i < rgb.size(); i++) moved = fmax(moved, fabs((double)rgb_tc[i] - rgb[i]));
                print_message("  tensor cores against FP32: rgb max %.2e\n", moved);
                assert_true(moved > 0.0); /* the TF32 path ran */
            }
            /* the same grid as sparse bricks, read through the apron blocks the upload builds */
            vx_grid sg;
            OK(vx_sparse_from_dense(&g, &m.dec, 0.0f, &sg));
            vx_apron a;
            OK(vx_apron_plan(sg.sparse, g.nx, g.ny, g.nz, VX_MLP_CHANNELS, &a, "emulated upload"));
            std::vector<float> pool((a.nblocks + 1) * VX_APRON_VOXELS * VX_MLP_CHANNELS);
            vx_apron_fill_cpu(sg.sparse, &a, 0, a.nblocks + 1, pool.data());
            vx_apron_store<float> as = {a.table, pool.data(), {sg.sparse->bn[0], sg.sparse->bn[1], sg.sparse->bn[2]}};
            snprintf(what, sizeof what, "mlp %d layer(s), %s, sparse", layers,
                     variant == 0 ? "plain" : variant == 1 ? "skip+stop+jitter" : variant == 2 ? "piece"
                     : variant == 3 ? "reflected" : "view+reflected");
            if (variant == 2) deferred<vx_apron_store<float>, true>(m, cam, as, occ, wts, layers, rgb, alpha, depth, counters);
            else deferred<vx_apron_store<float>, false>(m, cam, as, occ, wts, layers, rgb, alpha, depth, counters);
            compare(what, &ref, rgb, alpha, depth, counters);
            vx_apron_free(&a);
            vx_grid_free(&sg);
            vx_frame_free(&ref);
            free(occ);
            vx_grid_free(&g);
            cases++;
        }
    assert_int_equal(cases, 10);
}

int main(void) {
    const char *s = getenv("VX_SEED");
    g_state = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    print_message("seed %llu (VX_SEED replays)\n", (unsigned long long)g_state);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_deferred)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
