/* test_fit_coarse_emu.cpp - the coarse level's CUDA kernels (kernels/fit_coarse.cuh: the
 * per-brick restriction, the coarse Adam step, the prolongation) run on the CPU through
 * tests/emu/cuda_emu.h, launched as fit.cu does (both versions of the restriction), and
 * compared with fit_coarse.c (itself
 * checked against double precision in test_fit_coarse.c): random models of every channel
 * count, dense and bricked. tests/gpu/test_fit_gpu.c checks the same on the device. */
#include "emu/fit_emu.h"
#include "fit_coarse.h"

namespace vx_emu {
#include "fit_coarse.cuh"
} // namespace vx_emu

#include "fit_coarse_fixture.h"

static void check(int bricked) {
    for (int trial = 0; trial < 5; trial++) {
        vx_fit_model f;
        fc_random_model(&f, bricked, uni);
        int nc = f.nc, ncc = nc - 1;
        size_t nv = vx_fit_storage_voxels(&f), ncoarse = (size_t)f.cn[0] * f.cn[1] * f.cn[2] * ncc;
        std::vector<float> grad(f.grad, f.grad + nv * nc), data(f.data, f.data + nv * nc);
        vx_fit_coarse_map cm;
        OK(vx_fit_coarse_map_of(&f, &cm));
        vx_fit_index L;
        vx_fit_index_of(&f, &L);
        /* restriction, launched as vx_fit_coarse_restrict_cuda does */
        int tiles[3] = {(f.nx + 7) / 8, (f.ny + 7) / 8, (f.nz + 7) / 8};
        unsigned blocks = f.nslots ? (unsigned)(f.nslots - 1) : (unsigned)(tiles[0] * tiles[1] * tiles[2]);
        std::vector<float> cgrad(ncoarse, 0.0f), cgrad2(ncoarse, 0.0f);
        vx_emu_launch(dim3(blocks), dim3(512), vx_fit_coarse_restrict_kernel, (const float *)grad.data(),
                      (const unsigned char *)f.alive, L, nc, cm, tiles[0], tiles[1], cgrad.data());
        vx_emu_launch(dim3(blocks), dim3(512), vx_fit_coarse_restrict2_kernel, (const float *)grad.data(),
                      (const unsigned char *)f.alive, L, nc, cm, tiles[0], tiles[1], cgrad2.data());
        OK(vx_fit_coarse_restrict_cpu(&f));
        compare_most(f.coarse_grad, cgrad.data(), ncoarse, 1e-5, 1e-6, 0, "coarse gradient (version 1)");
        compare_most(f.coarse_grad, cgrad2.data(), ncoarse, 1e-5, 1e-6, 0, "coarse gradient (version 2)");
        /* Adam at a later step, with moments from earlier ones, then the prolongation */
        vx_fit_hparams h;
        vx_fit_hparams_default(&h);
        f.t = 3;
        for (size_t j = 0; j < ncoarse; j++) {
            f.coarse_m[j] = (float)uni(-0.1, 0.1);
            f.coarse_v[j] = (float)uni(0, 0.02);
        }
        std::vector<float> cm_m(f.coarse_m, f.coarse_m + ncoarse), cm_v(f.coarse_v, f.coarse_v + ncoarse);
        float lr = (float)uni(0.01, 0.1);
        float bc1 = (float)(1.0 - pow(h.beta1, 3.0)), bc2 = (float)(1.0 - pow(h.beta2, 3.0));
        std::vector<float> step(f.coarse_grad, f.coarse_grad + ncoarse);
        vx_emu_launch(dim3((unsigned)((ncoarse + 255) / 256)), dim3(256), vx_fit_coarse_adam_kernel, step.data(),
                      cm_m.data(), cm_v.data(), ncoarse, lr, h.beta1, h.beta2, h.eps, bc1, bc2);
        std::vector<unsigned> active;
        for (size_t v = 0; v < nv; v++)
            if (f.alive[v]) active.push_back((unsigned)v);
        int gw = nc % 4 == 0 ? 4 : 1, ng = nc / gw; /* as vx_fit_coarse_apply_cuda */
        unsigned nt = (unsigned)(active.size() * ng);
        vx_emu_launch(dim3((nt + 255) / 256), dim3(256), vx_fit_coarse_prolong_kernel, data.data(),
                      (const unsigned *)active.data(), nt, ng, gw, L, cm, (const float *)step.data());
        OK(vx_fit_coarse_apply_cpu(&f, &h, lr));
        compare_most(f.coarse_m, cm_m.data(), ncoarse, 1e-6, 1e-9, 0, "coarse first moment");
        compare_most(f.coarse_v, cm_v.data(), ncoarse, 1e-6, 1e-12, 0, "coarse second moment");
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
