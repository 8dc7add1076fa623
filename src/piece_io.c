/* piece_io.c - a sort-last piece's grid (piece.h): sparse bricks with the whole grid's
 * lattice and placement but only the bricks of the piece's stored box, cut from a loaded
 * grid or read from a .npy row by row (the sparse .npz reader is in sparse_io.c). The
 * renderers read it like any sparse grid; samples outside the piece are never asked for. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "piece.h"
#include "sparse_grid.h"
#include "vx_common.h"

static size_t vx__box_bricks(const int blo[3], const int bhi[3]) {
    size_t k = 1;
    for (int a = 0; a < 3; a++) k *= bhi[a] > blo[a] ? (size_t)(bhi[a] - blo[a]) : 0;
    return k;
}

/* Replace g's storage by s (g keeps its lattice, placement and source). */
static void vx__adopt(vx_grid *g, vx_sparse *s) {
    free(g->data);
    g->data = NULL;
    if (g->sparse) { vx_sparse_free(g->sparse); free(g->sparse); }
    g->sparse = s;
}

int vx_piece_cut(vx_grid *g, const int blo[3], const int bhi[3]) {
    const vx_sparse *in = g->sparse;
    int bn[3] = {(g->nx + 7) / 8, (g->ny + 7) / 8, (g->nz + 7) / 8}, nc = g->nc;
    size_t nb = 0;
    for (int z = blo[2]; z < bhi[2]; z++)
        for (int y = blo[1]; y < bhi[1]; y++)
            for (int x = blo[0]; x < bhi[0]; x++)
                nb += !in || in->table[((size_t)z * bn[1] + y) * bn[0] + x] >= 0;
    if (!in && vx__box_bricks(blo, bhi) == 0) nb = 0;
    vx_sparse *s = calloc(1, sizeof *s);
    if (!s) return vx_error("%s: out of memory", g->source);
    if (vx_sparse_alloc(s, g->nx, g->ny, g->nz, nc, nb, g->source)) { free(s); return -1; }
    if (in) memcpy(s->background, in->background, sizeof(float) * (size_t)nc);
    else vx_sparse_default_background(g, NULL, s->background);
    size_t slot = 0, bv = (size_t)VX_BRICK_VOXELS * nc;
    for (int z = blo[2]; z < bhi[2]; z++)
        for (int y = blo[1]; y < bhi[1]; y++)
            for (int x = blo[0]; x < bhi[0]; x++) {
                size_t t = ((size_t)z * bn[1] + y) * bn[0] + x;
                if (in && in->table[t] < 0) continue; /* before dst: a piece of absent bricks has no pool (NULL) */
                float *dst = s->pool + slot * bv;
                if (in) {
                    memcpy(dst, in->pool + (size_t)in->table[t] * bv, bv * sizeof(float));
                } else {
                    memset(dst, 0, bv * sizeof(float)); /* voxels past the lattice: never read */
                    for (int k = 0; k < VX_BRICK && z * 8 + k < g->nz; k++)
                        for (int j = 0; j < VX_BRICK && y * 8 + j < g->ny; j++) {
                            int run = g->nx - x * 8 < VX_BRICK ? g->nx - x * 8 : VX_BRICK;
                            memcpy(dst + ((size_t)(k * VX_BRICK + j) * VX_BRICK) * nc,
                                   g->data + ((((size_t)z * 8 + k) * g->ny + y * 8 + j) * g->nx + x * 8) * nc,
                                   (size_t)run * nc * sizeof(float));
                        }
                }
                s->table[t] = (int32_t)slot++;
            }
    vx__adopt(g, s);
    return 0;
}

int vx_piece_weights(const vx_grid *g, uint32_t **w) {
    *w = NULL;
    if (!g->sparse) return 0;
    const vx_sparse *s = g->sparse;
    size_t n = (size_t)s->bn[0] * s->bn[1] * s->bn[2];
    uint32_t *v = vx_malloc(n * sizeof *v, "brick weights");
    if (!v) return -1;
    for (size_t i = 0; i < n; i++) {
        int bx = (int)(i % (size_t)s->bn[0]), by = (int)(i / s->bn[0] % (size_t)s->bn[1]), bz = (int)(i / s->bn[0] / s->bn[1]);
        v[i] = s->table[i] >= 0 ? (uint32_t)vx_sparse_brick_voxels(g->nx, g->ny, g->nz, bx, by, bz) : 0;
    }
    *w = v;
    return 0;
}

/* ---- .npy, read piece-wise ------------------------------------------------------------------ */

int vx_piece_load_npy(const char *path, vx_piece_req *req, vx_grid *g) {
    memset(g, 0, sizeof *g);
    req->done = 0;
    FILE *f = vx_fopen_read(path);
    if (!f) return -1;
    unsigned char head[65536 + 16];
    size_t got = fread(head, 1, sizeof head, f);
    vx_npy_header h;
    int rc = -1;
    float *row = NULL;
    unsigned char *raw = NULL;
    vx_sparse *s = NULL;
    if (fseek(f, 0, SEEK_END) != 0) { vx_error("%s: cannot seek", path); goto done; }
    long fsize = ftell(f);
    if (fsize < 0 || vx_npy_parse_header(head, got, path, &h)) goto done;
    if (h.ndim != 4 || h.shape[3] < 2) { /* scalar volumes: the decoder needs the whole grid */
        fclose(f);
        return vx_npy_load_grid(path, g);
    }
    if (h.dtype != VX_DT_F32 && h.dtype != VX_DT_F16 && h.dtype != VX_DT_U8 && h.dtype != VX_DT_U16) {
        vx_error("%s: grid dtype %s is not supported (float32, float16, uint8, uint16)", path, vx_dtype_name(h.dtype));
        goto done;
    }
    for (int i = 0; i < 4; i++)
        if (h.shape[i] == 0 || h.shape[i] > 65536) { vx_error("%s: grid shape entry %zu is outside 1..65536", path, h.shape[i]); goto done; }
    if (h.shape[3] > 64) { vx_error("%s: grid has %zu channels; voxray supports 1..64", path, h.shape[3]); goto done; }
    int nx = (int)h.shape[2], ny = (int)h.shape[1], nz = (int)h.shape[0], nc = (int)h.shape[3];
    size_t es = vx_dtype_size(h.dtype), need;
    if (vx_mul_size((size_t)nx * ny, (size_t)nz * nc, &need) || vx_mul_size(need, es, &need) ||
        (size_t)fsize != h.data_offset + need) {
        vx_error("%s: .npy data is %ld bytes after the header, the shape needs %zu", path,
                 fsize - (long)h.data_offset, need);
        goto done;
    }
    int n[3] = {nx, ny, nz}, blo[3], bhi[3];
    if (vx_piece_plan_make(&req->plan, n, req->count, NULL)) goto done;
    vx_piece_store_box(&req->plan, req->index, req->lo_margin, blo, bhi);
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    g->src_dtype = h.dtype;
    snprintf(g->source, sizeof g->source, "%s", path);
    size_t nb = vx__box_bricks(blo, bhi), bv = (size_t)VX_BRICK_VOXELS * nc;
    s = calloc(1, sizeof *s);
    if (!s) { vx_error("%s: out of memory", path); goto done; }
    if (vx_sparse_alloc(s, nx, ny, nz, nc, nb, path)) { free(s); s = NULL; goto done; }
    if (nb) memset(s->pool, 0, nb * bv * sizeof(float));
    size_t slot = 0;
    for (int z = blo[2]; z < bhi[2]; z++)
        for (int y = blo[1]; y < bhi[1]; y++)
            for (int x = blo[0]; x < bhi[0]; x++) s->table[((size_t)z * s->bn[1] + y) * s->bn[0] + x] = (int32_t)slot++;
    /* one run of x per lattice row of the box */
    int x0 = blo[0] * 8, x1 = bhi[0] * 8 < nx ? bhi[0] * 8 : nx, run = x1 - x0;
    raw = malloc((size_t)(run > 0 ? run : 1) * nc * es);
    row = malloc((size_t)(run > 0 ? run : 1) * nc * sizeof(float));
    if (!raw || !row) { vx_error("%s: out of memory", path); goto done; }
    for (int z = blo[2] * 8; nb && z < bhi[2] * 8 && z < nz; z++)
        for (int y = blo[1] * 8; y < bhi[1] * 8 && y < ny; y++) {
            long off = (long)h.data_offset + (long)((((size_t)z * ny + y) * nx + x0) * nc * es);
            if (fseek(f, off, SEEK_SET) != 0 || fread(raw, es * nc, (size_t)run, f) != (size_t)run) {
                vx_error("%s: read failed at row (y %d, z %d): %s", path, y, z, ferror(f) ? strerror(errno) : "file shrank");
                goto done;
            }
            vx_npy_convert(raw, (size_t)run * nc, h.dtype, h.big_endian, row);
            for (size_t i = 0; i < (size_t)run * nc; i++)
                if (!(fabsf(row[i]) <= VX_MAX_GRID_VALUE)) {
                    vx_error("%s: grid value at voxel (%d, %d, %d), channel %zu is %g; values must be finite and "
                             "within +-%g", path, x0 + (int)(i / nc), y, z, i % nc, row[i], VX_MAX_GRID_VALUE);
                    goto done;
                }
            for (int x = x0; x < x1; x++) {
                ptrdiff_t o = vx_sparse_offset(s->table, s->bn, nc, x, y, z);
                memcpy(s->pool + o, row + (size_t)(x - x0) * nc, (size_t)nc * sizeof(float));
            }
        }
    g->sparse = s;
    s = NULL;
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(g, lo, hi, 1);
    req->done = 1;
    rc = 0;
done:
    fclose(f);
    free(raw);
    free(row);
    if (s) { vx_sparse_free(s); free(s); }
    if (rc) vx_piece_plan_free(&req->plan);
    return rc;
}
