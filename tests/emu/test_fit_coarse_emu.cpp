/* test_fit_coarse_emu.cpp - the coarse levels' CUDA kernels (kernels/fit_coarse.cuh: the
 * per-brick restriction, the coarse Adam step, the prolongation of all levels) run on the CPU through
 * tests/emu/cuda_emu.h, launched as fit.cu does (both versions of the restriction), and
 * compared with fit_coarse.c (itself
 * checked against double precision in test_fit_coarse.c): random models of every channel
 * count, dense and bricked, every other one with --coarse-decay's blend toward the levels'
 * values, some with --coarse-density (the levels carry channel 0 at its own step size). tests/gpu/test_fit_gpu.c checks the same on the device. */
#include "emu/fit_emu.h"
#include "fit_coarse.h"

namespace vx_emu {
#include "fit_coarse.cuh"
} // namespace vx_emu

#include "fit_coarse_fixture.h"

static void check(int bricked) {
    for (int trial = 0; trial < 5; trial++) {
        vx_fit_model f;
        fc_random_model(&f, bricked, trial % 3 == 1, uni); /* trials 1 and 4: --coarse-density */
        int nc = f.nc, nl = f.nlevels, ch0 = vx_fit_coarse_ch0(&f); /* 0: --coarse-density */
        size_t nv = vx_fit_storage_voxels(&f);
        std::vector<float> grad(f.grad, f.grad + nv * nc), data(f.data, f.data + nv * nc);
        vx_fit_index L;
        vx_fit_index_of(&f, &L);
        /* restriction, launched per active level as vx_fit_coarse_restrict_cuda does */
        int tiles[3] = {(f.nx + 7) / 8, (f.ny + 7) / 8, (f.nz + 7) / 8};
        unsigned blocks = f.nslots ? (unsigned)(f.nslots - 1) : (unsigned)(tiles[0] * tiles[1] * tiles[2]);
        std::vector<float> cgrad[VX_FIT_LEVELS], cgrad2[VX_FIT_LEVELS];
        vx_fit_coarse_map cm[VX_FIT_LEVELS];
        for (int l = 0; l < nl; l++) {
            size_t nco = vx_fit_coarse_entries(&f, l);
            cgrad[l].assign(nco, 0.0f);
            cgrad2[l].assign(nco, 0.0f);
            if (!vx_fit_coarse_active(&f, l, NULL)) continue;
            OK(vx_fit_coarse_map_of(&f, l, &cm[l]));
            vx_emu_launch(dim3(blocks), dim3(512), vx_fit_coarse_restrict_kernel, (const float *)grad.data(),
                          (const unsigned char *)f.alive, L, nc, ch0, cm[l], tiles[0], tiles[1], cgrad[l].data());
            vx_emu_launch(dim3(blocks), dim3(512), vx_fit_coarse_restrict2_kernel, (const float *)grad.data(),
                          (const unsigned char *)f.alive, L, nc, ch0, cm[l], tiles[0], tiles[1], cgrad2[l].data());
        }
        OK(vx_fit_coarse_restrict_cpu(&f));
        for (int l = 0; l < nl; l++) {
            size_t nco = cgrad[l].size();
            compare_most(f.lv[l].grad, cgrad[l].data(), nco, 1e-5, 1e-6, 0, "coarse gradient (version 1)");
            compare_most(f.lv[l].grad, cgrad2[l].data(), nco, 1e-5, 1e-6, 0, "coarse gradient (version 2)");
        }
        /* Adam at a later step: the first level started at step 1 with moments from earlier
         * steps, the others start now (their bias corrections count from 1); then the
         * prolongation of every active level's step in one launch */
        vx_fit_hparams h;
        vx_fit_hparams_default(&h);
        f.t = 3;
        f.lv[0].t0 = 0;
        float lr = (float)uni(0.01, 0.1), lr_sigma = (float)uni(0.2, 0.6);
        unsigned nch = f.coarse_density ? (unsigned)vx_fit_coarse_nch(&f) : 0u; /* as vx_fit_coarse_apply_cuda */
        std::vector<float> mom[VX_FIT_LEVELS], var[VX_FIT_LEVELS], step[VX_FIT_LEVELS], val[VX_FIT_LEVELS];
        vx_fit_coarse_steps S;
        memset(&S, 0, sizeof S);
        if (trial % 2) { /* --coarse-decay: levels keep values from earlier steps */
            f.coarse_decay = (float)uni(0.01, 0.3);
            S.lam = f.coarse_decay;
            for (int l = 0; l < nl; l++) {
                size_t nco = vx_fit_coarse_entries(&f, l);
                f.lv[l].val = (float *)calloc(nco, sizeof(float));
                assert_non_null(f.lv[l].val);
                for (size_t j = 0; j < nco; j++) f.lv[l].val[j] = (float)uni(-1, 1);
            }
        }
        for (int l = 0; l < nl; l++) {
            size_t nco = vx_fit_coarse_entries(&f, l);
            if (f.lv[l].val) val[l].assign(f.lv[l].val, f.lv[l].val + nco);
            if (l == 0)
                for (size_t j = 0; j < nco; j++) {
                    f.lv[l].m[j] = (float)uni(-0.1, 0.1);
                    f.lv[l].v[j] = (float)uni(0, 0.02);
                }
            mom[l].assign(f.lv[l].m, f.lv[l].m + nco);
            var[l].assign(f.lv[l].v, f.lv[l].v + nco);
            step[l].assign(f.lv[l].grad, f.lv[l].grad + nco);
            if (!vx_fit_coarse_active(&f, l, NULL)) continue;
            double t = l == 0 ? 3.0 : 1.0;
            float bc1 = (float)(1.0 - pow(h.beta1, t)), bc2 = (float)(1.0 - pow(h.beta2, t));
            float *vp = f.lv[l].val ? val[l].data() : NULL;
            if (vp)
                vx_emu_launch(dim3((unsigned)((nco + 255) / 256)), dim3(256), vx_fit_coarse_adam_kernel<true>,
                              step[l].data(), mom[l].data(), var[l].data(), vp, nco, lr, nch, lr_sigma, h.beta1, h.beta2,
                              h.eps, bc1, bc2);
            else
                vx_emu_launch(dim3((unsigned)((nco + 255) / 256)), dim3(256), vx_fit_coarse_adam_kernel<false>,
                              step[l].data(), mom[l].data(), var[l].data(), vp, nco, lr, nch, lr_sigma, h.beta1, h.beta2,
                              h.eps, bc1, bc2);
            S.m[S.n] = cm[l];
            S.val[S.n] = vp;
            S.step[S.n++] = step[l].data();
        }
        std::vector<unsigned> active;
        for (size_t v = 0; v < nv; v++)
            if (f.alive[v]) active.push_back((unsigned)v);
        int gw = nc % 4 == 0 ? 4 : 1, ng = nc / gw; /* as vx_fit_coarse_apply_cuda */
        unsigned nt = (unsigned)(active.size() * ng);
        /* the instantiation vx_fit_coarse_apply_cuda launches, through its own picker */
        vx_fit_coarse_prolong_fn prolong = vx_fit_coarse_prolong_pick(S.lam, !ch0);
        vx_emu_launch(dim3((nt + 255) / 256), dim3(256), prolong, data.data(), (const unsigned *)active.data(), nt, ng, gw, L, S);
        OK(vx_fit_coarse_apply_cpu(&f, &h, lr, lr_sigma));
        for (int l = 0; l < nl; l++) {
            size_t nco = mom[l].size();
            compare_most(f.lv[l].m, mom[l].data(), nco, 1e-6, 1e-9, 0, "coarse first moment");
            compare_most(f.lv[l].v, var[l].data(), nco, 1e-6, 1e-12, 0, "coarse second moment");
            if (f.lv[l].val) compare_most(f.lv[l].val, val[l].data(), nco, 1e-6, 1e-6, 0, "coarse level value");
        }
        compare_most(f.data, data.data(), nv * nc, 1e-6, 1e-6, 0, "parameters after the coarse step");
        vx_fit_model_free(&f);
    }
}

static void test_coarse_kernels_dense(void **state) { (void)state; check(0); }
static void test_coarse_kernels_bricked(void **state) { (void)state; check(1); }

int main(void) {
    vx_emu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coarse_kernels_dense),
        cmocka_unit_test(test_coarse_kernels_bricked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
