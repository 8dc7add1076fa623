/* test_fit_mlp_emu.cpp - the mlp decoder's CUDA training kernels (kernels/fit_mlp.cuh: the
 * network per ray; fit_mlp_batch.cuh: batched over a step's samples) run on the CPU through
 * tests/emu/cuda_emu.h and compared with the CPU fit (fit_cpu.c, itself checked against
 * finite differences in test_fit_mlp.c): colours, loss, dL/dgrid, dL/dweights and max
 * weights of one batch, dense and bricked storage, one pass and many. CI has no GPU, so
 * this is where the kernels' logic is checked on every change; tests/gpu/test_fit_gpu.c
 * checks the same on the device. */
#include "emu/fit_emu.h"

namespace vx_emu {
float4 vx_mlpb_smem4[VX_MLPB_FLOATS / 4 + 4]; /* the network kernels' dynamic shared memory */
}

/* A random mlp model: res^3 (8..12), densities partly negative, features in [-1, 1], the
 * initial weights scaled by random factors in [0.5, 2]; bricked storage when asked (the
 * voxels of brick (0, 0, 0) dead, so the null brick serves it). */
static void random_mlp_model(vx_fit_model *f, int layers, int bricked, int reflect = 0) {
    int r = 8 + (int)(vx_rand01(&g_state) * 5);
    int res[3] = {r, r + 1, r + 2};
    double lo[3] = {-1, -1.1, -0.9}, hi[3] = {1, 1.2, 0.8};
    float bg[3] = {1, 1, 1};
    OK(vx_fit_model_init_cpu(f, res, 0, lo, hi, 0.5f, 0.0f, bg, 0.1f));
    OK(vx_fit_model_use_mlp_cpu(f, layers, (unsigned)(vx_rand01(&g_state) * 1e9)));
    size_t nv = (size_t)f->nx * f->ny * f->nz;
    for (size_t i = 0; i < nv; i++) {
        f->data[i * f->nc] = (float)uni(-1, 3);
        for (int c = 1; c < f->nc; c++) f->data[i * f->nc + c] = (float)uni(-1, 1);
    }
    for (int k = 0; k < vx_mlp_weight_count(layers); k++) f->mlp[k] *= (float)uni(0.5, 2.0);
    if (bricked) emu_make_bricked(f);
    f->mlp_reflect = reflect; /* the direction mode (fit --mlp-reflect, --mlp-view-reflected) */
    OK(vx_fit_update_params(f, 1e-4f));
}

/* fit.cu's vx__rays_mlp_batched, launched on the emulator; cap samples a pass; gather version
 * 2 (one march into staging slots) where g2 is set, as fit.cu picks it a pass. */
template <int LAYERS>
static void run_batched(const vx_fit_model *f, const vx_fit_batch *b, unsigned long long cap, out *o, int g2 = 0) {
    int n = b->n, m = n;
    out_init(o, f, n);
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    vx_fit_ray_src src = host_src(b);
    std::vector<float> x(cap * 32), dt(cap), xs(cap * 32), dts(cap);
    std::vector<float4> pt(cap), rgb(cap), dout(cap), pts(cap);
    vx_fit_mlp_batch ST = {xs.data(), pts.data(), NULL, NULL, dts.data(), NULL, NULL}; /* the staging rows */
    std::vector<unsigned long long> start(n);
    std::vector<int> cnt_n(n), defer0(n), defer1(n);
    vx_fit_mlp_batch B = {x.data(), pt.data(), rgb.data(), dout.data(), dt.data(), start.data(), cnt_n.data()};
    const unsigned char *occ = f->mp.occ_b ? f->occ : NULL;
    float scale = 1.0f / (3.0f * (float)n);
    const int *list = NULL;
    double sum = 0.0;
    for (int pass = 0; m > 0; pass++) {
        assert_true(pass <= n);
        int *defer = pass & 1 ? defer1.data() : defer0.data();
        unsigned long long rc[2] = {0, 0};
        unsigned left = 0;
        unsigned rb = (unsigned)((m + 127) / 128);
        unsigned long long K = cap / (unsigned long long)m;
        int one = g2 && K >= VX_MLPB_SLOT_MIN;
        if (one) {
            vx_emu_launch(dim3(rb), dim3(128), vx_fit_mlpb_gather1_pick(&f->mp), f->mp, L, (const float *)f->data, occ, src,
                          list, m, ST, K, B, cap, rc, defer, &left);
            one = rc[1] || left < (unsigned)m;
            if (one) o->slot_passes++;
            else rc[0] = rc[1] = 0, left = 0; /* every ray past its slot: version 1 this pass */
        }
        if (!one)
            vx_emu_launch(dim3(rb), dim3(128), vx_fit_mlpb_gather_pick(&f->mp), f->mp, L, (const float *)f->data, occ, src, list,
                          m, B, cap, rc, defer, &left);
        for (int t = 0; t < m; t++) o->most = std::max(o->most, cnt_n[t]); /* -1: put off */
        unsigned long long S = rc[1], tiles = (S + VX_MLPB_TILE - 1) / VX_MLPB_TILE;
        unsigned grid = (unsigned)std::min<unsigned long long>(tiles, 3); /* persistent: several tiles a block */
        if (S) vx_emu_launch(dim3(grid), dim3(VX_MLPB_THREADS), vx_fit_mlpb_forward_kernel<LAYERS>, (const float *)f->mlp, B, S);
        float pw = f->reg_rgbper / (float)n;
        vx_fit_reg reg = {f->reg_sparsity / (float)n, f->reg_distortion / (float)n, f->reg_binary / (float)n};
        vx_emu_launch(dim3(rb), dim3(128), vx_fit_mlpb_composite_pick(pw, &reg), f->mp, src, list, m, scale, pw, reg, B,
                      o->rgb.data(), &sum); /* the instantiation fit.cu launches */
        if (S) {
            vx_emu_launch(dim3(grid), dim3(VX_MLPB_THREADS), vx_fit_mlpb_backward_kernel<LAYERS>, (const float *)f->mlp, B, S,
                          o->wgrad.data());
            vx_emu_launch(dim3((unsigned)((S + 255) / 256)), dim3(256), vx_fit_mlpb_scatter_kernel, L, B, S, o->grad.data(),
                          f->track_wmax ? o->wmax.data() : (float *)NULL);
        }
        assert_true(S > 0 || left < (unsigned)m);
        list = defer;
        m = (int)left;
        o->passes++;
    }
    o->loss = sum;
}

/* fit.cu's vx__rays_mlp (the network per ray, records reduced afterwards) on the emulator. */
template <int LAYERS> static void run_per_ray(const vx_fit_model *f, const vx_fit_batch *b, unsigned long long cap, out *o) {
    int n = b->n, m = n;
    out_init(o, f, n);
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    vx_fit_ray_src src = host_src(b);
    memcpy(vx_c_fit_mlp, f->mlp, (size_t)vx_mlp_weight_count(LAYERS) * sizeof(float));
    std::vector<vx_fit_mlp_record> rec(cap);
    std::vector<int> defer0(n), defer1(n);
    const unsigned char *occ = f->mp.occ_b ? f->occ : NULL;
    float scale = 1.0f / (3.0f * (float)n);
    const int *list = NULL;
    double sum = 0.0;
    for (int pass = 0; m > 0; pass++) {
        assert_true(pass <= n);
        int *defer = pass & 1 ? defer1.data() : defer0.data();
        unsigned long long rc[2] = {0, 0};
        unsigned left = 0;
        vx_emu_launch(dim3((unsigned)((m + 127) / 128)), dim3(128), vx_fit_rays_mlp_kernel<LAYERS>, f->mp, L,
                      (const float *)f->data, occ, src, list, m, scale, o->grad.data(),
                      f->track_wmax ? o->wmax.data() : (float *)NULL, o->rgb.data(), &sum, rec.data(), cap, rc, defer,
                      &left);
        if (rc[1])
            vx_emu_launch(dim3((unsigned)((rc[1] + 511) / 512)), dim3(256), vx_fit_mlp_wgrad_kernel<LAYERS>,
                          (const vx_fit_mlp_record *)rec.data(), rc[1], 512u, o->wgrad.data());
        assert_true(rc[1] > 0 || left < (unsigned)m);
        list = defer;
        m = (int)left;
        o->passes++;
    }
    o->loss = sum;
}

static void check_against_cpu(int kernel) {
    int redraws = 0;
    for (int trial = 0; trial < 4; trial++) {
        int layers = 1 + trial % 2, small = trial / 2 % 2, bricked = (trial + kernel) % 2, n = 160;
        vx_fit_model f;
        /* the batched kernels' direction modes, each gather both: the reflected direction in trial 1,
         * the view direction with the reflected one in trial 3 */
        int reflect = kernel < 2 || trial % 2 == 0 ? VX_MLP_DIR_VIEW : trial == 1 ? VX_MLP_DIR_REFLECTED : VX_MLP_DIR_BOTH;
        random_mlp_model(&f, layers, bricked, reflect);
        OK(vx_fit_occupancy_build_cpu(&f, 4));
        /* the per-point colour loss (fit --rgbper) in the batched kernel's odd trials */
        f.reg_rgbper = kernel >= 2 && trial % 2 ? (float)uni(0.05, 0.5) : 0.0f;
        /* the density regularisers (--sparsity, --distortion) in the batched kernel's trials 1
         * (beside the per-point loss) and 2 (alone) */
        int reg = kernel >= 2 && (trial == 1 || trial == 2);
        f.reg_sparsity = reg ? (float)uni(0.01, 0.05) : 0.0f;
        f.reg_distortion = reg ? (float)uni(0.2, 1.0) : 0.0f;
        f.reg_binary = reg ? (float)uni(0.1, 0.5) : 0.0f;
        vx_fit_batch b;
        random_batch(&b, n);
        if (kernel >= 2 && trial >= 2) random_backgrounds(&b); /* fit --random-bg: the batched kernel has it */
        /* the kernels read the parameters before the CPU step changes anything */
        out o;
        unsigned long long cap = small ? 150 : (unsigned long long)n * 64;
        if (kernel == 3 && trial == 0) cap = (unsigned long long)n * VX_MLPB_SLOT_MIN; /* slots of 8: rays put off */
        if (kernel >= 2) {
            if (layers == 1) run_batched<1>(&f, &b, cap, &o, kernel == 3);
            else run_batched<2>(&f, &b, cap, &o, kernel == 3);
        } else {
            if (layers == 1) run_per_ray<1>(&f, &b, cap, &o);
            else run_per_ray<2>(&f, &b, cap, &o);
        }
        if (kernel == 3 && trial == 0 && o.most <= (int)VX_MLPB_SLOT_MIN) {
            /* no ray longer than its slot (a small bricked grid can do that): draw again, so the
             * put-off path runs every time */
            print_message("  redraw: the most samples a ray had was %d\n", o.most);
            assert_true(o.passes == 1);
            assert_true(++redraws < 20);
            vx_fit_batch_free(&b);
            vx_fit_model_free(&f);
            trial--;
            continue;
        }
        vx_fit_zero_grad_cpu(&f);
        std::vector<float> rc((size_t)3 * n);
        double lc = vx_fit_rays_backward_cpu(&f, &b, rc.data());
        print_message("%s kernel, %d layer(s), %s storage, %s buffer, rgbper %.3f, regularisers %s, random background "
                      "%s, %s direction: %d pass(es), loss CPU %.9g kernel %.9g\n",
                      kernel == 3 ? "batched (one-march gather)" : kernel == 2 ? "batched" : "per-ray", layers, f.table ? "bricked" : "dense",
                      small ? "150-sample" : "full", f.reg_rgbper, reg ? "on" : "off", b.random_bg ? "on" : "off",
                      vx_mlp_dir_name(reflect), o.passes, lc, o.loss);
        if (small) assert_true(o.passes > 1);
        if (kernel == 3) {
            print_message("  %d of the passes with the one-march gather; the most samples a ray had: %d\n", o.slot_passes,
                          o.most);
            if (!small) assert_true(o.slot_passes > 0); /* the small buffer's slots stay under 8 rows */
            /* slots of 8 rows and room for all: a second pass exactly when some ray had more */
            if (trial == 0) assert_true((o.passes > 1) == (o.most > (int)VX_MLPB_SLOT_MIN));
        }
        assert_true(fabs(lc - o.loss) <= 1e-5 * lc + 1e-9);
        compare_most(rc.data(), o.rgb.data(), rc.size(), 1e-5, 1e-6, 0, "ray colours");
        size_t nv = vx_fit_storage_voxels(&f);
        /* a hidden unit within rounding of relu's kink at one sample moves its whole cell's
         * gradient: 8 voxels of nc channels (seed 122 met one, 26 entries of 65536) */
        compare_most(f.grad, o.grad.data(), nv * f.nc, 1e-4, 1e-8, 8 * f.nc, "grid gradient");
        compare_most(f.mlp_grad, o.wgrad.data(), o.wgrad.size(), 1e-4, 1e-8, VX_MLP_WIDTH, "weight gradient");
        compare_most(f.wmax, o.wmax.data(), nv, 1e-4, 1e-7, 8, "max weights");
        vx_fit_batch_free(&b);
        vx_fit_model_free(&f);
    }
}

static void test_batched_kernel(void **state) {
    (void)state;
    check_against_cpu(2);
}

/* Gather version 2 (one march into staging slots, fit.cu's opt-in): the same step */
static void test_batched_kernel_one_march(void **state) {
    (void)state;
    check_against_cpu(3);
}

static void test_per_ray_kernel(void **state) {
    (void)state;
    check_against_cpu(1);
}

/* The weights' Adam kernel against vx_fit_adam_step_mlp_cpu, a few steps from random
 * gradients: the same update, and the gradient consumed (zero afterwards); with the
 * direction's higher terms cut (fit --mlp-dir-degree) on the second pass, their weights
 * zero on both. */
static void test_adam_kernel(void **state) {
    (void)state;
    for (int pass = 0; pass < 4; pass++) {
        int layers = 1 + pass % 2;
        vx_fit_model f;
        random_mlp_model(&f, layers, 0);
        vx_fit_hparams hp;
        vx_fit_hparams_default(&hp);
        hp.mlp_dir_terms = pass < 2 ? 0 : 4 + 5 * (pass % 2);
        int nw = vx_mlp_weight_count(layers), lo, hi;
        vx_mlp_dir_cut(hp.mlp_dir_terms, &lo, &hi);
        std::vector<float> w(f.mlp, f.mlp + nw), m(nw, 0.0f), v(nw, 0.0f), g(nw);
        for (int step = 1; step <= 3; step++) {
            for (int k = 0; k < nw; k++) f.mlp_grad[k] = g[k] = (float)uni(-1e-2, 1e-2);
            f.t = step;
            vx_fit_adam_step_mlp_cpu(&f, &hp, hp.lr_mlp);
            float bc1 = (float)(1.0 - pow(hp.beta1, (double)step)), bc2 = (float)(1.0 - pow(hp.beta2, (double)step));
            vx_emu_launch(dim3((unsigned)((nw + 255) / 256)), dim3(256), vx_fit_mlp_adam_kernel, w.data(), m.data(),
                          v.data(), g.data(), nw, lo, hi, hp.lr_mlp, hp.beta1, hp.beta2, hp.eps, bc1, bc2);
            for (int k = 0; k < nw; k++) {
                assert_true(g[k] == 0.0f && f.mlp_grad[k] == 0.0f);
                if (k >= lo && k < hi) assert_true(w[k] == 0.0f && f.mlp[k] == 0.0f);
                if (fabs(w[k] - f.mlp[k]) > 1e-7 * fmax(1.0, fabs(f.mlp[k])))
                    fail_msg("layers %d, step %d, weight %d: CPU %.9g kernel %.9g", layers, step, k, f.mlp[k], w[k]);
            }
        }
        vx_fit_model_free(&f);
    }
}

/* The network in double, the products the tensor cores compute (the hidden layers; in the
 * backward dW1, d1 and dW0) from operands rounded as they round them (tf32) or not: the
 * colour of sample x, and with dout (dL/d(output pre-activation) xyz, dL/d(raw density) w)
 * its backward as fit_mlp_batch.cuh's computes it: dL/dweights added into wg, dL/d(raw)
 * into draw[16]. */
static void ref_network(const float *w, int layers, const float *x, int tf32, const float4 *dout, double rgb[3],
                        double *wg, double draw[16]) {
    const int W = VX_MLP_WIDTH, oo = vx_mlp_out_offset(layers);
    double h1[VX_MLP_WIDTH], h2[VX_MLP_WIDTH], d2[VX_MLP_WIDTH], d1[VX_MLP_WIDTH];
    /* a unit of a hidden layer: in double, or as the emulated tensor cores sum (float fmas of
     * TF32-rounded operands from the bias up, in input order; hardware orders its sums its own
     * way, which tests/gpu/test_fit_gpu.c allows for), so no hidden value lands on the other
     * side of a TF32 rounding boundary than the kernel's */
    auto unit = [&](double bias, int n, auto in, auto wt) {
        if (!tf32) {
            double a = bias;
            for (int i = 0; i < n; i++) a += (double)(float)in(i) * (double)wt(i);
            return a > 0 ? a : 0.0;
        }
        float a = (float)bias;
        for (int i = 0; i < n; i++) a = std::fma(vx_emu_tf32((float)in(i)), vx_emu_tf32(wt(i)), a);
        return a > 0 ? (double)a : 0.0;
    };
    for (int o = 0; o < W; o++)
        h1[o] = unit(w[VX_MLP_B0 + o], VX_MLP_IN, [&](int i) { return (double)x[i]; }, [&](int i) { return w[i * W + o]; });
    if (layers == 2)
        for (int o = 0; o < W; o++)
            h2[o] = unit(w[VX_MLP_L1 + W * W + o], W, [&](int i) { return h1[i]; },
                         [&](int i) { return w[VX_MLP_L1 + o * W + i]; });
    const double *hl = layers == 2 ? h2 : h1;
    const float *w2 = w + oo;
    for (int c = 0; c < 3; c++) {
        double a = w2[3 * W + c];
        for (int i = 0; i < W; i++) a += (double)w2[c * W + i] * (double)(float)hl[i];
        rgb[c] = 1.0 / (1.0 + exp(-a));
    }
    if (!dout) return;
    const double g[3] = {dout->x, dout->y, dout->z};
    double *dl = layers == 2 ? d2 : d1;
    for (int o = 0; o < W; o++) {
        double a = 0;
        for (int c = 0; c < 3; c++) {
            a += g[c] * w2[c * W + o];
            wg[oo + c * W + o] += g[c] * hl[o];
        }
        dl[o] = hl[o] > 0 ? a : 0;
    }
    for (int c = 0; c < 3; c++) wg[oo + 3 * W + c] += g[c];
    /* the products the tensor cores take over in the backward (dW1, d1, dW0): TF32 operands */
    auto r = [&](double v) { return tf32 ? (double)vx_emu_tf32((float)v) : v; };
    if (layers == 2)
        for (int i = 0; i < W; i++) {
            double a = 0;
            for (int o = 0; o < W; o++) {
                a += r(d2[o]) * r(w[VX_MLP_L1 + o * W + i]);
                wg[VX_MLP_L1 + o * W + i] += r(d2[o]) * r(h1[i]);
            }
            d1[i] = h1[i] > 0 ? a : 0;
            wg[VX_MLP_L1 + W * W + i] += d2[i];
        }
    for (int o = 0; o < W; o++) {
        for (int i = 0; i < VX_MLP_IN; i++) wg[i * W + o] += r(d1[o]) * r(x[i]);
        wg[VX_MLP_B0 + o] += d1[o];
    }
    draw[0] = dout->w;
    for (int i = 0; i < 15; i++) {
        double a = 0;
        for (int o = 0; o < W; o++) a += d1[o] * w[i * W + o];
        draw[1 + i] = a;
    }
}

/* fit --mlp-tensor-cores: the batched network with its hidden layers on the (emulated)
 * tensor cores, and the FP32 one, each against the double-precision network of its own
 * operands' rounding (TF32 or none): colours to 1e-6 (a fragment read from the wrong row or
 * column of a tile is off by 1e-2 and more), dL/dweights and dL/d(raw) to float sums' rounding
 * (1e-4 of the scale; 1e-3 on the tensor cores, where TF32's rounding of intermediates may
 * flip) (a relu mask may flip where a hidden unit is within rounding of 0: a few entries may
 * differ). The two kernels' colours differ by TF32's rounding, not more. Random weights,
 * inputs and output gradients; three tiles, the last one partial. */
static void test_tensor_core_network(void **state) {
    (void)state;
    for (int layers = 1; layers <= 2; layers++) {
        const unsigned long long S = 150;
        int nw = vx_mlp_weight_count(layers);
        std::vector<float> w(nw);
        for (int k = 0; k < nw; k++) w[k] = (float)uni(-0.4, 0.4);
        std::vector<float> x0(S * 32, 0.0f);
        for (unsigned long long s = 0; s < S; s++)
            for (int i = 0; i < VX_MLP_IN; i++) x0[s * 32 + i] = (float)uni(-1, 1);
        std::vector<float4> dout0(S);
        for (auto &d : dout0) d = make_float4((float)uni(-1, 1), (float)uni(-1, 1), (float)uni(-1, 1), (float)uni(-1, 1));
        std::vector<float4> rgb[2];
        for (int tc = 0; tc < 2; tc++) {
            std::vector<float> x = x0, wg(nw, 0.0f);
            std::vector<float4> dout = dout0;
            rgb[tc].assign(S, make_float4(0, 0, 0, 0));
            vx_fit_mlp_batch B = {x.data(), NULL, rgb[tc].data(), dout.data(), NULL, NULL, NULL};
            vx_emu_launch(dim3(2), dim3(VX_MLPB_THREADS), vx_fit_mlpb_forward_pick(layers, tc), (const float *)w.data(), B, S);
            vx_emu_launch(dim3(2), dim3(VX_MLPB_THREADS), vx_fit_mlpb_backward_pick(layers, tc), (const float *)w.data(), B,
                          S, wg.data());
            std::vector<double> wref(nw, 0.0);
            std::vector<float> wref_f(nw), draw_ref(S * 16), draw(S * 16);
            double worst = 0;
            for (unsigned long long s = 0; s < S; s++) {
                double ref[3], dr[16];
                ref_network(w.data(), layers, &x0[s * 32], tc, &dout0[s], ref, wref.data(), dr);
                const float *c = (const float *)&rgb[tc][s];
                for (int k = 0; k < 3; k++) worst = fmax(worst, fabs(c[k] - ref[k]));
                for (int k = 0; k < 16; k++) {
                    draw_ref[s * 16 + k] = (float)dr[k];
                    draw[s * 16 + k] = x[s * 32 + k];
                }
            }
            for (int k = 0; k < nw; k++) wref_f[k] = (float)wref[k];
            print_message("%d layer(s), %s: colour vs the double network of its rounding %.2g\n", layers,
                          tc ? "tensor cores" : "FP32", worst);
            assert_true(worst < 1e-6);
            /* TF32: an operand the float sums left on the other side of a rounding boundary
             * moves its product by 2^-10; 25 runs read at most 8e-5 of the scale, one in ~15
             * had 5 entries at 1.5e-4 (a flaky 1e-4): 1e-3, a tenth of a misplaced fragment's */
            double gtol = tc ? 1e-3 : 1e-4;
            compare_most(wref_f.data(), wg.data(), (size_t)nw, gtol, 1e-5, 4, tc ? "weight gradient (tensor cores)" : "weight gradient (FP32)");
            compare_most(draw_ref.data(), draw.data(), draw.size(), gtol, 1e-5, 4, tc ? "dL/d(raw) (tensor cores)" : "dL/d(raw) (FP32)");
        }
        double diff = 0;
        for (unsigned long long s = 0; s < S; s++)
            for (int k = 0; k < 3; k++) diff = fmax(diff, fabs(((const float *)&rgb[0][s])[k] - ((const float *)&rgb[1][s])[k]));
        print_message("%d layer(s): tensor cores vs FP32, colour %.2g\n", layers, diff);
        assert_true(diff > 0.0 && diff < 5e-3); /* TF32's rounding, and only that */
    }
}

int main(void) {
    vx_emu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batched_kernel),
        cmocka_unit_test(test_batched_kernel_one_march),
        cmocka_unit_test(test_per_ray_kernel),
        cmocka_unit_test(test_adam_kernel),
        cmocka_unit_test(test_tensor_core_network),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
