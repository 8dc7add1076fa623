/* fit_levels.cu - the launchers of the coarse levels of `voxray fit --coarse R1[,R2..]`
 * (kernels in fit_coarse.cuh; the CPU reference in fit_coarse.c): the restriction of the
 * fine gradient onto each active level (and --coarse-only's zeroing after it), their Adam
 * steps and one prolongation of them all; the levels' cut to the crop. */
#include <math.h>
#include <string.h>

#include "fit_coarse.cuh"
#include "fit_device.cuh"

extern "C" int vx_fit_coarse_restrict_cuda(vx_fit_device *g) {
    if ((!g->m.nlevels && !g->m.coarse_only) || !g->n_active) return 0;
    int tiles[3] = {(g->m.nx + VX_BRICK - 1) / VX_BRICK, (g->m.ny + VX_BRICK - 1) / VX_BRICK,
                    (g->m.nz + VX_BRICK - 1) / VX_BRICK};
    size_t blocks = g->m.nslots ? g->m.nslots - 1 : (size_t)tiles[0] * tiles[1] * tiles[2];
    if (!blocks) return 0;
    if (blocks > 0x7fffffffull) return vx_error("fit: %zu bricks exceed one launch", blocks);
    double t0 = 0.0;
    if (vx_fitd_prof_start(g, &t0)) return -1;
    int ch0 = vx_fit_coarse_ch0(&g->m); /* the levels' first channel: 0 with --coarse-density */
    for (int l = 0; l < g->m.nlevels; l++) {
        vx_fit_coarse_map cm;
        if (!vx_fit_coarse_active(&g->m, l, &cm)) continue; /* its voxel not yet twice the fine one */
        if (g->coarse_version == 2) {
            vx_fit_coarse_restrict2_kernel<<<(unsigned)blocks, 512>>>(g->d_grad, g->d_alive, vx_fitd_index(g), g->m.nc,
                                                                      ch0, cm, tiles[0], tiles[1], g->d_lv[l][0]);
            VX_LAUNCH_CHECK("vx_fit_coarse_restrict2_kernel");
        } else {
            vx_fit_coarse_restrict_kernel<<<(unsigned)blocks, 512>>>(g->d_grad, g->d_alive, vx_fitd_index(g), g->m.nc,
                                                                     ch0, cm, tiles[0], tiles[1], g->d_lv[l][0]);
            VX_LAUNCH_CHECK("vx_fit_coarse_restrict_kernel");
        }
    }
    int co = g->m.coarse_only, nc = g->m.nc;
    if (co < 0 || co > nc - 1) return vx_error("fit: %d coarse-only channels of %d colour channels", co, nc - 1);
    size_t chunk = ((size_t)1 << 31) / (size_t)(co ? co : 1); /* 32-bit work indices, as the prolongation */
    for (size_t k0 = 0; co && k0 < g->n_active; k0 += chunk) {
        size_t nk = g->n_active - k0 < chunk ? g->n_active - k0 : chunk, nt = nk * (size_t)co;
        vx_fit_coarse_only_kernel<<<vx_ceil_div(nt, 256), 256>>>(g->d_grad, g->d_active + k0, (unsigned)nt, nc, co);
        VX_LAUNCH_CHECK("vx_fit_coarse_only_kernel");
    }
    return vx_fitd_prof_stop(g, VX_FIT_PROF_LEVEL, t0);
}

extern "C" int vx_fit_coarse_apply_cuda(vx_fit_device *g, const vx_fit_hparams *h, float lr, float lr_sigma) {
    vx_fit_coarse_steps S;
    memset(&S, 0, sizeof S);
    int act[VX_FIT_LEVELS];
    double t0 = 0.0;
    for (int l = 0; l < g->m.nlevels; l++) {
        if (!vx_fit_coarse_active(&g->m, l, &S.m[S.n])) continue;
        if (!S.n && vx_fitd_prof_start(g, &t0)) return -1;
        float bc1, bc2;
        vx_fit_coarse_bias(&g->m, l, h->beta1, h->beta2, &bc1, &bc2);
        size_t n = vx_fit_coarse_entries(&g->m, l);
        float *val = g->d_lv[l][3];
        auto adam = val ? vx_fit_coarse_adam_kernel<true> : vx_fit_coarse_adam_kernel<false>; /* --coarse-decay */
        unsigned nch = g->m.coarse_density ? (unsigned)vx_fit_coarse_nch(&g->m) : 0u; /* density entries: lr_sigma */
        adam<<<vx_ceil_div(n, 256), 256>>>(g->d_lv[l][0], g->d_lv[l][1], g->d_lv[l][2], val, n, lr, nch, lr_sigma,
                                           h->beta1, h->beta2, h->eps, bc1, bc2);
        VX_LAUNCH_CHECK("vx_fit_coarse_adam_kernel");
        S.step[S.n] = g->d_lv[l][0];
        S.val[S.n] = g->d_lv[l][3];
        act[S.n++] = l;
    }
    if (!S.n) return 0;
    S.lam = g->m.coarse_decay;
    for (int i = 0; S.lam > 0.0f && i < S.n; i++)
        if (!S.val[i]) return vx_error("fit: --coarse-decay: level %d keeps no value on the device", act[i]);
    int gw = g->m.nc % 4 == 0 ? 4 : 1, ng = g->m.nc / gw;
    size_t chunk = ((size_t)1 << 31) / (size_t)ng; /* as the Adam step: 32-bit work indices */
    vx_fit_coarse_prolong_fn prolong = vx_fit_coarse_prolong_pick(S.lam, g->m.coarse_density);
    for (size_t k0 = 0; k0 < g->n_active; k0 += chunk) {
        size_t nk = g->n_active - k0 < chunk ? g->n_active - k0 : chunk, nt = nk * (size_t)ng;
        prolong<<<vx_ceil_div(nt, 256), 256>>>(g->d_data, g->d_active + k0, (unsigned)nt, ng, gw, vx_fitd_index(g), S);
        VX_LAUNCH_CHECK("vx_fit_coarse_prolong_kernel");
    }
    for (int i = 0; i < S.n; i++)
        if (vx_cuda_zero(g->d_lv[act[i]][0], vx_fit_coarse_entries(&g->m, act[i]) * sizeof(float))) return -1;
    return vx_fitd_prof_stop(g, VX_FIT_PROF_LEVEL, t0);
}

extern "C" int vx_fit_coarse_rebox_cuda(vx_fit_device *g) {
    int ncc = vx_fit_coarse_nch(&g->m);
    for (int l = 0; l < g->m.nlevels; l++) {
        int k0[3], n[3];
        vx_fit_coarse_window(&g->m, l, k0, n);
        vx_fit_level *c = &g->m.lv[l];
        if (!memcmp(n, c->n, sizeof n)) continue;
        /* the level's arrays to the host, cut there by the CPU's code, back to the device */
        size_t ne = vx_fit_coarse_entries(&g->m, l);
        int na = g->d_lv[l][3] ? 4 : 3; /* the value only with --coarse-decay */
        vx_fit_level h = *c;
        float **ha[4] = {&h.grad, &h.m, &h.v, &h.val};
        int rc = 0;
        for (int k = 0; k < 4; k++) {
            *ha[k] = k < na ? (float *)vx_malloc(ne * sizeof(float), "fit coarse level (host copy)") : NULL;
            rc = rc || (k < na && (!*ha[k] || vx_cuda_download(*ha[k], g->d_lv[l][k], ne * sizeof(float))));
        }
        rc = rc || vx_fit_coarse_cut(&h, k0, n, ncc);
        if (!rc) {
            size_t nb = (size_t)n[0] * n[1] * n[2] * (size_t)ncc * sizeof(float);
            float *d[4] = {NULL, NULL, NULL, NULL};
            for (int k = 0; k < na && !rc; k++)
                rc = vx_cuda_alloc((void **)&d[k], nb, "fit coarse level") || vx_cuda_upload(d[k], *ha[k], nb);
            for (int k = 0; k < na; k++) {
                vx_cuda_free(rc ? d[k] : g->d_lv[l][k]);
                if (!rc) g->d_lv[l][k] = d[k];
            }
            if (!rc) {
                memcpy(c->n, h.n, sizeof c->n);
                memcpy(c->lo, h.lo, sizeof c->lo);
                memcpy(c->hi, h.hi, sizeof c->hi);
            }
        }
        for (int k = 0; k < 4; k++) free(*ha[k]);
        if (rc) return -1;
    }
    return 0;
}
