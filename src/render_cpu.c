/* render_cpu.c - the reference renderer: prepares a vx_volume (march parameters and
 * occupancy grid) from a scene and options, and marches every pixel with vx_march()
 * using OpenMP over rows. The CUDA backend is tested against this. */
#include "render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "vx_common.h"

void vx_render_opts_default(vx_render_opts *o) {
    memset(o, 0, sizeof *o);
    o->step = 0.0f; /* the scene's */
    o->stop = 1e-4f;
}

int vx_frame_alloc(vx_frame *f, int width, int height, int want_depth) {
    memset(f, 0, sizeof *f);
    if (width < 1 || height < 1 || width > 16384 || height > 16384)
        return vx_error("image size %dx%d is outside 1..16384", width, height);
    size_t n = (size_t)width * height;
    f->width = width;
    f->height = height;
    f->rgb = vx_malloc(n * 3 * sizeof(float), "frame colour");
    f->alpha = vx_malloc(n * sizeof(float), "frame opacity");
    f->depth = want_depth ? vx_malloc(n * sizeof(float), "frame depth") : NULL;
    if (!f->rgb || !f->alpha || (want_depth && !f->depth)) { vx_frame_free(f); return -1; }
    return 0;
}

void vx_frame_free(vx_frame *f) {
    free(f->rgb);
    free(f->alpha);
    free(f->depth);
    f->rgb = f->alpha = f->depth = NULL;
}

int vx_occupancy_build_cpu(const vx_grid *g, const vx_decoder *d, int cell, unsigned char **occ, int dims[3]) {
    int n[3] = {g->nx, g->ny, g->nz};
    for (int a = 0; a < 3; a++) dims[a] = n[a] > 1 ? (n[a] - 1) / cell + 1 : 1;
    size_t count = (size_t)dims[0] * dims[1] * dims[2];
    unsigned char *o = vx_malloc(count, "occupancy grid");
    if (!o) return -1;
    int nc = g->nc;
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
                for (int z = lo[2]; z <= hi[2]; z++)
                    for (int y = lo[1]; y <= hi[1]; y++) {
                        const float *row = g->data + (((size_t)z * g->ny + y) * g->nx) * nc;
                        for (int x = lo[0]; x <= hi[0]; x++) {
                            float v = row[(size_t)x * nc];
                            mn = v < mn ? v : mn;
                            mx = v > mx ? v : mx;
                        }
                    }
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
    if (!(o->stop >= 0 && o->stop < 1)) return vx_error("--stop %g must be in [0, 1)", o->stop);
    m->stop = o->stop;
    for (int c = 0; c < 3; c++) m->bg[c] = o->has_background ? o->background[c] : s->background[c];
    m->dec = s->dec;
    return 0;
}

static int vx__occ_cell_size(const vx_render_opts *o) { return o->occ_cell > 0 ? o->occ_cell : 8; }

/* Build v->occ for v->mp's decoder; fills occ_b/occ_n and the statistics. */
static int vx__volume_occupancy(vx_volume *v, const vx_grid *g, int cell) {
    if (vx_occupancy_build_cpu(g, &v->mp.dec, cell, &v->occ, v->mp.occ_n)) return -1;
    v->mp.occ_b = cell;
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
    return o->no_skip ? 0 : vx__volume_occupancy(v, &s->grid, vx__occ_cell_size(o));
}

int vx_volume_update(vx_volume *v, const vx_scene *s, const vx_render_opts *o) {
    vx_march_params m;
    if (vx__march_params(&m, s, o)) return -1; /* v is left as it was */
    int cell = vx__occ_cell_size(o);
    int keep = v->occ && !o->no_skip && v->mp.occ_b == cell && !memcmp(&m.dec, &v->mp.dec, sizeof m.dec);
    if (keep) {
        m.occ_b = v->mp.occ_b;
        memcpy(m.occ_n, v->mp.occ_n, sizeof m.occ_n);
        v->mp = m;
        return 0;
    }
    vx_volume nv = {.mp = m, .data = s->grid.data};
    if (!o->no_skip && vx__volume_occupancy(&nv, &s->grid, cell)) return -1;
    vx_volume_free(v);
    *v = nv;
    return 0;
}

void vx_volume_free(vx_volume *v) {
    free(v->occ);
    v->occ = NULL;
}

int vx_render_cpu(const vx_volume *v, const vx_camera *c, const vx_render_opts *o, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("frame %dx%d does not match the camera %dx%d", f->width, f->height, c->width, c->height);
    long long samples = 0, hit = 0;
    int threads = o && o->threads > 0 ? o->threads : 0;
#ifdef _OPENMP
    if (!threads) threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    #pragma omp parallel for schedule(dynamic, 1) reduction(+ : samples, hit) num_threads(threads)
    for (int i = 0; i < c->height; i++) {
        for (int j = 0; j < c->width; j++) {
            vx_vec3 ro, rd;
            vx_camera_ray(c, (float)j + 0.5f, (float)i + 0.5f, &ro, &rd);
            vx_ray_result r = vx_march(&v->mp, v->data, v->occ, ro, rd);
            size_t p = (size_t)i * c->width + j;
            f->rgb[3 * p] = r.rgb[0];
            f->rgb[3 * p + 1] = r.rgb[1];
            f->rgb[3 * p + 2] = r.rgb[2];
            f->alpha[p] = 1.0f - r.trans;
            if (f->depth) f->depth[p] = r.depth;
            samples += r.samples;
            hit += r.samples > 0 || r.trans < 1.0f;
        }
    }
    f->samples = samples;
    f->rays_hit = hit;
    return 0;
}
