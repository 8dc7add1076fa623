/* fit_coarse.c - the CPU coarse levels of `voxray fit --coarse` (fit_coarse.h): allocation,
 * the restriction of the fine gradient onto each level, their Adam steps and the
 * prolongation of those steps into the fine grid. The reference of kernels/fit_coarse.cuh. */
#include "fit_coarse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit_march.h"
#include "vx_common.h"

/* A level's gradient, moments and (with_val: --coarse-decay) value, ne floats each, zeroed
 * (all of them, or none and -1; arr[3] NULL without the value). */
static int vx__level_arrays(size_t ne, int with_val, float *arr[4]) {
    arr[0] = vx_calloc(ne, sizeof(float), "fit coarse gradient");
    arr[1] = vx_calloc(ne, sizeof(float), "fit coarse Adam first moment");
    arr[2] = vx_calloc(ne, sizeof(float), "fit coarse Adam second moment");
    arr[3] = with_val ? vx_calloc(ne, sizeof(float), "fit coarse level value") : NULL;
    if (arr[0] && arr[1] && arr[2] && (!with_val || arr[3])) return 0;
    for (int k = 0; k < 4; k++) free(arr[k]);
    return -1;
}

int vx_fit_coarse_init_cpu(vx_fit_model *f, int res) {
    if (res < 2 || res > 1024) return vx_error("fit: --coarse %d is outside 2..1024", res);
    if (f->nc < 2) return vx_error("fit: the coarse level needs colour channels (the model has %d)", f->nc);
    if (f->nlevels >= VX_FIT_LEVELS) return vx_error("fit: --coarse: at most %d levels", VX_FIT_LEVELS);
    if (!(f->coarse_decay >= 0.0f && f->coarse_decay < 1.0f))
        return vx_error("fit: --coarse-decay %g is outside [0, 1)", f->coarse_decay);
    double edge[3], longest = 0.0;
    for (int a = 0; a < 3; a++) {
        edge[a] = f->box_hi[a] - f->box_lo[a];
        longest = fmax(longest, edge[a]);
    }
    vx_fit_level *c = &f->lv[f->nlevels];
    for (int a = 0; a < 3; a++) {
        c->n[a] = (int)fmax(2.0, ceil(res * edge[a] / longest - 1e-9));
        c->lo[a] = f->box_lo[a];
        c->hi[a] = f->box_hi[a];
    }
    for (int l = 0; l < f->nlevels; l++)
        if (!memcmp(f->lv[l].n, c->n, sizeof c->n)) {
            memset(c->n, 0, sizeof c->n);
            return vx_error("fit: --coarse %d: a level of that lattice exists already", res);
        }
    c->t0 = -1;
    f->nlevels++; /* before the allocations: vx_fit_coarse_free drops a half-made level */
    size_t n = vx_fit_coarse_entries(f, f->nlevels - 1);
    float *arr[4];
    if (vx__level_arrays(n, f->coarse_decay > 0.0f, arr)) {
        vx_fit_coarse_free(f);
        return -1;
    }
    c->grad = arr[0];
    c->m = arr[1];
    c->v = arr[2];
    c->val = arr[3];
    return 0;
}

/* Whether a level voxel ch serves a fine voxel h: at least twice it (to rounding). */
static int vx__twice(double ch, double h) { return h > 0 && ch >= 2.0 * h * (1.0 - 1e-6); }

/* Level l's map for the current lattice (every axis); the first axis where it fails (its
 * voxel less than twice the fine one; *hf, *hc that axis's sizes), or -1 where it holds. */
static int vx__map(const vx_fit_model *f, int l, vx_fit_coarse_map *m, double *hf, double *hc) {
    const vx_fit_level *c = &f->lv[l];
    int n[3] = {f->nx, f->ny, f->nz}, bad = -1;
    for (int a = 0; a < 3; a++) {
        double h = (f->box_hi[a] - f->box_lo[a]) / n[a], ch = (c->hi[a] - c->lo[a]) / c->n[a];
        m->n[a] = c->n[a];
        m->a[a] = (float)(h / ch);
        m->b[a] = (float)((f->box_lo[a] + 0.5 * h - c->lo[a]) / ch - 0.5);
        if (bad < 0) {
            *hf = h;
            *hc = ch;
            if (!vx__twice(ch, h)) bad = a;
        }
    }
    return bad;
}

int vx_fit_coarse_active(const vx_fit_model *f, int l, vx_fit_coarse_map *m) {
    vx_fit_coarse_map own;
    double h, ch;
    return l >= 0 && l < f->nlevels && vx__map(f, l, m ? m : &own, &h, &ch) < 0;
}

int vx_fit_coarse_first_stage(const vx_fit_model *f, int l, const int (*res)[3], int stages) {
    const vx_fit_level *c = &f->lv[l];
    for (int s = 0; s < stages; s++) {
        int ok = 1;
        for (int a = 0; a < 3; a++) {
            double edge = f->box_hi[a] - f->box_lo[a], h = edge / res[s][a], ch = (c->hi[a] - c->lo[a]) / c->n[a];
            ok = ok && vx__twice(ch, h);
        }
        if (ok) return s;
    }
    return -1;
}

int vx_fit_coarse_map_of(const vx_fit_model *f, int l, vx_fit_coarse_map *m) {
    if (l < 0 || l >= f->nlevels) return vx_error("fit: no coarse level %d (the model has %d)", l, f->nlevels);
    double h = 0.0, ch = 0.0;
    int a = vx__map(f, l, m, &h, &ch);
    if (a >= 0)
        return vx_error("fit: --coarse: a coarse voxel (%g) must be at least twice the fine one (%g) on axis %d; "
                        "give a coarse resolution at most half the stage's", ch, h, a);
    return 0;
}

void vx_fit_coarse_bias(vx_fit_model *f, int l, float beta1, float beta2, float *bc1, float *bc2) {
    vx_fit_level *c = &f->lv[l];
    if (c->t0 < 0) c->t0 = f->t - 1;
    double t = (double)(f->t - c->t0);
    *bc1 = (float)(1.0 - pow(beta1, t));
    *bc2 = (float)(1.0 - pow(beta2, t));
}

int vx_fit_coarse_restrict_cpu(vx_fit_model *f) {
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    size_t nv = vx_fit_storage_voxels(f);
    int nc = f->nc, ch0 = vx_fit_coarse_ch0(f), ncc = vx_fit_coarse_nch(f);
    for (int l = 0; l < f->nlevels; l++) {
        vx_fit_coarse_map m;
        if (!vx_fit_coarse_active(f, l, &m)) continue;
        float *cg = f->lv[l].grad;
        for (size_t v = 0; v < nv; v++) {
            if (!f->alive[v]) continue;
            const float *g = f->grad + v * nc + ch0;
            int any = 0, x, y, z;
            for (int c = 0; c < ncc && !any; c++) any = g[c] != 0.0f;
            if (!any || vx_fit_xyz(&L, v, &x, &y, &z)) continue;
            size_t idx[8];
            float w[8];
            vx_fit_coarse_corners(&m, x, y, z, idx, w);
            for (int k = 0; k < 8; k++) {
                if (w[k] == 0.0f) continue;
                float *o = cg + idx[k] * ncc;
                for (int c = 0; c < ncc; c++) o[c] += w[k] * g[c];
            }
        }
    }
    int co = f->coarse_only;
    if (co < 0 || co > nc - 1) return vx_error("fit: %d coarse-only channels of %d colour channels", co, nc - 1);
    if (co)
        for (size_t v = 0; v < nv; v++)
            if (f->alive[v]) memset(f->grad + v * nc + nc - co, 0, (size_t)co * sizeof(float));
    return 0;
}

int vx_fit_coarse_apply_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr, float lr_sigma) {
    int act[VX_FIT_LEVELS], na = 0, nc = f->nc, ch0 = vx_fit_coarse_ch0(f), ncc = vx_fit_coarse_nch(f);
    vx_fit_coarse_map m[VX_FIT_LEVELS];
    for (int l = 0; l < f->nlevels; l++) {
        if (!vx_fit_coarse_active(f, l, &m[na])) continue;
        act[na++] = l;
        float bc1, bc2;
        vx_fit_coarse_bias(f, l, h->beta1, h->beta2, &bc1, &bc2);
        vx_fit_level *c = &f->lv[l];
        size_t n = vx_fit_coarse_entries(f, l);
        float *step = c->grad; /* each entry's gradient, consumed, becomes its step */
        for (size_t j = 0; j < n; j++) {
            float x = 0.0f, r = ch0 == 0 && j % (size_t)ncc == 0 ? lr_sigma : lr; /* the density's own step size */
            vx_fit_adam_update(&x, c->m + j, c->v + j, step[j], r, h->beta1, h->beta2, h->eps, bc1, bc2, 0);
            step[j] = x;
            if (c->val) c->val[j] += x;
        }
    }
    if (!na) return 0;
    const float lam = f->coarse_decay;
    for (int i = 0; lam > 0.0f && i < na; i++)
        if (!f->lv[act[i]].val) return vx_error("fit: --coarse-decay: level %d keeps no value", act[i]);
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    size_t nv = vx_fit_storage_voxels(f);
    for (size_t v = 0; v < nv; v++) {
        int x, y, z;
        if (!f->alive[v] || vx_fit_xyz(&L, v, &x, &y, &z)) continue;
        size_t idx[VX_FIT_LEVELS][8];
        float w[VX_FIT_LEVELS][8];
        for (int i = 0; i < na; i++) vx_fit_coarse_corners(&m[i], x, y, z, idx[i], w[i]);
        float *d = f->data + v * nc + ch0;
        for (int c = 0; c < ncc; c++) {
            float s = 0.0f, u = 0.0f;
            for (int i = 0; i < na; i++) {
                const float *step = f->lv[act[i]].grad, *val = f->lv[act[i]].val;
                for (int k = 0; k < 8; k++) s += w[i][k] * step[idx[i][k] * ncc + c];
                if (lam > 0.0f)
                    for (int k = 0; k < 8; k++) u += w[i][k] * val[idx[i][k] * ncc + c];
            }
            d[c] += s;
            if (lam > 0.0f && c + ch0 > 0) d[c] = vx_fit_coarse_blend(d[c], u, lam); /* colour only */
        }
    }
    for (int i = 0; i < na; i++) memset(f->lv[act[i]].grad, 0, vx_fit_coarse_entries(f, act[i]) * sizeof(float));
    return 0;
}

void vx_fit_coarse_window(const vx_fit_model *f, int l, int k0[3], int n[3]) {
    const vx_fit_level *c = &f->lv[l];
    vx_fit_coarse_map m;
    double h, ch;
    vx__map(f, l, &m, &h, &ch);
    int nf[3] = {f->nx, f->ny, f->nz};
    for (int a = 0; a < 3; a++) {
        float top = (float)(c->n[a] - 1);
        float u0 = vx_clampf(fmaf(m.a[a], 0.0f, m.b[a]), 0.0f, top);
        float u1 = vx_clampf(fmaf(m.a[a], (float)(nf[a] - 1), m.b[a]), 0.0f, top);
        /* a vertex of margin each side: the cut level's map rounds its offset anew */
        int lo = (int)floorf(u0) - 1, hi = (int)floorf(u1) + 2;
        if (lo > c->n[a] - 2) lo = c->n[a] - 2;
        if (lo < 0) lo = 0;
        if (hi > c->n[a] - 1) hi = c->n[a] - 1;
        if (hi < lo + 1) hi = lo + 1;
        k0[a] = lo;
        n[a] = hi - lo + 1;
    }
}

int vx_fit_coarse_cut(vx_fit_level *c, const int k0[3], const int n[3], int ncc) {
    for (int a = 0; a < 3; a++)
        if (k0[a] < 0 || n[a] < 2 || k0[a] + n[a] > c->n[a])
            return vx_error("fit: coarse level cut %d+%d outside its %d vertices on axis %d", k0[a], n[a], c->n[a], a);
    float *arr[4], *old[4] = {c->grad, c->m, c->v, c->val};
    int nk = c->val ? 4 : 3;
    if (vx__level_arrays((size_t)n[0] * n[1] * n[2] * (size_t)ncc, c->val != NULL, arr)) return -1;
    size_t row = (size_t)n[0] * ncc;
    for (int k = 0; k < nk; k++)
        for (int z = 0; z < n[2]; z++)
            for (int y = 0; y < n[1]; y++) {
                size_t from = (((size_t)(z + k0[2]) * c->n[1] + (size_t)(y + k0[1])) * c->n[0] + (size_t)k0[0]) * ncc;
                memcpy(arr[k] + ((size_t)z * n[1] + y) * row, old[k] + from, row * sizeof(float));
            }
    for (int a = 0; a < 3; a++) {
        double ch = (c->hi[a] - c->lo[a]) / c->n[a], lo = c->lo[a];
        c->lo[a] = lo + k0[a] * ch;
        c->hi[a] = lo + (k0[a] + n[a]) * ch;
        c->n[a] = n[a];
    }
    for (int k = 0; k < 4; k++) free(old[k]);
    c->grad = arr[0];
    c->m = arr[1];
    c->v = arr[2];
    c->val = arr[3];
    return 0;
}

int vx_fit_coarse_rebox_cpu(vx_fit_model *f) {
    for (int l = 0; l < f->nlevels; l++) {
        int k0[3], n[3];
        vx_fit_coarse_window(f, l, k0, n);
        if (!memcmp(n, f->lv[l].n, sizeof n)) continue; /* the whole level is read */
        if (vx_fit_coarse_cut(&f->lv[l], k0, n, vx_fit_coarse_nch(f))) return -1;
    }
    return 0;
}

int vx_fit_coarse_reshape(vx_fit_level *c, const vx_fit_level *like, int ncc) {
    float *arr[4];
    if (vx__level_arrays((size_t)like->n[0] * like->n[1] * like->n[2] * (size_t)ncc, c->val != NULL, arr)) return -1;
    free(c->grad);
    free(c->m);
    free(c->v);
    free(c->val);
    c->grad = arr[0];
    c->m = arr[1];
    c->v = arr[2];
    c->val = arr[3];
    memcpy(c->n, like->n, sizeof c->n);
    memcpy(c->lo, like->lo, sizeof c->lo);
    memcpy(c->hi, like->hi, sizeof c->hi);
    return 0;
}
