/* test_fit_rays_emu.cpp - the SH decoder's CUDA ray step (kernels/fit_rays.cuh, version 2:
 * what `voxray fit` trains with) run on the CPU through tests/emu/cuda_emu.h and compared
 * with the CPU fit: colours, loss, dL/dgrid and max weights of one batch, SH degrees 0..3
 * (the aligned-window loads and scatters of degrees 1 and 3 included), dense and bricked
 * storage, with and without the ray regularisers, the per-point colour loss and a random
 * background a ray (fit --random-bg).
 * tests/gpu/test_fit_gpu.c checks the same on the device. */
#include "emu/fit_emu.h"

/* A random SH model: res^3 (8..12), densities partly negative, coefficients in
 * [-0.4, 0.4]; bricked storage when asked (brick (0, 0, 0) dead: the null brick serves it). */
static void random_sh_model(vx_fit_model *f, int deg, int bricked) {
    int r = 8 + (int)(vx_rand01(&g_state) * 5);
    int res[3] = {r, r + 1, r + 2};
    double lo[3] = {-1, -1.1, -0.9}, hi[3] = {1, 1.2, 0.8};
    float bg[3] = {1, 1, 1};
    OK(vx_fit_model_init_cpu(f, res, deg, lo, hi, 0.5f, 0.0f, bg, 0.1f));
    size_t n = (size_t)f->nx * f->ny * f->nz * f->nc;
    for (size_t i = 0; i < n; i++) f->data[i] = i % f->nc == 0 ? (float)uni(-1, 3) : (float)uni(-0.4, 0.4);
    if (bricked) emu_make_bricked(f);
    OK(vx_fit_update_params(f, 1e-4f));
}

/* fit.cu's vx__rays_v2 for one batch, on the emulator. The parameter array carries
 * VX_FIT_PAD zeros past its end, as on the device (degrees 1 and 3 read aligned windows). */
template <int DEG, int REG, bool RBG> static void run_v2(const vx_fit_model *f, const vx_fit_batch *b, out *o) {
    int n = b->n;
    out_init(o, f, n);
    size_t np = vx_fit_storage_voxels(f) * f->nc;
    std::vector<float> data(f->data, f->data + np);
    data.resize(np + VX_FIT_PAD, 0.0f);
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    vx_fit_ray_src src = host_src(b);
    vx_fit_reg reg = {f->reg_sparsity / (float)n, f->reg_distortion / (float)n, f->reg_binary / (float)n};
    float pw = f->reg_rgbper / (float)n;
    assert_int_equal(vx_fit_reg_mode(&reg, pw), REG); /* the instantiation fit.cu launches */
    double sum = 0.0;
    vx_emu_launch(dim3((unsigned)((n + 127) / 128)), dim3(128), vx_fit_rays_v2_kernel<DEG, REG, RBG>, f->mp, L,
                  (const float *)data.data(), (const unsigned char *)(f->mp.occ_b ? f->occ : NULL), src, n,
                  1.0f / (3.0f * (float)n), reg, pw, o->grad.data(), f->track_wmax ? o->wmax.data() : (float *)NULL,
                  o->rgb.data(), &sum);
    o->loss = sum;
}

template <int DEG, bool RBG> static void run_mode(const vx_fit_model *f, const vx_fit_batch *b, int mode, out *o) {
    if (mode == VX_FIT_REG_ALL) run_v2<DEG, VX_FIT_REG_ALL, RBG>(f, b, o);
    else if (mode == VX_FIT_REG_PX) run_v2<DEG, VX_FIT_REG_PX, RBG>(f, b, o);
    else run_v2<DEG, VX_FIT_REG_NONE, RBG>(f, b, o);
}
/* the instantiation fit.cu launches: with the random background when the batch has one */
template <int DEG> static void run_deg(const vx_fit_model *f, const vx_fit_batch *b, int mode, out *o) {
    if (b->random_bg) run_mode<DEG, true>(f, b, mode, o);
    else run_mode<DEG, false>(f, b, mode, o);
}

static void test_rays_v2(void **state) {
    (void)state;
    for (int trial = 0; trial < 8; trial++) {
        /* reg: the density regularisers (trials 2, 5: the ALL instantiation), px: the
         * per-point colour loss (1, 7 alone: PX; 5 beside them: ALL; its weight large
         * enough that its gradient shows beside the photometric one) */
        int deg = trial % 4, bricked = trial / 4, n = 200;
        int px = trial == 1 || trial == 5 || trial == 7, reg = trial % 3 == 2;
        vx_fit_model f;
        random_sh_model(&f, deg, bricked);
        f.reg_sparsity = reg ? (float)uni(0.01, 0.05) : 0.0f;
        f.reg_distortion = reg ? (float)uni(0.2, 1.0) : 0.0f;
        f.reg_binary = reg ? (float)uni(0.1, 0.5) : 0.0f;
        f.reg_rgbper = px ? (float)uni(0.5, 2.0) : 0.0f;
        int mode = reg ? VX_FIT_REG_ALL : px ? VX_FIT_REG_PX : VX_FIT_REG_NONE;
        if (trial % 2) OK(vx_fit_occupancy_build_cpu(&f, 4));
        vx_fit_batch b;
        random_batch(&b, n);
        int rbg = trial == 3 || trial == 5 || trial == 6; /* each ray against its own background */
        if (rbg) random_backgrounds(&b);
        out o;
        switch (deg) {
        case 0: run_deg<0>(&f, &b, mode, &o); break;
        case 1: run_deg<1>(&f, &b, mode, &o); break;
        case 2: run_deg<2>(&f, &b, mode, &o); break;
        default: run_deg<3>(&f, &b, mode, &o); break;
        }
        vx_fit_zero_grad_cpu(&f);
        std::vector<float> rc((size_t)3 * n);
        double lc = vx_fit_rays_backward_cpu(&f, &b, rc.data());
        print_message("SH degree %d, %s storage, occupancy %s, regularisers %s, rgbper %.3f, random background %s: "
                      "loss CPU %.9g kernel %.9g\n",
                      deg, f.table ? "bricked" : "dense", f.mp.occ_b ? "on" : "off", reg ? "on" : "off",
                      f.reg_rgbper, rbg ? "on" : "off", lc, o.loss);
        assert_true(fabs(lc - o.loss) <= 1e-5 * lc + 1e-9);
        compare_most(rc.data(), o.rgb.data(), rc.size(), 1e-5, 1e-6, 0, "ray colours");
        size_t nv = vx_fit_storage_voxels(&f);
        /* version 2 sums a colour as sum_j w_j (k_j . b), the CPU as (sum_j w_j k_j) . b: a
         * colour within rounding of max(0, .) can take the other branch (one sample's
         * 8 corners x 3 channels x (deg+1)^2 coefficients) */
        compare_most(f.grad, o.grad.data(), nv * f.nc, 1e-4, 1e-8, 8 * f.nc, "grid gradient");
        compare_most(f.wmax, o.wmax.data(), nv, 1e-4, 1e-7, 8, "max weights");
        for (size_t i = nv * f.nc; i < o.grad.size(); i++) assert_true(o.grad[i] == 0.0f); /* the padding */
        vx_fit_batch_free(&b);
        vx_fit_model_free(&f);
    }
}

int main(void) {
    vx_emu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rays_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
