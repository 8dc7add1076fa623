/* grid.c - allocation, placement and statistics of vx_grid (see grid.h). Loaders call
 * vx_grid_alloc with sizes they have already checked against the file; the renderers
 * ask for the index box, the world<->index affines and value ranges. */
#include "grid.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

int vx_grid_alloc(vx_grid *g, int nx, int ny, int nz, int nc, const char *source) {
    memset(g, 0, sizeof *g);
    snprintf(g->source, sizeof g->source, "%s", source ? source : "grid");
    if (nx < 1 || ny < 1 || nz < 1 || nx > 65536 || ny > 65536 || nz > 65536)
        return vx_error("%s: grid size %dx%dx%d is outside 1..65536 per axis", g->source, nx, ny, nz);
    if (nc < 1 || nc > 64)
        return vx_error("%s: %d channels; voxray supports 1..64", g->source, nc);
    size_t count, bytes;
    if (vx_mul_size4((size_t)nx, (size_t)ny, (size_t)nz, (size_t)nc, &count) ||
        vx_mul_size(count, sizeof(float), &bytes) || bytes > vx_mem_budget()) {
        char what[1200];
        snprintf(what, sizeof what, "%s: grid %dx%dx%d with %d channels", g->source, nx, ny, nz, nc);
        return vx_mem_refuse(what, count > SIZE_MAX / 4 ? SIZE_MAX : count * 4);
    }
    g->data = vx_malloc(bytes, g->source);
    if (!g->data) return -1;
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    g->src_dtype = VX_DT_F32;
    g->align_corners = 1;
    g->i2w[0] = g->i2w[5] = g->i2w[10] = 1.0;
    return 0;
}

void vx_grid_free(vx_grid *g) {
    free(g->data);
    g->data = NULL;
    if (g->sparse) {
        free(g->sparse->table);
        free(g->sparse->pool);
        free(g->sparse);
        g->sparse = NULL;
    }
}

size_t vx_grid_count(const vx_grid *g) {
    return (size_t)g->nx * g->ny * g->nz * g->nc;
}

const float *vx_grid_voxel(const vx_grid *g, int x, int y, int z) {
    if (g->sparse) return vx_sparse_voxel(g->sparse, x, y, z);
    return g->data + (((size_t)z * g->ny + y) * g->nx + x) * (size_t)g->nc;
}

int vx_grid_visit(const vx_grid *g, vx_grid_visit_fn fn, void *ctx) {
    if (!g->sparse) return fn(ctx, g->data, (size_t)g->nx * g->ny * g->nz, 1);
    const vx_sparse *s = g->sparse;
    const size_t nc = (size_t)s->nc;
    size_t absent = 0;
    int rc;
    for (int bz = 0; bz < s->bn[2]; bz++)
        for (int by = 0; by < s->bn[1]; by++)
            for (int bx = 0; bx < s->bn[0]; bx++) {
                int32_t slot = s->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx];
                int sx = g->nx - bx * VX_BRICK, sy = g->ny - by * VX_BRICK, sz = g->nz - bz * VX_BRICK;
                if (sx > VX_BRICK) sx = VX_BRICK;
                if (sy > VX_BRICK) sy = VX_BRICK;
                if (sz > VX_BRICK) sz = VX_BRICK;
                if (slot < 0) { absent += (size_t)sx * sy * sz; continue; }
                const float *b = s->pool + (size_t)slot * VX_BRICK_VOXELS * nc;
                if (sx == VX_BRICK && sy == VX_BRICK && sz == VX_BRICK) {
                    if ((rc = fn(ctx, b, VX_BRICK_VOXELS, 1))) return rc;
                    continue;
                }
                for (int z = 0; z < sz; z++) /* a brick at a far face: its in-lattice rows */
                    for (int y = 0; y < sy; y++)
                        if ((rc = fn(ctx, b + (size_t)(z * VX_BRICK + y) * VX_BRICK * nc, (size_t)sx, 1))) return rc;
            }
    return absent ? fn(ctx, s->background, 1, absent) : 0;
}

void vx_grid_copy_meta(const vx_grid *src, vx_grid *dst) {
    dst->nx = src->nx; dst->ny = src->ny; dst->nz = src->nz; dst->nc = src->nc;
    dst->src_dtype = src->src_dtype;
    memcpy(dst->i2w, src->i2w, sizeof dst->i2w);
    dst->align_corners = src->align_corners;
    memcpy(dst->source, src->source, sizeof dst->source);
}

void vx_grid_set_bbox(vx_grid *g, const double lo[3], const double hi[3], int align_corners) {
    int n[3] = {g->nx, g->ny, g->nz};
    memset(g->i2w, 0, sizeof g->i2w);
    for (int a = 0; a < 3; a++) {
        double ext = hi[a] - lo[a], s, t;
        if (align_corners) {
            s = n[a] > 1 ? ext / (n[a] - 1) : ext;
            t = n[a] > 1 ? lo[a] : 0.5 * (lo[a] + hi[a]);
        } else {
            s = ext / n[a];
            t = lo[a] + 0.5 * s;
        }
        g->i2w[a * 4 + a] = s;
        g->i2w[a * 4 + 3] = t;
    }
    g->align_corners = align_corners;
}

void vx_grid_index_box(const vx_grid *g, float lo[3], float hi[3]) {
    int n[3] = {g->nx, g->ny, g->nz};
    for (int a = 0; a < 3; a++) {
        if (g->align_corners && n[a] > 1) { lo[a] = 0.0f; hi[a] = (float)(n[a] - 1); }
        else { lo[a] = -0.5f; hi[a] = (float)n[a] - 0.5f; }
    }
}

void vx_grid_world_bounds(const vx_grid *g, double lo[3], double hi[3]) {
    float blo[3], bhi[3];
    vx_grid_index_box(g, blo, bhi);
    for (int a = 0; a < 3; a++) { lo[a] = DBL_MAX; hi[a] = -DBL_MAX; }
    for (int c = 0; c < 8; c++) {
        double p[3] = {c & 1 ? bhi[0] : blo[0], c & 2 ? bhi[1] : blo[1], c & 4 ? bhi[2] : blo[2]};
        for (int a = 0; a < 3; a++) {
            const double *m = g->i2w + 4 * a;
            double w = m[0] * p[0] + m[1] * p[1] + m[2] * p[2] + m[3];
            if (w < lo[a]) lo[a] = w;
            if (w > hi[a]) hi[a] = w;
        }
    }
}

/* The renderers work in float: the camera distance, its square and every sample point
 * derive from the world box and the spacing, so both are bounded here (15.1). */
static int vx__placement_fits_float(const vx_grid *g) {
    static const char *ax = "xyz";
    double sp[3], lo[3], hi[3];
    vx_grid_spacing(g, sp);
    for (int a = 0; a < 3; a++)
        if (!(sp[a] >= VX_MIN_SPACING && sp[a] <= VX_MAX_SPACING))
            return vx_error("%s: placement: voxel spacing along %c is %g world units (expected %g..%g)",
                            g->source, ax[a], sp[a], VX_MIN_SPACING, VX_MAX_SPACING);
    vx_grid_world_bounds(g, lo, hi);
    for (int a = 0; a < 3; a++)
        if (!(fabs(lo[a]) <= VX_MAX_WORLD && fabs(hi[a]) <= VX_MAX_WORLD))
            return vx_error("%s: placement: the grid's world box reaches %g along %c (expected within +-%g)",
                            g->source, fabs(lo[a]) > fabs(hi[a]) ? lo[a] : hi[a], ax[a], VX_MAX_WORLD);
    return 0;
}

int vx_grid_world_to_index(const vx_grid *g, float w2i[12]) {
    const double *m = g->i2w;
    double a = m[0], b = m[1], c = m[2], d = m[4], e = m[5], f = m[6], gg = m[8], h = m[9], k = m[10];
    double det = a * (e * k - f * h) - b * (d * k - f * gg) + c * (d * h - e * gg);
    for (int i = 0; i < 12; i++)
        if (!isfinite(m[i])) return vx_error("%s: placement (index-to-world) has a non-finite entry", g->source);
    if (vx__placement_fits_float(g)) return -1;
    double scale = fabs(a) + fabs(b) + fabs(c) + fabs(d) + fabs(e) + fabs(f) + fabs(gg) + fabs(h) + fabs(k);
    if (!(fabs(det) > 1e-12 * scale * scale * scale) || scale == 0)
        return vx_error("%s: placement (index-to-world) is singular", g->source);
    double inv[9] = {
        (e * k - f * h) / det, (c * h - b * k) / det, (b * f - c * e) / det,
        (f * gg - d * k) / det, (a * k - c * gg) / det, (c * d - a * f) / det,
        (d * h - e * gg) / det, (b * gg - a * h) / det, (a * e - b * d) / det};
    for (int r = 0; r < 3; r++) {
        double t = -(inv[r * 3] * m[3] + inv[r * 3 + 1] * m[7] + inv[r * 3 + 2] * m[11]);
        for (int col = 0; col < 3; col++) w2i[r * 4 + col] = (float)inv[r * 3 + col];
        w2i[r * 4 + 3] = (float)t;
    }
    return 0;
}

void vx_grid_spacing(const vx_grid *g, double sp[3]) {
    for (int a = 0; a < 3; a++)
        sp[a] = sqrt(g->i2w[a] * g->i2w[a] + g->i2w[4 + a] * g->i2w[4 + a] + g->i2w[8 + a] * g->i2w[8 + a]);
}

typedef struct { int nc, channel; float lo, hi; } vx__range_ctx;

static int vx__range_visit(void *p, const float *v, size_t n, size_t weight) {
    vx__range_ctx *c = p;
    (void)weight;
    for (size_t i = 0; i < n; i++) {
        float x = v[i * c->nc + c->channel];
        if (!isfinite(x)) continue;
        if (x < c->lo) c->lo = x;
        if (x > c->hi) c->hi = x;
    }
    return 0;
}

void vx_grid_range(const vx_grid *g, int channel, float *mn, float *mx) {
    vx__range_ctx c = {g->nc, channel, INFINITY, -INFINITY};
    vx_grid_visit(g, vx__range_visit, &c);
    if (c.lo > c.hi) c.lo = c.hi = 0.0f;
    *mn = c.lo;
    *mx = c.hi;
}

enum { VX__QBINS = 4096 };
typedef struct { int nc; float lo; double scale; size_t *hist, total; } vx__hist_ctx;

static int vx__hist_visit(void *p, const float *v, size_t n, size_t weight) {
    vx__hist_ctx *c = p;
    for (size_t i = 0; i < n; i++) {
        float x = v[i * c->nc];
        if (!isfinite(x)) continue;
        double t = ((double)x - c->lo) * c->scale; /* double: x - lo may overflow float */
        int b = t > 0 ? (t < VX__QBINS - 1 ? (int)t : VX__QBINS - 1) : 0;
        c->hist[b] += weight;
        c->total += weight;
    }
    return 0;
}

float vx_grid_quantile(const vx_grid *g, double q) {
    float lo, hi;
    vx_grid_range(g, 0, &lo, &hi);
    if (!(hi > lo)) return lo;
    static _Thread_local size_t hist[VX__QBINS];
    memset(hist, 0, sizeof hist);
    vx__hist_ctx c = {g->nc, lo, VX__QBINS / ((double)hi - lo), hist, 0};
    vx_grid_visit(g, vx__hist_visit, &c);
    size_t want = (size_t)(q * (double)c.total), acc = 0;
    for (int b = 0; b < VX__QBINS; b++) {
        acc += hist[b];
        if (acc > want) return (float)(lo + (b + 0.5) / c.scale);
    }
    return hi;
}

const char *vx_dtype_name(vx_dtype t) {
    static const char *names[] = {"float32", "float16", "float64", "uint8", "int8",
                                  "uint16", "int16", "uint32", "int32"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

size_t vx_dtype_size(vx_dtype t) {
    static const size_t sizes[] = {4, 2, 8, 1, 1, 2, 2, 4, 4};
    return (unsigned)t < sizeof sizes / sizeof *sizes ? sizes[t] : 0;
}
