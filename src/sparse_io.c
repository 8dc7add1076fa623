/* sparse_io.c - the sparse grid's file form (docs/FORMAT.md, "Sparse grids"): an .npz
 * (zip via libzip, stored or deflated) of format, shape, brick, background, table, pool.
 * The reader checks every member's dtype and shape against the sizes the zip directory
 * declares, bounds those by the compressed sizes before it allocates, and streams the
 * pool straight into memory; the writer streams the pool out (float32 or float16). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "npy.h"
#include "piece.h"
#include "sparse_grid.h"
#include "vx_common.h"

#define VX__FORMAT_VERSION 1
#define VX__SMALL_MEMBER 4096        /* format, shape, brick, background: at most this many bytes */
#define VX__MAX_NPY_HEADER 65536     /* .npy headers longer than this are refused */
#define VX__DEFLATE_RATIO 1032       /* deflate never expands data by more than this */

/* ---- writing ---------------------------------------------------------------------------------- */

/* A version 1.0 .npy header (magic .. newline, padded to 64 bytes) into buf; its length. */
static size_t vx__npy_header(const char *descr, int ndim, const size_t *shape, unsigned char *buf, size_t cap) {
    char dict[400], dims[256] = "";
    size_t k = 0;
    for (int i = 0; i < ndim; i++)
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%zu,%s", shape[i], i + 1 < ndim ? " " : "");
    if (ndim > 1) dims[k - 1] = 0; /* (a, b) but (a,) */
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64, hlen = (size_t)n + pad + 1;
    if (10 + hlen > cap) return 0;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hlen & 255);
    buf[9] = (unsigned char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', pad);
    buf[10 + hlen - 1] = '\n';
    return 10 + hlen;
}

/* A libzip source that yields an .npy header then n elements of `data`: copied as they
 * are (es bytes each) or, with to_half, float32 converted to float16. Nothing is copied
 * up front, so an 8 GiB pool is written without a second 8 GiB buffer. */
typedef struct {
    unsigned char hdr[256];
    size_t hlen, n, es, pos, total;
    const unsigned char *data;
    int to_half;
    zip_error_t err;
} vx__stream;

static void vx__stream_bytes(const vx__stream *st, size_t off, unsigned char *out, size_t len) {
    while (len) {
        if (off < st->hlen) {
            size_t k = st->hlen - off < len ? st->hlen - off : len;
            memcpy(out, st->hdr + off, k);
            off += k; out += k; len -= k;
            continue;
        }
        size_t p = off - st->hlen, e = p / st->es, within = p % st->es;
        if (within == 0 && len >= st->es) { /* whole elements */
            size_t k = len / st->es;
            if (!st->to_half) memcpy(out, st->data + e * st->es, k * st->es);
            else {
                const float *f = (const float *)(const void *)st->data + e;
                for (size_t i = 0; i < k; i++) {
                    uint16_t h = vx_float_to_half(f[i]);
                    memcpy(out + 2 * i, &h, 2);
                }
            }
            off += k * st->es; out += k * st->es; len -= k * st->es;
            continue;
        }
        unsigned char tmp[8]; /* a partial element */
        if (!st->to_half) memcpy(tmp, st->data + e * st->es, st->es);
        else { uint16_t h = vx_float_to_half(((const float *)(const void *)st->data)[e]); memcpy(tmp, &h, 2); }
        size_t k = st->es - within < len ? st->es - within : len;
        memcpy(out, tmp + within, k);
        off += k; out += k; len -= k;
    }
}

static zip_int64_t vx__stream_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd) {
    vx__stream *st = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN: st->pos = 0; return 0;
    case ZIP_SOURCE_READ: {
        size_t k = st->total - st->pos < len ? st->total - st->pos : (size_t)len;
        vx__stream_bytes(st, st->pos, data, k);
        st->pos += k;
        return (zip_int64_t)k;
    }
    case ZIP_SOURCE_CLOSE: return 0;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *zs = data;
        zip_stat_init(zs);
        zs->size = st->total;
        zs->mtime = 315532800; /* 1980-01-01: the same bytes on every run */
        zs->valid |= ZIP_STAT_SIZE | ZIP_STAT_MTIME;
        return sizeof *zs;
    }
    case ZIP_SOURCE_ERROR: return zip_error_to_data(&st->err, data, len);
    case ZIP_SOURCE_FREE: zip_error_fini(&st->err); free(st); return 0;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                              ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default: zip_error_set(&st->err, ZIP_ER_OPNOTSUPP, 0); return -1;
    }
}

static int vx__add(zip_t *z, const char *path, const char *name, const char *descr, int ndim, const size_t *shape,
                   const void *data, size_t n, size_t es, int to_half, zip_int32_t method) {
    vx__stream *st = calloc(1, sizeof *st);
    if (!st) return vx_error("%s: out of memory", path);
    st->hlen = vx__npy_header(descr, ndim, shape, st->hdr, sizeof st->hdr);
    st->data = data;
    st->n = n;
    st->es = es;
    st->to_half = to_half;
    st->total = st->hlen + n * es;
    zip_error_init(&st->err);
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_function_create(vx__stream_cb, st, &ze);
    if (!src) {
        free(st);
        vx_error("%s: member %s: %s", path, name, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return -1;
    }
    zip_error_fini(&ze);
    zip_int64_t idx = zip_file_add(z, name, src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
        zip_source_free(src);
        return vx_error("%s: member %s: %s", path, name, zip_strerror(z));
    }
    if (zip_set_file_compression(z, (zip_uint64_t)idx, method, method == ZIP_CM_DEFLATE ? 1 : 0) != 0 ||
        zip_file_set_mtime(z, (zip_uint64_t)idx, 315532800, 0) != 0)
        return vx_error("%s: member %s: %s", path, name, zip_strerror(z));
    return 0;
}

int vx_sparse_write(const char *path, const vx_grid *g, int half, vx_sparse_compress compress) {
    const vx_sparse *s = g->sparse;
    if (!s) return vx_error("%s: not a sparse grid", path);
    size_t pool_n = s->nbricks * VX_BRICK_VOXELS * (size_t)s->nc;
    if (half)
        for (size_t i = 0; i < pool_n; i++)
            if (!(fabsf(s->pool[i]) <= 65504.0f))
                return vx_error("%s: pool value %g (brick %zu) does not fit float16; write float32", path,
                                (double)s->pool[i], i / ((size_t)VX_BRICK_VOXELS * s->nc));
    char tmp[4200];
    vx_temp_name(path, tmp, sizeof tmp);
    int err = 0;
    zip_t *z = zip_open(tmp, ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        vx_error("%s: cannot write: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return -1;
    }
    static const int64_t version = VX__FORMAT_VERSION, brick = VX_BRICK;
    int64_t shape[4] = {g->nz, g->ny, g->nx, g->nc};
    size_t d4 = 4, dnc = (size_t)s->nc, tshape[3] = {(size_t)s->bn[2], (size_t)s->bn[1], (size_t)s->bn[0]};
    size_t pshape[5] = {s->nbricks, VX_BRICK, VX_BRICK, VX_BRICK, (size_t)s->nc};
    size_t ntable = tshape[0] * tshape[1] * tshape[2];
    zip_int32_t m = compress == VX_SPARSE_DEFLATE ? ZIP_CM_DEFLATE : ZIP_CM_STORE;
    int rc = vx__add(z, path, "format.npy", "<i8", 0, NULL, &version, 1, 8, 0, m);
    if (!rc) rc = vx__add(z, path, "shape.npy", "<i8", 1, &d4, shape, 4, 8, 0, m);
    if (!rc) rc = vx__add(z, path, "brick.npy", "<i8", 0, NULL, &brick, 1, 8, 0, m);
    if (!rc) rc = vx__add(z, path, "background.npy", "<f4", 1, &dnc, s->background, dnc, 4, 0, m);
    if (!rc) rc = vx__add(z, path, "table.npy", "<i4", 3, tshape, s->table, ntable, 4, 0, m);
    if (!rc) rc = vx__add(z, path, "pool.npy", half ? "<f2" : "<f4", 5, pshape, s->pool, pool_n, half ? 2 : 4, half, m);
    if (rc) { zip_discard(z); remove(tmp); return -1; }
    if (zip_close(z) != 0) {
        vx_error("%s: write failed: %s", path, zip_strerror(z));
        zip_discard(z);
        remove(tmp);
        return -1;
    }
    return vx_commit_temp(tmp, path, 1);
}

/* ---- reading ---------------------------------------------------------------------------------- */

int vx_sparse_is_file(const char *path) {
    unsigned char magic[4];
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0; /* a FIFO would block fopen */
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got != 4 || memcmp(magic, "PK\x03\x04", 4) != 0) return 0;
    int err = 0;
    zip_t *z = zip_open(path, ZIP_RDONLY, &err);
    if (!z) return 0;
    int yes = zip_name_locate(z, "table.npy", 0) >= 0 && zip_name_locate(z, "pool.npy", 0) >= 0;
    zip_discard(z);
    return yes;
}

typedef struct {
    zip_t *z;
    const char *path;
    long long file_size;
} vx__npz;

/* One opened member: its .npy header and the payload bytes that follow it. */
typedef struct {
    const char *name;
    zip_file_t *f;
    vx_npy_header h;
    int is_i64;          /* dtype was int64 (vx_npy_header has no such type) */
    int stored;          /* not compressed: zip_fseek works */
    size_t payload;      /* bytes after the header, from the zip directory */
} vx__member;

static int vx__read_exact(vx__npz *a, vx__member *m, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        size_t want = n - got < ((size_t)1 << 26) ? n - got : ((size_t)1 << 26);
        zip_int64_t r = zip_fread(m->f, (unsigned char *)buf + got, want);
        if (r < 0) return vx_error("%s: member %s: corrupt data (%s)", a->path, m->name, zip_file_strerror(m->f));
        if (r == 0) return vx_error("%s: member %s: data ends early (truncated)", a->path, m->name);
        got += (size_t)r;
    }
    return 0;
}

static void vx__close(vx__member *m) {
    if (m->f) zip_fclose(m->f);
    m->f = NULL;
}

/* Open member NAME, check its sizes against the archive, parse its .npy header. */
static int vx__open_member(vx__npz *a, const char *name, vx__member *m) {
    memset(m, 0, sizeof *m);
    m->name = name;
    zip_int64_t idx = zip_name_locate(a->z, name, 0);
    if (idx < 0) return vx_error("%s: member %s: missing (a sparse grid holds format, shape, brick, background, "
                                 "table and pool)", a->path, name);
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(a->z, (zip_uint64_t)idx, 0, &st) != 0 ||
        (st.valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
            (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD))
        return vx_error("%s: member %s: no sizes in the zip directory", a->path, name);
    if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
        return vx_error("%s: member %s: compression method %d is not supported (stored or deflate)", a->path, name,
                        (int)st.comp_method);
    if (st.comp_size > (zip_uint64_t)a->file_size ||
        (st.comp_method == ZIP_CM_STORE && st.size != st.comp_size) ||
        st.size / VX__DEFLATE_RATIO > st.comp_size + 1024)
        return vx_error("%s: member %s: declares %llu bytes from %llu compressed, which this file cannot hold",
                        a->path, name, (unsigned long long)st.size, (unsigned long long)st.comp_size);
    m->stored = st.comp_method == ZIP_CM_STORE;
    m->f = zip_fopen_index(a->z, (zip_uint64_t)idx, 0);
    if (!m->f) return vx_error("%s: member %s: cannot open (%s)", a->path, name, zip_strerror(a->z));
    unsigned char pre[12], *hdr = NULL;
    if (st.size < 10) { vx__close(m); return vx_error("%s: member %s: not an .npy array (%llu bytes)", a->path, name, (unsigned long long)st.size); }
    if (vx__read_exact(a, m, pre, 10)) { vx__close(m); return -1; }
    size_t start = 10, hlen;
    if (memcmp(pre, "\x93NUMPY", 6) != 0) { vx__close(m); return vx_error("%s: member %s: not an .npy array (bad magic)", a->path, name); }
    if (pre[6] == 1) hlen = pre[8] | (size_t)pre[9] << 8;
    else {
        if (st.size < 12 || vx__read_exact(a, m, pre + 10, 2)) { vx__close(m); return st.size < 12 ? vx_error("%s: member %s: .npy header is truncated", a->path, name) : -1; }
        start = 12;
        hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    }
    if (hlen > VX__MAX_NPY_HEADER || start + hlen > st.size) {
        vx__close(m);
        return vx_error("%s: member %s: .npy header of %zu bytes is truncated or too long", a->path, name, hlen);
    }
    hdr = malloc(start + hlen + 1);
    if (!hdr) { vx__close(m); return vx_error("%s: out of memory", a->path); }
    memcpy(hdr, pre, start);
    if (vx__read_exact(a, m, hdr + start, hlen)) { free(hdr); vx__close(m); return -1; }
    /* int64 is not a vx_dtype: parse it as float64 (same size) and remember */
    char *d = memmem(hdr + start, hlen, "i8'", 3);
    if (!d) d = memmem(hdr + start, hlen, "i8\"", 3);
    if (d && d > (char *)hdr + start && (d[-1] == '<' || d[-1] == '>' || d[-1] == '=')) { *d = 'f'; m->is_i64 = 1; }
    char what[1200];
    snprintf(what, sizeof what, "%s: member %s", a->path, name);
    int rc = vx_npy_parse_header(hdr, start + hlen, what, &m->h);
    free(hdr);
    if (rc) { vx__close(m); return -1; }
    m->payload = (size_t)st.size - m->h.data_offset;
    return 0;
}

static const char *vx__dtype_of(const vx__member *m) {
    return m->is_i64 ? "int64" : vx_dtype_name(m->h.dtype);
}

/* Payload must be exactly n elements of es bytes. */
static int vx__check_payload(vx__npz *a, vx__member *m, size_t n, size_t es) {
    size_t want;
    if (vx_mul_size(n, es, &want) || m->payload != want)
        return vx_error("%s: member %s: shape needs %zu elements of %zu bytes but the member holds %zu bytes", a->path,
                        m->name, n, es, m->payload);
    return 0;
}

static int vx__check_end(vx__npz *a, vx__member *m) {
    unsigned char extra;
    zip_int64_t r = zip_fread(m->f, &extra, 1); /* reaching the end also checks the CRC */
    if (r < 0) return vx_error("%s: member %s: corrupt data (%s)", a->path, m->name, zip_file_strerror(m->f));
    if (r > 0) return vx_error("%s: member %s: more data than its zip entry declares", a->path, m->name);
    return 0;
}

/* A small integer member (int32 or int64): up to `max` values into v; *count gets how many. */
static int vx__ints(vx__npz *a, const char *name, long long *v, int max, int *count, int *ndim, size_t *shape0) {
    vx__member m;
    if (vx__open_member(a, name, &m)) return -1;
    int rc = -1;
    size_t n = 1;
    for (int i = 0; i < m.h.ndim; i++) n *= m.h.shape[i] < 1000 ? m.h.shape[i] : 1000;
    if (!m.is_i64 && m.h.dtype != VX_DT_I32) {
        vx_error("%s: member %s: dtype %s (expected int64 or int32)", a->path, name, vx__dtype_of(&m));
        goto done;
    }
    size_t es = m.is_i64 ? 8 : 4;
    if (n < 1 || n > (size_t)max || m.h.ndim > 1) {
        vx_error("%s: member %s: %d dimensions, %zu values (expected at most %d values)", a->path, name, m.h.ndim, n, max);
        goto done;
    }
    if (vx__check_payload(a, &m, n, es)) goto done;
    unsigned char buf[64];
    if (vx__read_exact(a, &m, buf, n * es) || vx__check_end(a, &m)) goto done;
    for (size_t i = 0; i < n; i++) {
        unsigned char b[8];
        for (size_t k = 0; k < es; k++) b[k] = m.h.big_endian ? buf[i * es + es - 1 - k] : buf[i * es + k];
        uint64_t u = 0;
        for (int k = (int)es - 1; k >= 0; k--) u = u << 8 | b[k];
        v[i] = es == 8 ? (long long)(int64_t)u : (long long)(int32_t)(uint32_t)u;
    }
    *count = (int)n;
    *ndim = m.h.ndim;
    *shape0 = m.h.ndim ? m.h.shape[0] : 1;
    rc = 0;
done:
    vx__close(&m);
    return rc;
}


/* Convert n elements of a float member to float32 in place (es: 2 or 4, any byte order). */
static void vx__to_f32(const unsigned char *src, size_t n, vx_dtype t, int big, float *dst) {
    for (size_t i = 0; i < n; i++) {
        if (t == VX_DT_F16) {
            const unsigned char *p = src + 2 * i;
            dst[i] = vx_half_to_float((uint16_t)(big ? p[0] << 8 | p[1] : p[1] << 8 | p[0]));
        } else {
            const unsigned char *p = src + 4 * i;
            uint32_t u = big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                             : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
            memcpy(dst + i, &u, 4);
        }
    }
}

/* Move past n payload bytes of member m: a seek when it is stored, else read and dropped. */
static int vx__skip(vx__npz *a, vx__member *m, size_t n, unsigned char *scratch, size_t cap) {
    if (m->stored && n) {
        if (zip_fseek(m->f, (zip_int64_t)n, SEEK_CUR) != 0)
            return vx_error("%s: member %s: cannot seek (%s)", a->path, m->name, zip_file_strerror(m->f));
        return 0;
    }
    while (n) {
        size_t k = n < cap ? n : cap;
        if (vx__read_exact(a, m, scratch, k)) return -1;
        n -= k;
    }
    return 0;
}

/* A sort-last piece (req): the plan from the table's bricks, then the table keeps only the
 * stored box's bricks, renumbered in table order; map[old slot] = new slot or -1. */
static int vx__piece_table(vx__npz *a, vx_sparse *s, const int n[3], vx_piece_req *req, size_t nbricks,
                           int32_t **map, size_t *kept) {
    size_t ntable = (size_t)s->bn[0] * s->bn[1] * s->bn[2];
    uint32_t *w = vx_malloc(ntable * sizeof *w, a->path);
    if (!w) return -1;
    for (size_t i = 0; i < ntable; i++) {
        int bx = (int)(i % (size_t)s->bn[0]), by = (int)(i / s->bn[0] % (size_t)s->bn[1]), bz = (int)(i / s->bn[0] / s->bn[1]);
        w[i] = s->table[i] >= 0 ? (uint32_t)vx_sparse_brick_voxels(n[0], n[1], n[2], bx, by, bz) : 0;
    }
    int rc = vx_piece_plan_make(&req->plan, n, req->count, w);
    free(w);
    if (rc) return -1;
    int blo[3], bhi[3];
    vx_piece_store_box(&req->plan, req->index, req->lo_margin, blo, bhi);
    *map = vx_malloc((nbricks ? nbricks : 1) * sizeof **map, a->path);
    if (!*map) { vx_piece_plan_free(&req->plan); return -1; }
    memset(*map, 0xff, (nbricks ? nbricks : 1) * sizeof **map);
    size_t k = 0;
    for (size_t i = 0; i < ntable; i++) {
        int b[3] = {(int)(i % (size_t)s->bn[0]), (int)(i / s->bn[0] % (size_t)s->bn[1]), (int)(i / s->bn[0] / s->bn[1])};
        int in = 1;
        for (int ax = 0; ax < 3; ax++) in &= b[ax] >= blo[ax] && b[ax] < bhi[ax];
        if (s->table[i] < 0) continue;
        if (!in) { s->table[i] = -1; continue; }
        (*map)[s->table[i]] = (int32_t)k;
        s->table[i] = (int32_t)k++;
    }
    *kept = k;
    return 0;
}

static int vx__load(vx__npz *a, vx_grid *g, vx_piece_req *req) {
    long long v[8];
    int n, nd;
    size_t s0;
    /* format version */
    if (vx__ints(a, "format.npy", v, 1, &n, &nd, &s0)) return -1;
    if (v[0] != VX__FORMAT_VERSION)
        return vx_error("%s: member format.npy: version %lld is not supported (this voxray reads %d)", a->path, v[0],
                        VX__FORMAT_VERSION);
    if (vx__ints(a, "brick.npy", v, 1, &n, &nd, &s0)) return -1;
    if (v[0] != VX_BRICK)
        return vx_error("%s: member brick.npy: brick edge %lld is not supported (voxray uses %d)", a->path, v[0], VX_BRICK);
    if (vx__ints(a, "shape.npy", v, 4, &n, &nd, &s0)) return -1;
    if (n != 4 || nd != 1) return vx_error("%s: member shape.npy: %d values (expected [nz, ny, nx, nc])", a->path, n);
    for (int i = 0; i < 3; i++)
        if (v[i] < 1 || v[i] > 65536)
            return vx_error("%s: member shape.npy: axis %d is %lld, outside 1..65536", a->path, i, v[i]);
    if (v[3] < 1 || v[3] > VX_SPARSE_MAX_CHANNELS)
        return vx_error("%s: member shape.npy: %lld channels, outside 1..%d", a->path, v[3], VX_SPARSE_MAX_CHANNELS);
    const int nz = (int)v[0], ny = (int)v[1], nx = (int)v[2], nc = (int)v[3];
    const int bn[3] = {(nx + 7) / 8, (ny + 7) / 8, (nz + 7) / 8};
    const size_t ntable = (size_t)bn[0] * bn[1] * bn[2];

    /* background: float (nc,) */
    float bg[VX_SPARSE_MAX_CHANNELS];
    vx__member m;
    if (vx__open_member(a, "background.npy", &m)) return -1;
    if (m.is_i64 || (m.h.dtype != VX_DT_F32 && m.h.dtype != VX_DT_F16) || m.h.ndim != 1 || m.h.shape[0] != (size_t)nc) {
        vx_error("%s: member background.npy: dtype %s with %d dimensions (expected float32 (%d,))", a->path,
                 vx__dtype_of(&m), m.h.ndim, nc);
        vx__close(&m);
        return -1;
    }
    {
        unsigned char buf[4 * VX_SPARSE_MAX_CHANNELS];
        size_t es = vx_dtype_size(m.h.dtype);
        int rc = vx__check_payload(a, &m, (size_t)nc, es) || vx__read_exact(a, &m, buf, (size_t)nc * es) ||
                 vx__check_end(a, &m);
        vx__close(&m);
        if (rc) return -1;
        vx__to_f32(buf, (size_t)nc, m.h.dtype, m.h.big_endian, bg);
        for (int c = 0; c < nc; c++)
            if (!isfinite(bg[c])) return vx_error("%s: member background.npy: channel %d is not finite", a->path, c);
    }

    /* pool header: (nbricks, 8, 8, 8, nc) float32 or float16 */
    if (vx__open_member(a, "pool.npy", &m)) return -1;
    if (m.is_i64 || (m.h.dtype != VX_DT_F32 && m.h.dtype != VX_DT_F16) || m.h.ndim != 5 || m.h.shape[1] != 8 ||
        m.h.shape[2] != 8 || m.h.shape[3] != 8 || m.h.shape[4] != (size_t)nc) {
        vx_error("%s: member pool.npy: dtype %s with %d dimensions (expected float32 or float16 (nbricks, 8, 8, 8, %d))",
                 a->path, vx__dtype_of(&m), m.h.ndim, nc);
        vx__close(&m);
        return -1;
    }
    const size_t nbricks = m.h.shape[0], pes = vx_dtype_size(m.h.dtype);
    const vx_dtype pdt = m.h.dtype;
    const int pbig = m.h.big_endian;
    size_t pool_n = 0;
    if (nbricks > ntable) {
        vx__close(&m);
        return vx_error("%s: member pool.npy: %zu bricks but the table has only %zu entries", a->path, nbricks, ntable);
    }
    pool_n = nbricks * VX_BRICK_VOXELS * (size_t)nc;
    if (vx__check_payload(a, &m, pool_n, pes)) { vx__close(&m); return -1; }
    vx__close(&m);

    /* table: int32 (bz, by, bx) */
    if (vx__open_member(a, "table.npy", &m)) return -1;
    if (m.is_i64 || m.h.dtype != VX_DT_I32 || m.h.ndim != 3 || m.h.shape[0] != (size_t)bn[2] ||
        m.h.shape[1] != (size_t)bn[1] || m.h.shape[2] != (size_t)bn[0]) {
        vx_error("%s: member table.npy: dtype %s with %d dimensions (expected int32 (%d, %d, %d) for shape %dx%dx%d)",
                 a->path, vx__dtype_of(&m), m.h.ndim, bn[2], bn[1], bn[0], nz, ny, nx);
        vx__close(&m);
        return -1;
    }
    if (vx__check_payload(a, &m, ntable, 4)) { vx__close(&m); return -1; }
    vx_sparse *s = calloc(1, sizeof *s);
    if (!s) { vx__close(&m); return vx_error("%s: out of memory", a->path); }
    unsigned char *seen = NULL;
    int rc = -1;
    int32_t *map = NULL; /* piece: old pool slot -> kept slot */
    size_t kept = nbricks;
    if (req && nc < 2) req = NULL; /* scalar volumes: the decoder needs the whole grid */
    if (vx_sparse_alloc(s, nx, ny, nz, nc, req ? 0 : nbricks, a->path)) goto fail;
    if (vx__read_exact(a, &m, s->table, ntable * 4) || vx__check_end(a, &m)) goto fail;
    vx__close(&m);
    if (m.h.big_endian)
        for (size_t i = 0; i < ntable; i++) {
            uint32_t u = (uint32_t)s->table[i];
            s->table[i] = (int32_t)(u >> 24 | (u >> 8 & 0xff00u) | (u << 8 & 0xff0000u) | u << 24);
        }
    seen = calloc(nbricks / 8 + 1, 1);
    if (!seen) { vx_error("%s: out of memory", a->path); goto fail; }
    size_t used = 0;
    for (size_t i = 0; i < ntable; i++) {
        int32_t e = s->table[i];
        int bx = (int)(i % (size_t)bn[0]), by = (int)(i / bn[0] % (size_t)bn[1]), bz = (int)(i / bn[0] / bn[1]);
        if (e == -1) continue;
        if (e < -1 || (size_t)e >= nbricks) {
            vx_error("%s: member table.npy: entry %d at brick (%d, %d, %d) is outside -1..%zu (the pool has %zu bricks)",
                     a->path, e, bx, by, bz, nbricks ? nbricks - 1 : 0, nbricks);
            goto fail;
        }
        if (seen[e / 8] & (1 << (e % 8))) {
            vx_error("%s: member table.npy: pool brick %d is used twice (again at brick (%d, %d, %d))", a->path, e, bx,
                     by, bz);
            goto fail;
        }
        seen[e / 8] |= (unsigned char)(1 << (e % 8));
        used++;
    }
    if (used != nbricks) {
        vx_error("%s: member table.npy: %zu of the %zu pool bricks are not used by the table", a->path, nbricks - used,
                 nbricks);
        goto fail;
    }
    memcpy(s->background, bg, sizeof(float) * (size_t)nc);
    if (req) {
        int n3[3] = {nx, ny, nz};
        size_t bytes;
        if (vx__piece_table(a, s, n3, req, nbricks, &map, &kept)) goto fail;
        if (vx_sparse_pool_bytes(kept, nc, &bytes, a->path)) goto fail; /* the caps, --max-memory included */
        if (kept && !(s->pool = vx_malloc(bytes, a->path))) goto fail;
        s->nbricks = kept;
        pool_n = kept * VX_BRICK_VOXELS * (size_t)nc;
    }

    /* pool payload, straight into s->pool */
    if (vx__open_member(a, "pool.npy", &m)) goto fail;
    if (map) { /* a piece: the kept bricks, the others skipped (a seek when stored) */
        size_t bv = (size_t)VX_BRICK_VOXELS * nc, run = 0;
        unsigned char *buf = malloc(bv * pes);
        if (!buf) { vx_error("%s: out of memory", a->path); goto fail; }
        for (size_t j = 0; j < nbricks; j++) {
            if (map[j] < 0) { run++; continue; }
            if ((run && vx__skip(a, &m, run * bv * pes, buf, bv * pes)) || vx__read_exact(a, &m, buf, bv * pes)) {
                free(buf);
                goto fail;
            }
            run = 0;
            vx__to_f32(buf, bv, pdt, pbig, s->pool + (size_t)map[j] * bv);
        }
        if (run && vx__skip(a, &m, run * bv * pes, buf, bv * pes)) { free(buf); goto fail; }
        free(buf);
    } else if (pdt == VX_DT_F32 && !pbig) {
        if (vx__read_exact(a, &m, s->pool, pool_n * 4)) goto fail;
    } else {
        enum { CHUNK = 1 << 20 };
        unsigned char *buf = malloc(CHUNK * pes);
        if (!buf) { vx_error("%s: out of memory", a->path); goto fail; }
        for (size_t i = 0; i < pool_n; i += CHUNK) {
            size_t k = pool_n - i < CHUNK ? pool_n - i : CHUNK;
            if (vx__read_exact(a, &m, buf, k * pes)) { free(buf); goto fail; }
            vx__to_f32(buf, k, pdt, pbig, s->pool + i);
        }
        free(buf);
    }
    if (vx__check_end(a, &m)) goto fail;
    vx__close(&m);
    for (size_t i = 0; i < pool_n; i++)
        if (!isfinite(s->pool[i])) {
            size_t vox = i / (size_t)nc;
            size_t b = vox / VX_BRICK_VOXELS;
            for (size_t j = 0; map && j < nbricks; j++)
                if (map[j] == (int32_t)b) { b = j; break; } /* the file's brick number */
            vx_error("%s: member pool.npy: brick %zu, voxel %zu, channel %zu is not finite", a->path,
                     b, vox % VX_BRICK_VOXELS, i % (size_t)nc);
            goto fail;
        }
    snprintf(g->source, sizeof g->source, "%s", a->path);
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    g->src_dtype = pdt;
    g->sparse = s;
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(g, lo, hi, 1);
    if (req) req->done = 1;
    rc = 0;
fail:
    vx__close(&m);
    free(seen);
    free(map);
    if (rc) { vx_sparse_free(s); free(s); }
    if (rc && req && req->plan.nodes) vx_piece_plan_free(&req->plan);
    return rc;
}

int vx_sparse_load(const char *path, vx_grid *g) { return vx_sparse_load_piece(path, NULL, g); }

int vx_sparse_load_piece(const char *path, vx_piece_req *req, vx_grid *g) {
    memset(g, 0, sizeof *g);
    if (req) req->done = 0;
    struct stat st;
    if (stat(path, &st) != 0) return vx_error("%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return vx_error("%s: not a regular file", path);
    int err = 0;
    zip_t *z = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        vx_error("%s: not a readable .npz (zip): %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return -1;
    }
    vx__npz a = {z, path, (long long)st.st_size};
    int rc = vx__load(&a, g, req);
    zip_discard(z);
    return rc;
}
