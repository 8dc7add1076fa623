/* fit_errmap.c - the error map of error-driven ray sampling (fit_errmap.h): tiles of the
 * training photos, their recent squared error, and the CDF the next rays are drawn from. */
#include "fit_errmap.h"

#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

/* The tile weights as a CDF in m->cdf: running sums in double, stored, then normalised
 * (loops by view, tile row and column, no division per tile: the 250k tiles of 100
 * photos of 800x800 take 2 ms on the 2-core CI machine, every 16 steps). */
static void vx__build_cdf(vx_fit_errmap *m) {
    const vx_fit_tiles *t = &m->t;
    double mean = 0.0;
    for (int k = 0; k < t->n; k++) mean += m->err[k];
    mean /= t->n;
    if (!(mean > 0.0)) { /* every error 0 (a perfect fit): uniform over pixels */
        for (int k = 0; k < t->n; k++) m->err[k] = 1.0f;
        mean = 1.0;
    }
    double floor = 0.01 * mean, run = 0.0;
    int k = 0;
    for (int v = 0; v < t->views; v++)
        for (int ti = 0; ti < t->ty; ti++) {
            int th = vx_mini(t->tile, t->h - ti * t->tile);
            for (int tj = 0; tj < t->tx; tj++, k++) {
                int tw = vx_mini(t->tile, t->w - tj * t->tile);
                m->cdf[k] = (float)run;
                run += ((double)m->err[k] + floor) * (double)(th * tw);
            }
        }
    float inv = (float)(1.0 / run);
    for (k = 0; k < t->n; k++) m->cdf[k] *= inv;
    m->cdf[t->n] = 1.0f;
    m->version++;
}

int vx_fit_errmap_init(vx_fit_errmap *m, const vx_dataset *d, float fraction, int batch) {
    memset(m, 0, sizeof *m);
    if (!(fraction > 0.0f && fraction <= 1.0f)) return vx_error("fit: --error-map %g is outside (0, 1]", fraction);
    vx_fit_tiles *t = &m->t;
    t->views = d->n; t->w = d->width; t->h = d->height;
    t->tile = vx_maxi(1, (vx_maxi(d->width, d->height) + 49) / 50);
    t->tx = (d->width + t->tile - 1) / t->tile;
    t->ty = (d->height + t->tile - 1) / t->tile;
    if ((long long)t->tx * t->ty * d->n >= (1ll << 30))
        return vx_error("fit: %d views of %dx%d pixels make too many error-map tiles", d->n, d->width, d->height);
    t->n = t->tx * t->ty * d->n;
    t->n_map = (int)(fraction * (float)batch + 0.5f);
    m->err = vx_malloc((size_t)t->n * sizeof(float), "fit error map");
    m->acc = vx_calloc((size_t)t->n * 2, sizeof(float), "fit error sums");
    m->cdf = vx_malloc(((size_t)t->n + 1) * sizeof(float), "fit error CDF");
    if (!m->err || !m->acc || !m->cdf) { vx_fit_errmap_free(m); return -1; }
    for (int k = 0; k < t->n; k++) m->err[k] = 1.0f;
    t->cdf = m->cdf;
    vx__build_cdf(m);
    return 0;
}

void vx_fit_errmap_free(vx_fit_errmap *m) {
    free(m->err); free(m->acc); free(m->cdf);
    memset(m, 0, sizeof *m);
}

void vx_fit_errmap_add_cpu(const vx_fit_tiles *t, uint64_t seed, int n, const float *ray_err, float *acc) {
    for (int r = 0; r < n; r++) {
        int v, i, j;
        vx_fit_pick_pixel_map(t, seed, (unsigned long long)r, &v, &i, &j);
        int k = vx_fit_tile_of(t, v, i, j);
        acc[2 * k] += ray_err[r];
        acc[2 * k + 1] += 1.0f;
    }
}

void vx_fit_errmap_update(vx_fit_errmap *m) {
    for (int k = 0; k < m->t.n; k++) {
        if (m->acc[2 * k + 1] > 0.0f) m->err[k] = m->acc[2 * k] / m->acc[2 * k + 1];
        m->acc[2 * k] = m->acc[2 * k + 1] = 0.0f;
    }
    vx__build_cdf(m);
}
