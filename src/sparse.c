/* sparse.c - the sparse grid's host side (sparse_grid.h): checked allocation, the brick
 * drop rule, re-thinning, sparse -> dense, and statistics. Building bricks (dense -> sparse,
 * make-scene --sparse) lives in sparse_build.c, the file form in sparse_io.c. */
#include "sparse_grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

/* ---- storage ------------------------------------------------------------------------------ */

static int vx__table_size(int nx, int ny, int nz, int nc, int bn[3], size_t *entries, const char *what) {
    if (nx < 1 || ny < 1 || nz < 1 || nx > 65536 || ny > 65536 || nz > 65536)
        return vx_error("%s: grid size %dx%dx%d is outside 1..65536 per axis", what, nx, ny, nz);
    if (nc < 1 || nc > VX_SPARSE_MAX_CHANNELS)
        return vx_error("%s: %d channels; voxray supports 1..%d", what, nc, VX_SPARSE_MAX_CHANNELS);
    bn[0] = (nx + VX_BRICK - 1) / VX_BRICK;
    bn[1] = (ny + VX_BRICK - 1) / VX_BRICK;
    bn[2] = (nz + VX_BRICK - 1) / VX_BRICK;
    *entries = (size_t)bn[0] * bn[1] * bn[2]; /* <= 8192^3: no overflow in size_t */
    return 0;
}

int vx_sparse_pool_bytes(size_t nbricks, int nc, size_t *bytes, const char *what) {
    if (vx_mul_size4(nbricks, VX_BRICK_VOXELS, (size_t)nc, sizeof(float), bytes) || *bytes > VX_MAX_SPARSE_BYTES)
        return vx_error("%s: %zu bricks of %d channels need more than the %zu GiB allowed for a brick pool", what,
                        nbricks, nc, VX_MAX_SPARSE_BYTES >> 30);
    if (*bytes > vx_mem_budget()) return vx_mem_refuse(what, *bytes); /* --max-memory, as for dense grids */
    return 0;
}

int vx_sparse_alloc(vx_sparse *s, int nx, int ny, int nz, int nc, size_t nbricks, const char *what) {
    memset(s, 0, sizeof *s);
    if (!what) what = "sparse grid";
    size_t entries = 0, bytes = 0;
    if (vx__table_size(nx, ny, nz, nc, s->bn, &entries, what)) return -1;
    if (entries * sizeof(int32_t) > VX_MAX_SPARSE_BYTES)
        return vx_error("%s: a brick table for %dx%dx%d needs more than the %zu GiB allowed", what, nx, ny, nz,
                        VX_MAX_SPARSE_BYTES >> 30);
    if (nbricks > entries)
        return vx_error("%s: %zu bricks but the table has only %zu entries", what, nbricks, entries);
    if (vx_sparse_pool_bytes(nbricks, nc, &bytes, what)) return -1;
    s->table = vx_malloc(entries * sizeof(int32_t), what);
    if (!s->table) return -1;
    memset(s->table, 0xff, entries * sizeof(int32_t)); /* -1 */
    if (nbricks) {
        s->pool = vx_malloc(bytes, what);
        if (!s->pool) { free(s->table); s->table = NULL; return -1; }
    }
    s->nc = nc;
    s->nbricks = nbricks;
    return 0;
}

void vx_sparse_free(vx_sparse *s) {
    if (!s) return;
    free(s->table);
    free(s->pool);
    s->table = NULL;
    s->pool = NULL;
    s->nbricks = 0;
}

static int vx__span(int n, int b) { /* lattice points of brick index b along an axis of n */
    int lo = b * VX_BRICK, hi = lo + VX_BRICK < n ? lo + VX_BRICK : n;
    return hi - lo;
}

size_t vx_sparse_brick_voxels(int nx, int ny, int nz, int bx, int by, int bz) {
    return (size_t)vx__span(nx, bx) * vx__span(ny, by) * vx__span(nz, bz);
}

/* ---- the drop rule -------------------------------------------------------------------------- */

void vx_sparse_default_background(const vx_grid *dense, const vx_decoder *dec, float *bg) {
    memset(bg, 0, sizeof(float) * (size_t)dense->nc);
    int scalar = dec ? dec->type == VX_DEC_SCALAR : dense->nc == 1;
    if (!scalar) return;
    for (int c = 0; c < dense->nc; c++) {
        float lo, hi;
        vx_grid_range(dense, c, &lo, &hi);
        bg[c] = lo;
    }
}

int vx_sparse_keep(const vx_decoder *dec, float threshold, float bg0, int all_background, float lo, float hi) {
    if (all_background) return 0;
    if (!dec) return 1;
    if (bg0 < lo) lo = bg0;
    if (bg0 > hi) hi = bg0;
    return vx_decoder_max_sigma(dec, lo, hi) > threshold;
}

/* ---- dense <-> sparse (building: sparse_build.c) ------------------------------------------- */

/* The drop rule on a sparse grid: slot[k] = 0 to keep table entry k, -1 to drop. */
static void vx__rethin_flags(const vx_grid *in, const vx_decoder *dec, float threshold, int32_t *slot) {
    const vx_sparse *a = in->sparse;
    const int nx = in->nx, ny = in->ny, nz = in->nz, nc = a->nc, bnx = a->bn[0], bny = a->bn[1];
    const size_t ntable = (size_t)bnx * bny * a->bn[2];
    const float *bg = a->background;
#pragma omp parallel for schedule(dynamic, 64)
    for (long long k = 0; k < (long long)ntable; k++) {
        slot[k] = -1;
        if (a->table[k] < 0) continue; /* all background: dropped by either rule */
        int bx = (int)(k % bnx), by = (int)(k / bnx % bny), bz = (int)(k / bnx / bny);
        int x0 = bx * VX_BRICK, y0 = by * VX_BRICK, z0 = bz * VX_BRICK;
        int x1 = x0 + vx__span(nx, bx), y1 = y0 + vx__span(ny, by), z1 = z0 + vx__span(nz, bz);
        int all_bg = 1;
        for (int z = z0; z < z1 && all_bg; z++)
            for (int y = y0; y < y1 && all_bg; y++)
                for (int x = x0; x < x1 && all_bg; x++) {
                    const float *v = vx_sparse_voxel(a, x, y, z);
                    for (int c = 0; c < nc; c++)
                        if (v[c] != bg[c]) { all_bg = 0; break; }
                }
        float lo = INFINITY, hi = -INFINITY;
        if (!all_bg && dec)
            { /* the brick grown by one lattice point (its cells' trilinear footprint) */
                int q0[3] = {x0 > 0 ? x0 - 1 : 0, y0 > 0 ? y0 - 1 : 0, z0 > 0 ? z0 - 1 : 0};
                int q1[3] = {x1 < nx ? x1 : nx - 1, y1 < ny ? y1 : ny - 1, z1 < nz ? z1 : nz - 1};
                vx_sparse_range(a, q0, q1, &lo, &hi);
            }
        slot[k] = vx_sparse_keep(dec, threshold, bg[0], all_bg, lo, hi) ? 0 : -1;
    }
}

/* Copy brick src into dst with the points past the lattice set to the background. */
static void vx__copy_brick(const vx_sparse *a, int nx, int ny, int nz, size_t k, const float *src, float *dst) {
    const int nc = a->nc, bnx = a->bn[0], bny = a->bn[1];
    int bx = (int)(k % (size_t)bnx), by = (int)(k / (size_t)bnx % (size_t)bny), bz = (int)(k / (size_t)bnx / (size_t)bny);
    for (int l = 0; l < VX_BRICK_VOXELS; l++) {
        int x = bx * VX_BRICK + (l & 7), y = by * VX_BRICK + (l >> 3 & 7), z = bz * VX_BRICK + (l >> 6);
        const float *v = x < nx && y < ny && z < nz ? src + (size_t)l * nc : a->background;
        if (v != dst + (size_t)l * nc) memmove(dst + (size_t)l * nc, v, sizeof(float) * (size_t)nc);
    }
}

int vx_sparse_rethin(const vx_grid *in, const vx_decoder *dec, float threshold, vx_grid *out) {
    memset(out, 0, sizeof *out);
    const vx_sparse *a = in->sparse;
    if (!a) return vx_error("%s: vx_sparse_rethin needs a sparse grid", in->source);
    const int nc = a->nc;
    const size_t ntable = (size_t)a->bn[0] * a->bn[1] * a->bn[2];
    int32_t *slot = vx_malloc(ntable * sizeof(int32_t), in->source);
    if (!slot) return -1;
    vx__rethin_flags(in, dec, threshold, slot);
    size_t n = 0;
    for (size_t k = 0; k < ntable; k++)
        if (slot[k] >= 0) slot[k] = (int32_t)n++;
    vx_sparse *s = vx_calloc(1, sizeof *s, in->source);
    if (!s || vx_sparse_alloc(s, in->nx, in->ny, in->nz, nc, n, in->source)) { free(s); free(slot); return -1; }
    memcpy(s->table, slot, ntable * sizeof(int32_t));
    memcpy(s->background, a->background, sizeof(float) * (size_t)nc);
    free(slot);
#pragma omp parallel for schedule(dynamic, 64)
    for (long long k = 0; k < (long long)ntable; k++)
        if (s->table[k] >= 0)
            vx__copy_brick(a, in->nx, in->ny, in->nz, (size_t)k, a->pool + (size_t)a->table[k] * VX_BRICK_VOXELS * nc,
                           s->pool + (size_t)s->table[k] * VX_BRICK_VOXELS * nc);
    vx_grid_copy_meta(in, out);
    out->sparse = s;
    return 0;
}

int vx_sparse_rethin_inplace(vx_grid *g, const vx_decoder *dec, float threshold) {
    vx_sparse *a = g->sparse;
    if (!a) return vx_error("%s: vx_sparse_rethin needs a sparse grid", g->source);
    const size_t ntable = (size_t)a->bn[0] * a->bn[1] * a->bn[2], bsize = (size_t)VX_BRICK_VOXELS * a->nc;
    int32_t last = -1;
    int ordered = 1;
    for (size_t k = 0; k < ntable && ordered; k++)
        if (a->table[k] >= 0) { ordered = a->table[k] > last; last = a->table[k]; }
    if (!ordered) { /* pool in another order: thin into a copy */
        vx_grid out;
        if (vx_sparse_rethin(g, dec, threshold, &out)) return -1;
        vx_grid_free(g);
        *g = out;
        return 0;
    }
    int32_t *slot = vx_malloc(ntable * sizeof(int32_t), g->source);
    if (!slot) return -1;
    vx__rethin_flags(g, dec, threshold, slot);
    size_t n = 0;
    for (size_t k = 0; k < ntable; k++) { /* new slot <= old slot: moving down in order is safe */
        if (a->table[k] < 0) continue;
        if (slot[k] < 0) { a->table[k] = -1; continue; }
        vx__copy_brick(a, g->nx, g->ny, g->nz, k, a->pool + (size_t)a->table[k] * bsize, a->pool + n * bsize);
        a->table[k] = (int32_t)n++;
    }
    free(slot);
    a->nbricks = n;
    if (n == 0) { free(a->pool); a->pool = NULL; }
    else {
        float *p = realloc(a->pool, n * bsize * sizeof(float));
        if (p) a->pool = p;
    }
    return 0;
}

int vx_sparse_to_dense(const vx_grid *sp, vx_grid *dense) {
    memset(dense, 0, sizeof *dense);
    if (vx_grid_alloc(dense, sp->nx, sp->ny, sp->nz, sp->nc, sp->source)) return -1;
    vx_grid_copy_meta(sp, dense);
    const size_t nc = (size_t)sp->nc;
    if (!sp->sparse) {
        memcpy(dense->data, sp->data, vx_grid_count(sp) * sizeof(float));
        return 0;
    }
#pragma omp parallel for schedule(static)
    for (int z = 0; z < sp->nz; z++)
        for (int y = 0; y < sp->ny; y++) {
            float *dst = dense->data + ((size_t)z * sp->ny + y) * sp->nx * nc;
            for (int x = 0; x < sp->nx; x++) memcpy(dst + x * nc, vx_sparse_voxel(sp->sparse, x, y, z), nc * sizeof(float));
        }
    return 0;
}

int vx_grid_densify(vx_grid *g) {
    if (!g->sparse) return 0;
    vx_grid d;
    if (vx_sparse_to_dense(g, &d)) return -1;
    vx_grid_free(g);
    *g = d;
    return 0;
}

/* ---- statistics ------------------------------------------------------------------------------- */

void vx_sparse_stats_of(const vx_grid *g, vx_sparse_stats *st) {
    memset(st, 0, sizeof *st);
    st->bytes_dense = vx_grid_count(g) * sizeof(float);
    if (!g->sparse) {
        st->bytes_sparse = st->bytes_dense;
        return;
    }
    const vx_sparse *s = g->sparse;
    st->bricks = s->nbricks;
    st->table_entries = (size_t)s->bn[0] * s->bn[1] * s->bn[2];
    st->fill = st->table_entries ? (double)s->nbricks / (double)st->table_entries : 0.0;
    st->bytes_sparse = s->nbricks * VX_BRICK_VOXELS * (size_t)s->nc * sizeof(float) + st->table_entries * sizeof(int32_t);
}

void vx_sparse_brick_ranges(const vx_grid *g, float *lo, float *hi) {
    const vx_sparse *a = g->sparse;
    const int nx = g->nx, ny = g->ny, nz = g->nz, bnx = a->bn[0], bny = a->bn[1], bnz = a->bn[2];
    const size_t ntable = (size_t)bnx * bny * bnz;
    const float bg = a->background[0];
#pragma omp parallel for schedule(dynamic, 256)
    for (long long k = 0; k < (long long)ntable; k++) {
        int bx = (int)(k % bnx), by = (int)(k / bnx % bny), bz = (int)(k / bnx / bny), any = 0;
        for (int dz = -1; dz <= 1 && !any; dz++) /* the brick or a neighbour present? */
            for (int dy = -1; dy <= 1 && !any; dy++)
                for (int dx = -1; dx <= 1 && !any; dx++) {
                    int x = bx + dx, y = by + dy, z = bz + dz;
                    if (x >= 0 && y >= 0 && z >= 0 && x < bnx && y < bny && z < bnz)
                        any = a->table[((size_t)z * bny + y) * bnx + x] >= 0;
                }
        float l = bg, h = bg;
        if (any) {
            int x0 = bx * VX_BRICK, y0 = by * VX_BRICK, z0 = bz * VX_BRICK;
            int x1 = x0 + vx__span(nx, bx), y1 = y0 + vx__span(ny, by), z1 = z0 + vx__span(nz, bz);
            l = INFINITY; h = -INFINITY;
            { /* the brick grown by one lattice point (its cells' trilinear footprint) */
                int q0[3] = {x0 > 0 ? x0 - 1 : 0, y0 > 0 ? y0 - 1 : 0, z0 > 0 ? z0 - 1 : 0};
                int q1[3] = {x1 < nx ? x1 : nx - 1, y1 < ny ? y1 : ny - 1, z1 < nz ? z1 : nz - 1};
                vx_sparse_range(a, q0, q1, &l, &h);
            }
        }
        lo[k] = l;
        hi[k] = h;
    }
}

/* The same over sparse bricks: each brick the box touches contributes its voxels in the
 * box when present, the background once when absent. */
void vx_sparse_range(const vx_sparse *sp, const int lo[3], const int hi[3], float *mn, float *mx) {
    int b0[3], b1[3];
    for (int a = 0; a < 3; a++) { b0[a] = lo[a] >> VX_BRICK_LOG2; b1[a] = hi[a] >> VX_BRICK_LOG2; }
    for (int bz = b0[2]; bz <= b1[2]; bz++)
        for (int by = b0[1]; by <= b1[1]; by++)
            for (int bx = b0[0]; bx <= b1[0]; bx++) {
                int32_t slot = sp->table[((size_t)bz * sp->bn[1] + by) * sp->bn[0] + bx];
                if (slot < 0) {
                    float v = sp->background[0];
                    *mn = v < *mn ? v : *mn;
                    *mx = v > *mx ? v : *mx;
                    continue;
                }
                int q0[3] = {vx_maxi(lo[0], bx * VX_BRICK), vx_maxi(lo[1], by * VX_BRICK), vx_maxi(lo[2], bz * VX_BRICK)};
                int q1[3] = {vx_mini(hi[0], bx * VX_BRICK + VX_BRICK - 1), vx_mini(hi[1], by * VX_BRICK + VX_BRICK - 1),
                             vx_mini(hi[2], bz * VX_BRICK + VX_BRICK - 1)};
                /* the brick's own rows, read straight from its slot (this loop is most of
                 * the occupancy build, which runs on every open) */
                float lmn = *mn, lmx = *mx;
                for (int z = q0[2]; z <= q1[2]; z++)
                    for (int y = q0[1]; y <= q1[1]; y++) {
                        const float *row = sp->pool + ((size_t)slot * VX_BRICK_VOXELS +
                                                       ((size_t)(z & (VX_BRICK - 1)) * VX_BRICK + (y & (VX_BRICK - 1))) * VX_BRICK) *
                                                          (size_t)sp->nc;
                        for (int x = q0[0]; x <= q1[0]; x++) {
                            float v = row[(size_t)(x & (VX_BRICK - 1)) * sp->nc];
                            lmn = v < lmn ? v : lmn;
                            lmx = v > lmx ? v : lmx;
                        }
                    }
                *mn = lmn;
                *mx = lmx;
            }
}
