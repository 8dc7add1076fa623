/* sparse_build.c - building sparse grids (sparse_grid.h): the brick builder, fed either slab
 * by slab from lattice planes (vx_sparse_from_dense, vx_sparse_count_kept) or tile by tile
 * from a procedural source (make-scene --sparse). Both apply one drop rule to one window. */
#include "sparse_grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

static int vx__span(int n, int b) { /* lattice points of brick index b along an axis of n */
    int lo = b * VX_BRICK, hi = lo + VX_BRICK < n ? lo + VX_BRICK : n;
    return hi - lo;
}

/* ---- one brick from a window of lattice points ------------------------------------------------ */

/* Lattice points o[0] .. o[0]+n[0]-1 along x (fastest), o[1] .. along y, o[2] .. along z,
 * nc floats each: a brick and what its drop test reads must lie inside. */
typedef struct {
    const float *v;
    int o[3];
    int n[2];
} vx__win;

static const float *vx__at(const vx__win *w, int nc, int x, int y, int z) {
    return w->v + (((size_t)(z - w->o[2]) * (size_t)w->n[1] + (size_t)(y - w->o[1])) * (size_t)w->n[0] +
                   (size_t)(x - w->o[0])) * (size_t)nc;
}

/* The drop rule (sparse_grid.h) for brick (bx, by, bz): 1 to keep. */
static int vx__brick_keep(const vx_sparse_builder *b, const vx__win *w, int bx, int by, int bz) {
    const int nx = b->nx, ny = b->ny, nz = b->nz, nc = b->s->nc;
    const float *bg = b->s->background;
    int x0 = bx * VX_BRICK, x1 = x0 + vx__span(nx, bx), y0 = by * VX_BRICK, y1 = y0 + vx__span(ny, by);
    int z0 = bz * VX_BRICK, z1 = z0 + vx__span(nz, bz);
    int all_bg = 1;
    for (int z = z0; z < z1 && all_bg; z++)
        for (int y = y0; y < y1 && all_bg; y++) {
            const float *v = vx__at(w, nc, x0, y, z);
            for (int i = 0; i < (x1 - x0) * nc; i++)
                if (v[i] != bg[i % nc]) { all_bg = 0; break; }
        }
    float lo = INFINITY, hi = -INFINITY;
    if (!all_bg && b->dec) { /* channel 0 over the brick dilated by one voxel */
        int dz0 = z0 > 0 ? z0 - 1 : 0, dz1 = z1 < nz ? z1 + 1 : nz;
        int dy0 = y0 > 0 ? y0 - 1 : 0, dy1 = y1 < ny ? y1 + 1 : ny;
        int dx0 = x0 > 0 ? x0 - 1 : 0, dx1 = x1 < nx ? x1 + 1 : nx;
        for (int z = dz0; z < dz1; z++)
            for (int y = dy0; y < dy1; y++) {
                const float *v = vx__at(w, nc, dx0, y, z);
                for (int x = dx0; x < dx1; x++, v += nc) {
                    if (*v < lo) lo = *v;
                    if (*v > hi) hi = *v;
                }
            }
    }
    return vx_sparse_keep(b->dec, b->threshold, bg[0], all_bg, lo, hi);
}

/* The brick's VX_BRICK_VOXELS * nc floats into dst; points past the lattice hold the
 * background, so the bytes depend only on the grid. */
static void vx__brick_copy(const vx_sparse_builder *b, const vx__win *w, int bx, int by, int bz, float *dst) {
    const int nc = b->s->nc, x0 = bx * VX_BRICK, m = vx__span(b->nx, bx);
    const float *bg = b->s->background;
    for (int lz = 0; lz < VX_BRICK; lz++)
        for (int ly = 0; ly < VX_BRICK; ly++) {
            int y = by * VX_BRICK + ly, z = bz * VX_BRICK + lz, in = y < b->ny && z < b->nz ? m : 0;
            if (in) memcpy(dst, vx__at(w, nc, x0, y, z), sizeof(float) * (size_t)in * nc);
            for (int lx = in; lx < VX_BRICK; lx++) memcpy(dst + (size_t)lx * nc, bg, sizeof(float) * (size_t)nc);
            dst += (size_t)VX_BRICK * nc;
        }
}

/* ---- the builder ------------------------------------------------------------------------------ */

int vx_sparse_builder_init(vx_sparse_builder *b, vx_sparse *s, int nx, int ny, int nz, int nc, const float *bg,
                           const vx_decoder *dec, float threshold, const char *what) {
    memset(b, 0, sizeof *b);
    if (vx_sparse_alloc(s, nx, ny, nz, nc, 0, what)) return -1;
    for (int c = 0; c < nc; c++) s->background[c] = bg ? bg[c] : 0.0f;
    b->s = s;
    b->nx = nx; b->ny = ny; b->nz = nz;
    b->dec = dec;
    b->threshold = threshold;
    b->what = what ? what : "sparse grid";
    return 0;
}

static int vx__reserve(vx_sparse_builder *b, size_t want) {
    if (want <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64, bytes;
    while (cap < want) cap *= 2;
    if (vx_sparse_pool_bytes(cap, b->s->nc, &bytes, b->what)) {
        cap = want; /* doubling overshot the limit: try the exact size */
        if (vx_sparse_pool_bytes(cap, b->s->nc, &bytes, b->what)) return -1;
    }
    float *p = realloc(b->s->pool, bytes); /* large blocks grow by mremap, without a copy */
    if (!p) return vx_error("%s: out of memory growing the brick pool to %zu bricks (%zu MiB)", b->what, cap,
                            bytes >> 20);
    b->s->pool = p;
    b->cap = cap;
    return 0;
}

int vx_sparse_builder_slab(vx_sparse_builder *b, const float *win, int wz0, int bz) {
    vx_sparse *s = b->s;
    const int nc = s->nc, bnx = s->bn[0], bny = s->bn[1];
    const vx__win w = {win, {0, 0, wz0}, {b->nx, b->ny}};
    int32_t *row = s->table + (size_t)bz * bny * bnx;
    unsigned char *keep = vx_malloc((size_t)bnx * bny, b->what);
    if (!keep) return -1;
#pragma omp parallel for schedule(dynamic, 4)
    for (int k = 0; k < bnx * bny; k++) keep[k] = (unsigned char)vx__brick_keep(b, &w, k % bnx, k / bnx, bz);
    size_t n = s->nbricks;
    for (int k = 0; k < bnx * bny; k++) row[k] = keep[k] ? (int32_t)n++ : -1;
    if (n > (size_t)INT32_MAX) { free(keep); return vx_error("%s: more than 2^31 bricks", b->what); }
    if (b->count_only) { s->nbricks = n; free(keep); return 0; }
    if (vx__reserve(b, n)) { free(keep); return -1; }
    s->nbricks = n;
#pragma omp parallel for schedule(dynamic, 4)
    for (int k = 0; k < bnx * bny; k++)
        if (row[k] >= 0) vx__brick_copy(b, &w, k % bnx, k / bnx, bz, s->pool + (size_t)row[k] * VX_BRICK_VOXELS * nc);
    free(keep);
    return 0;
}

int vx_sparse_builder_finish(vx_sparse_builder *b) {
    vx_sparse *s = b->s;
    if (s->nbricks == 0) { free(s->pool); s->pool = NULL; b->cap = 0; return 0; }
    if (b->cap > s->nbricks) {
        float *p = realloc(s->pool, s->nbricks * VX_BRICK_VOXELS * (size_t)s->nc * sizeof(float));
        if (p) s->pool = p;
        b->cap = s->nbricks;
    }
    return 0;
}

/* ---- from a procedural source, tile by tile ------------------------------------------------- */

#define VX__TILE 8                             /* bricks per tile edge: 64^3 lattice points */
#define VX__TILE_PTS (VX__TILE * VX_BRICK + 2) /* a tile and its one-point rim, per axis */
#define VX__FLAGS (VX__TILE + 2)               /* bricks a tile's rim touches, per axis */
#define VX__PENDING (-2)                       /* table entry: kept, slot not yet given */

typedef struct {
    float *bricks; /* the tile's kept bricks, in table order */
    size_t count;
    int failed;    /* 1: out of memory */
} vx__tile_out;

/* Grown box of brick b along an axis of n points: [8b - 1, 8b + 8] clipped. */
static void vx__grown(int n, int b, int *lo, int *hi) {
    *lo = b * VX_BRICK - 1 < 0 ? 0 : b * VX_BRICK - 1;
    *hi = b * VX_BRICK + VX_BRICK > n - 1 ? n - 1 : b * VX_BRICK + VX_BRICK;
}

/* Tile t (tile coordinates) into its table entries (-1 or VX__PENDING) and out. `win` holds
 * VX__TILE_PTS^3 * nc floats, `skip` VX__FLAGS^3 bytes, both the calling thread's. */
static void vx__tile(const vx_sparse_builder *b, const vx_sparse_source *src, int use_empty, const int t[3],
                     float *win, unsigned char *skip, vx__tile_out *out) {
    const vx_sparse *s = b->s;
    const int n[3] = {b->nx, b->ny, b->nz}, nc = s->nc;
    int b0[3], b1[3], w0[3], w1[3], f0[3], fn[3];
    for (int a = 0; a < 3; a++) {
        b0[a] = t[a] * VX__TILE;                                   /* the tile's bricks: b0 .. b1-1 */
        b1[a] = vx_mini(b0[a] + VX__TILE, s->bn[a]);
        w0[a] = vx_maxi(b0[a] * VX_BRICK - 1, 0);                  /* lattice points its bricks' drop */
        w1[a] = vx_mini(b1[a] * VX_BRICK, n[a] - 1);               /* tests read: w0 .. w1 */
        f0[a] = vx_maxi(b0[a] - 1, 0);                             /* bricks holding them: f0 .. */
        fn[a] = vx_mini(b1[a], s->bn[a] - 1) - f0[a] + 1;
    }
    if (use_empty && src->empty(src->user, w0, w1)) return;
    /* skip[f]: brick f's grown box is provably empty, so its points read channel 0 = 0 and the
     * rule drops it */
    int live = 0;
    for (int i = 0; i < fn[0] * fn[1] * fn[2]; i++) {
        int f[3] = {f0[0] + i % fn[0], f0[1] + i / fn[0] % fn[1], f0[2] + i / (fn[0] * fn[1])}, lo[3], hi[3];
        for (int a = 0; a < 3; a++) vx__grown(n[a], f[a], &lo[a], &hi[a]);
        skip[i] = (unsigned char)(use_empty && src->empty(src->user, lo, hi));
        int inside = f[0] >= b0[0] && f[0] < b1[0] && f[1] >= b0[1] && f[1] < b1[1] && f[2] >= b0[2] && f[2] < b1[2];
        live += inside && !skip[i];
    }
    if (!live) return;
    /* the window, where a live brick of the tile reads it: points of live bricks (and of rim
     * bricks not skipped) from the source, of skipped bricks 0 */
    const vx__win w = {win, {w0[0], w0[1], w0[2]}, {w1[0] - w0[0] + 1, w1[1] - w0[1] + 1}};
    for (int i = 0; i < fn[0] * fn[1] * fn[2]; i++) {
        int f[3] = {f0[0] + i % fn[0], f0[1] + i / fn[0] % fn[1], f0[2] + i / (fn[0] * fn[1])}, lo[3], hi[3];
        int need = 0;
        for (int j = 0; j < 27 && !need; j++) { /* a live tile brick at most one brick away? */
            int g[3] = {f[0] + j % 3 - 1, f[1] + j / 3 % 3 - 1, f[2] + j / 9 - 1};
            if (g[0] < b0[0] || g[0] >= b1[0] || g[1] < b0[1] || g[1] >= b1[1] || g[2] < b0[2] || g[2] >= b1[2]) continue;
            need = !skip[((g[2] - f0[2]) * fn[1] + (g[1] - f0[1])) * fn[0] + (g[0] - f0[0])];
        }
        if (!need) continue;
        for (int a = 0; a < 3; a++) {
            lo[a] = vx_maxi(f[a] * VX_BRICK, w0[a]);
            hi[a] = vx_mini(f[a] * VX_BRICK + VX_BRICK - 1, w1[a]);
        }
        for (int z = lo[2]; z <= hi[2]; z++)
            for (int y = lo[1]; y <= hi[1]; y++) {
                float *row = (float *)vx__at(&w, nc, lo[0], y, z);
                if (skip[i]) memset(row, 0, sizeof(float) * (size_t)(hi[0] - lo[0] + 1) * nc);
                else src->row(src->user, lo[0], hi[0] - lo[0] + 1, y, z, row);
            }
    }
    /* the drop rule, then the kept bricks in table order */
    size_t kept = 0;
    for (int bz = b0[2]; bz < b1[2]; bz++)
        for (int by = b0[1]; by < b1[1]; by++)
            for (int bx = b0[0]; bx < b1[0]; bx++) {
                int i = ((bz - f0[2]) * fn[1] + (by - f0[1])) * fn[0] + (bx - f0[0]);
                int keep = !skip[i] && vx__brick_keep(b, &w, bx, by, bz);
                s->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx] = keep ? VX__PENDING : -1;
                kept += (size_t)keep;
            }
    if (!kept || b->count_only) { out->count = kept; return; }
    out->bricks = malloc(kept * VX_BRICK_VOXELS * (size_t)nc * sizeof(float));
    if (!out->bricks) { out->failed = 1; return; }
    out->count = kept;
    float *dst = out->bricks;
    for (int bz = b0[2]; bz < b1[2]; bz++)
        for (int by = b0[1]; by < b1[1]; by++)
            for (int bx = b0[0]; bx < b1[0]; bx++)
                if (s->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx] == VX__PENDING) {
                    vx__brick_copy(b, &w, bx, by, bz, dst);
                    dst += (size_t)VX_BRICK_VOXELS * nc;
                }
}

int vx_sparse_builder_source(vx_sparse_builder *b, const vx_sparse_source *src) {
    vx_sparse *s = b->s;
    const int nc = s->nc, tn[3] = {(s->bn[0] + VX__TILE - 1) / VX__TILE, (s->bn[1] + VX__TILE - 1) / VX__TILE,
                                   (s->bn[2] + VX__TILE - 1) / VX__TILE};
    /* empty() may stand in for the source only where the rule drops what it proves empty */
    const int use_empty = src->empty && b->dec && !vx_sparse_keep(b->dec, b->threshold, s->background[0], 0, 0.0f, 0.0f);
    const int ntile = tn[0] * tn[1];
    const size_t bsize = (size_t)VX_BRICK_VOXELS * nc;
    vx__tile_out *outs = vx_calloc((size_t)ntile, sizeof *outs, b->what);
    if (!outs) return -1;
    int rc = 0;
    for (int tz = 0; tz < tn[2] && !rc; tz++) {
        int failed = 0;
        memset(outs, 0, sizeof *outs * (size_t)ntile);
#pragma omp parallel
        {
            float *win = malloc(sizeof(float) * VX__TILE_PTS * VX__TILE_PTS * VX__TILE_PTS * (size_t)nc);
            unsigned char *skip = malloc(VX__FLAGS * VX__FLAGS * VX__FLAGS);
            if (!win || !skip) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int i = 0; i < ntile; i++) {
                int t[3] = {i % tn[0], i / tn[0], tz};
                if (win && skip) vx__tile(b, src, use_empty, t, win, skip, &outs[i]);
            }
            free(win);
            free(skip);
        }
        for (int i = 0; i < ntile; i++) failed |= outs[i].failed;
        /* slots in table order over the slab's bricks */
        size_t n = s->nbricks, first = (size_t)tz * VX__TILE * s->bn[1] * s->bn[0];
        size_t last = (size_t)vx_mini((tz + 1) * VX__TILE, s->bn[2]) * s->bn[1] * s->bn[0];
        for (size_t k = first; k < last && n <= (size_t)INT32_MAX; k++)
            if (s->table[k] == VX__PENDING) s->table[k] = (int32_t)n++;
        if (failed) rc = vx_error("%s: out of memory building bricks", b->what);
        else if (n > (size_t)INT32_MAX) rc = vx_error("%s: more than 2^31 bricks", b->what);
        else if (!b->count_only && (rc = vx__reserve(b, n)) == 0) {
            s->nbricks = n;
#pragma omp parallel for schedule(dynamic, 1)
            for (int i = 0; i < ntile; i++) { /* each tile's bricks to their slots, in order */
                const float *src_b = outs[i].bricks;
                if (!src_b) continue;
                int t[3] = {i % tn[0], i / tn[0], tz};
                for (int bz = t[2] * VX__TILE; bz < vx_mini((t[2] + 1) * VX__TILE, s->bn[2]); bz++)
                    for (int by = t[1] * VX__TILE; by < vx_mini((t[1] + 1) * VX__TILE, s->bn[1]); by++)
                        for (int bx = t[0] * VX__TILE; bx < vx_mini((t[0] + 1) * VX__TILE, s->bn[0]); bx++) {
                            int32_t slot = s->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx];
                            if (slot < 0) continue;
                            memcpy(s->pool + (size_t)slot * bsize, src_b, bsize * sizeof(float));
                            src_b += bsize;
                        }
            }
        } else if (b->count_only) s->nbricks = n;
        for (int i = 0; i < ntile; i++) free(outs[i].bricks);
    }
    free(outs);
    return rc;
}

/* ---- dense -> sparse ------------------------------------------------------------------------- */

int vx_sparse_from_dense_bg(const vx_grid *dense, const vx_decoder *dec, float threshold, const float *bg,
                            vx_grid *out) {
    memset(out, 0, sizeof *out);
    if (dense->sparse || !dense->data) return vx_error("%s: vx_sparse_from_dense needs a dense grid", dense->source);
    vx_sparse *s = vx_calloc(1, sizeof *s, dense->source);
    if (!s) return -1;
    vx_sparse_builder b;
    if (vx_sparse_builder_init(&b, s, dense->nx, dense->ny, dense->nz, dense->nc, bg, dec, threshold, dense->source)) {
        free(s);
        return -1;
    }
    for (int bz = 0; bz < s->bn[2]; bz++)
        if (vx_sparse_builder_slab(&b, dense->data, 0, bz)) { vx_sparse_free(s); free(s); return -1; }
    vx_sparse_builder_finish(&b);
    vx_grid_copy_meta(dense, out);
    out->sparse = s;
    return 0;
}

int vx_sparse_from_dense(const vx_grid *dense, const vx_decoder *dec, float threshold, vx_grid *out) {
    float bg[VX_SPARSE_MAX_CHANNELS];
    if (dense->nc < 1 || dense->nc > VX_SPARSE_MAX_CHANNELS)
        return vx_error("%s: %d channels; voxray supports 1..%d", dense->source, dense->nc, VX_SPARSE_MAX_CHANNELS);
    vx_sparse_default_background(dense, dec, bg);
    return vx_sparse_from_dense_bg(dense, dec, threshold, bg, out);
}

int vx_sparse_count_kept(const vx_grid *dense, const vx_decoder *dec, float threshold, size_t *bricks,
                         size_t *table_entries) {
    if (dense->sparse || !dense->data) return vx_error("%s: vx_sparse_count_kept needs a dense grid", dense->source);
    if (dense->nc < 1 || dense->nc > VX_SPARSE_MAX_CHANNELS)
        return vx_error("%s: %d channels; voxray supports 1..%d", dense->source, dense->nc, VX_SPARSE_MAX_CHANNELS);
    float bg[VX_SPARSE_MAX_CHANNELS];
    vx_sparse_default_background(dense, dec, bg);
    vx_sparse s;
    vx_sparse_builder b;
    if (vx_sparse_builder_init(&b, &s, dense->nx, dense->ny, dense->nz, dense->nc, bg, dec, threshold, dense->source))
        return -1;
    b.count_only = 1;
    int rc = 0;
    for (int bz = 0; bz < s.bn[2] && !rc; bz++) rc = vx_sparse_builder_slab(&b, dense->data, 0, bz);
    *bricks = s.nbricks;
    *table_entries = (size_t)s.bn[0] * s.bn[1] * s.bn[2];
    vx_sparse_free(&s);
    return rc;
}
