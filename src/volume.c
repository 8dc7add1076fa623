/* volume.c - prepares what every backend renders from (volume.h): the march parameters
 * from a scene and the render options (step-to-dt, per-ray bound, background, decoder),
 * the grid's storage, and the occupancy grid for empty-space skipping. backend.c calls it
 * for both the CPU and the CUDA renderer; the fit's validation renders use it too. */
#include "volume.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparse_grid.h"
#include "vx_common.h"

void vx_render_opts_default(vx_render_opts *o) {
    memset(o, 0, sizeof *o);
    o->step = 0.0f; /* the scene's */
    o->stop = 1e-4f;
}

/* Channel-0 range over lattice points [lo, hi] (inclusive, per axis) of a dense grid. */
static void vx__range_dense(const vx_grid *g, const int lo[3], const int hi[3], float *mn, float *mx) {
    for (int z = lo[2]; z <= hi[2]; z++)
        for (int y = lo[1]; y <= hi[1]; y++) {
            const float *row = g->data + (((size_t)z * g->ny + y) * g->nx) * g->nc;
            for (int x = lo[0]; x <= hi[0]; x++) {
                float v = row[(size_t)x * g->nc];
                *mn = v < *mn ? v : *mn;
                *mx = v > *mx ? v : *mx;
            }
        }
}

int vx_occupancy_build_cpu(const vx_grid *g, const vx_decoder *d, int cell, unsigned char **occ, int dims[3]) {
    int n[3] = {g->nx, g->ny, g->nz};
    for (int a = 0; a < 3; a++) dims[a] = n[a] > 1 ? (n[a] - 1) / cell + 1 : 1;
    size_t count = (size_t)dims[0] * dims[1] * dims[2];
    unsigned char *o = vx_malloc(count, "occupancy grid");
    if (!o) return -1;
    const vx_sparse *sp = g->sparse;
    #pragma omp parallel for schedule(dynamic)
    for (int cz = 0; cz < dims[2]; cz++) {
        for (int cy = 0; cy < dims[1]; cy++) {
            for (int cx = 0; cx < dims[0]; cx++) {
                int c[3] = {cx, cy, cz}, lo[3], hi[3];
                for (int a = 0; a < 3; a++) { /* trilinear footprint, one lattice point of margin */
                    lo[a] = vx_maxi(c[a] * cell - 1, 0);
                    hi[a] = vx_mini(c[a] * cell + cell, n[a] - 1);
                }
                float mn = INFINITY, mx = -INFINITY;
                if (sp) vx_sparse_range(sp, lo, hi, &mn, &mx);
                else vx__range_dense(g, lo, hi, &mn, &mx);
                o[((size_t)cz * dims[1] + cy) * dims[0] + cx] = vx_decoder_max_sigma(d, mn, mx) > 0.0f;
            }
        }
    }
    *occ = o;
    return 0;
}

/* Everything in the march parameters except the occupancy grid. */
static int vx__march_params(vx_march_params *m, const vx_scene *s, const vx_render_opts *o) {
    memset(m, 0, sizeof *m);
    const vx_grid *g = &s->grid;
    if (vx_grid_world_to_index(g, m->w2i)) return -1;
    m->nx = g->nx; m->ny = g->ny; m->nz = g->nz; m->nc = g->nc;
    if (m->nc > VX_MAX_CHANNELS) return vx_error("%s: %d channels; the renderer supports %d", g->source, m->nc, VX_MAX_CHANNELS);
    vx_grid_index_box(g, m->box_lo, m->box_hi);
    double sp[3];
    vx_grid_spacing(g, sp);
    double smin = fmin(sp[0], fmin(sp[1], sp[2]));
    float step = o->step > 0 ? o->step : s->step;
    if (!(step > 0) || !isfinite(step)) return vx_error("step %g must be > 0", step);
    m->dt = (float)(step * smin);
    if (!(m->dt > 0) || !isfinite(m->dt)) return vx_error("%s: voxel spacing gives a step of %g", g->source, m->dt);
    /* bound the work per ray: the longest chord over dt */
    double lo[3], hi[3];
    vx_grid_world_bounds(g, lo, hi);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
    if (diag / m->dt > 1e7) return vx_error("step %g gives more than 10 million samples per ray", step);
    /* and per ray in index space, whatever the direction: a chord of index length L has
     * world length at most L * |i2w|_F, so it holds at most that / dt segments (the
     * slab test can report an unbounded chord for index directions below 1e-12) */
    double fro = 0.0, ilen = 0.0;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) fro += g->i2w[4 * r + c] * g->i2w[4 * r + c];
    for (int a = 0; a < 3; a++) ilen += (double)(m->box_hi[a] - m->box_lo[a]) * (m->box_hi[a] - m->box_lo[a]);
    double cap = ceil(sqrt(ilen) * sqrt(fro) / m->dt) + 2.0;
    if (!(cap < 1e8)) return vx_error("%s: the placement allows %.3g samples per ray", g->source, cap);
    m->max_segments = (int)cap;
    if (!(o->stop >= 0 && o->stop < 1)) return vx_error("--stop %g must be in [0, 1)", o->stop);
    m->stop = o->stop;
    m->jitter_seed = o->jitter;
    m->own = o->own;
    for (int a = 0; a < 3; a++) {
        m->own_lo[a] = o->own ? o->own_lo[a] : -3.0e38f;
        m->own_hi[a] = o->own ? o->own_hi[a] : 3.0e38f;
    }
    for (int c = 0; c < 3; c++) m->bg[c] = o->has_background ? o->background[c] : s->background[c];
    m->dec = s->dec;
    return 0;
}

static int vx__occ_cell_size(const vx_render_opts *o) { return o->occ_cell > 0 ? o->occ_cell : 8; }

/* Build v->occ for v->mp's decoder; fills occ_b/occ_n and the statistics. */
static int vx__volume_occupancy(vx_volume *v, const vx_grid *g, int cell) {
    int n[3];
    if (vx_occupancy_build_cpu(g, &v->mp.dec, cell, &v->occ, n)) return -1;
    vx_march_set_occ(&v->mp, cell, n);
    v->occ_count = (size_t)v->mp.occ_n[0] * v->mp.occ_n[1] * v->mp.occ_n[2];
    size_t empty = 0;
    for (size_t i = 0; i < v->occ_count; i++) empty += !v->occ[i];
    v->occ_empty_fraction = (double)empty / (double)v->occ_count;
    return 0;
}

int vx_volume_prepare(vx_volume *v, const vx_scene *s, const vx_render_opts *o) {
    memset(v, 0, sizeof *v);
    if (vx__march_params(&v->mp, s, o)) return -1;
    v->data = s->grid.data;
    v->sparse = s->grid.sparse;
    return o->no_skip ? 0 : vx__volume_occupancy(v, &s->grid, vx__occ_cell_size(o));
}

int vx_volume_update(vx_volume *v, const vx_scene *s, const vx_render_opts *o) {
    vx_march_params m;
    if (vx__march_params(&m, s, o)) return -1; /* v is left as it was */
    int cell = vx__occ_cell_size(o);
    int keep = v->occ && !o->no_skip && v->mp.occ_b == cell && !memcmp(&m.dec, &v->mp.dec, sizeof m.dec);
    if (keep) {
        vx_march_set_occ(&m, v->mp.occ_b, v->mp.occ_n);
        v->mp = m;
        return 0;
    }
    vx_volume nv = {.mp = m, .data = s->grid.data, .sparse = s->grid.sparse};
    if (!o->no_skip && vx__volume_occupancy(&nv, &s->grid, cell)) return -1;
    vx_volume_free(v);
    *v = nv;
    return 0;
}

void vx_volume_free(vx_volume *v) {
    free(v->occ);
    v->occ = NULL;
}

