/* fit_coarse.c - the CPU coarse level of `voxray fit --coarse` (fit_coarse.h): allocation,
 * the restriction of the fine gradient onto the coarse grid, its Adam step and the
 * prolongation of that step into the fine grid. The reference of kernels/fit_coarse.cuh. */
#include "fit_coarse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit_march.h"
#include "vx_common.h"

int vx_fit_coarse_init_cpu(vx_fit_model *f, int res) {
    if (res < 2 || res > 1024) return vx_error("fit: --coarse %d is outside 2..1024", res);
    if (f->nc < 2) return vx_error("fit: the coarse level needs colour channels (the model has %d)", f->nc);
    if (f->cn[0]) return vx_error("fit: the model has a coarse level already");
    double edge[3], longest = 0.0;
    for (int a = 0; a < 3; a++) {
        edge[a] = f->box_hi[a] - f->box_lo[a];
        longest = fmax(longest, edge[a]);
    }
    for (int a = 0; a < 3; a++) {
        f->cn[a] = (int)fmax(2.0, ceil(res * edge[a] / longest - 1e-9));
        f->coarse_lo[a] = f->box_lo[a];
        f->coarse_hi[a] = f->box_hi[a];
    }
    size_t n = vx_fit_coarse_entries(f);
    f->coarse_grad = vx_calloc(n, sizeof(float), "fit coarse gradient");
    f->coarse_m = vx_calloc(n, sizeof(float), "fit coarse Adam first moment");
    f->coarse_v = vx_calloc(n, sizeof(float), "fit coarse Adam second moment");
    if (!f->coarse_grad || !f->coarse_m || !f->coarse_v) {
        vx_fit_coarse_free(f);
        return -1;
    }
    return 0;
}

int vx_fit_coarse_map_of(const vx_fit_model *f, vx_fit_coarse_map *m) {
    int n[3] = {f->nx, f->ny, f->nz};
    for (int a = 0; a < 3; a++) {
        double h = (f->box_hi[a] - f->box_lo[a]) / n[a], ch = (f->coarse_hi[a] - f->coarse_lo[a]) / f->cn[a];
        m->n[a] = f->cn[a];
        m->a[a] = (float)(h / ch);
        m->b[a] = (float)((f->box_lo[a] + 0.5 * h - f->coarse_lo[a]) / ch - 0.5);
        if (!(h > 0) || !(ch >= 2.0 * h * (1.0 - 1e-6)))
            return vx_error("fit: --coarse: a coarse voxel (%g) must be at least twice the fine one (%g) on axis %d; "
                            "give a coarse resolution at most half the first stage's", ch, h, a);
    }
    return 0;
}

int vx_fit_coarse_restrict_cpu(vx_fit_model *f) {
    if (!f->cn[0]) return 0;
    vx_fit_coarse_map m;
    if (vx_fit_coarse_map_of(f, &m)) return -1;
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    size_t nv = vx_fit_storage_voxels(f);
    int nc = f->nc, ncc = nc - 1;
    for (size_t v = 0; v < nv; v++) {
        if (!f->alive[v]) continue;
        const float *g = f->grad + v * nc + 1;
        int any = 0, x, y, z;
        for (int c = 0; c < ncc && !any; c++) any = g[c] != 0.0f;
        if (!any || vx_fit_xyz(&L, v, &x, &y, &z)) continue;
        size_t idx[8];
        float w[8];
        vx_fit_coarse_corners(&m, x, y, z, idx, w);
        for (int k = 0; k < 8; k++) {
            if (w[k] == 0.0f) continue;
            float *o = f->coarse_grad + idx[k] * ncc;
            for (int c = 0; c < ncc; c++) o[c] += w[k] * g[c];
        }
    }
    return 0;
}

int vx_fit_coarse_apply_cpu(vx_fit_model *f, const vx_fit_hparams *h, float lr) {
    if (!f->cn[0]) return 0;
    vx_fit_coarse_map m;
    if (vx_fit_coarse_map_of(f, &m)) return -1;
    float bc1 = (float)(1.0 - pow(h->beta1, (double)f->t)), bc2 = (float)(1.0 - pow(h->beta2, (double)f->t));
    size_t n = vx_fit_coarse_entries(f);
    float *step = f->coarse_grad; /* each entry's gradient, consumed, becomes its step */
    for (size_t j = 0; j < n; j++) {
        float x = 0.0f;
        vx_fit_adam_update(&x, f->coarse_m + j, f->coarse_v + j, step[j], lr, h->beta1, h->beta2, h->eps, bc1, bc2, 0);
        step[j] = x;
    }
    vx_fit_index L;
    vx_fit_index_of(f, &L);
    size_t nv = vx_fit_storage_voxels(f);
    int nc = f->nc, ncc = nc - 1;
    for (size_t v = 0; v < nv; v++) {
        int x, y, z;
        if (!f->alive[v] || vx_fit_xyz(&L, v, &x, &y, &z)) continue;
        size_t idx[8];
        float w[8];
        vx_fit_coarse_corners(&m, x, y, z, idx, w);
        float *d = f->data + v * nc + 1;
        for (int c = 0; c < ncc; c++) {
            float s = 0.0f;
            for (int k = 0; k < 8; k++) s += w[k] * step[idx[k] * ncc + c];
            d[c] += s;
        }
    }
    memset(step, 0, n * sizeof(float));
    return 0;
}
