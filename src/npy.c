/* npy.c - NumPy .npy reading (v1/v2/v3 headers; float32/16/64, (u)int8/16/32, either
 * endian, C order only) and writing (float32/float16). Sizes in the header are checked
 * against the bytes actually present before anything is allocated. */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

/* ---- header parsing ------------------------------------------------------------------ */

static const char *vx__skip_ws(const char *p, const char *end) {
    while (p < end && isspace((unsigned char)*p)) p++;
    return p;
}

/* Find 'key' at dict level and return a pointer just past the ':' */
static const char *vx__dict_value(const char *hdr, const char *end, const char *key) {
    size_t kl = strlen(key);
    for (const char *p = hdr; p + kl + 2 <= end; p++) {
        if ((*p == '\'' || *p == '"') && p[kl + 1] == *p && !memcmp(p + 1, key, kl)) {
            const char *q = vx__skip_ws(p + kl + 2, end);
            if (q < end && *q == ':') return vx__skip_ws(q + 1, end);
        }
    }
    return NULL;
}

static int vx__parse_descr(const char *v, const char *end, const char *what, vx_npy_header *h) {
    if (v >= end || (*v != '\'' && *v != '"')) return vx_error("%s: .npy header 'descr' is not a string", what);
    char q = *v++;
    const char *e = memchr(v, q, (size_t)(end - v));
    if (!e || e - v < 2 || e - v > 8) return vx_error("%s: .npy header 'descr' is malformed", what);
    char d[9] = {0};
    memcpy(d, v, (size_t)(e - v));
    char order = d[0];
    const char *t = d + 1;
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return vx_error("%s: .npy dtype '%s' has no byte order", what, d);
    static const struct { const char *code; vx_dtype t; } map[] = {
        {"f4", VX_DT_F32}, {"f2", VX_DT_F16}, {"f8", VX_DT_F64}, {"u1", VX_DT_U8}, {"i1", VX_DT_I8},
        {"u2", VX_DT_U16}, {"i2", VX_DT_I16}, {"u4", VX_DT_U32}, {"i4", VX_DT_I32}, {"b1", VX_DT_U8}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        if (!strcmp(t, map[i].code)) {
            h->dtype = map[i].t;
            h->big_endian = order == '>';
            return 0;
        }
    }
    return vx_error("%s: .npy dtype '%s' is not supported", what, d);
}

int vx_npy_parse_header(const unsigned char *buf, size_t len, const char *what, vx_npy_header *h) {
    memset(h, 0, sizeof *h);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) return vx_error("%s: not a .npy file (bad magic)", what);
    int major = buf[6];
    size_t hlen, start;
    if (major == 1) { hlen = buf[8] | (size_t)buf[9] << 8; start = 10; }
    else if (major == 2 || major == 3) {
        if (len < 12) return vx_error("%s: .npy header is truncated", what);
        hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    } else return vx_error("%s: .npy format version %d is not supported (1, 2 or 3)", what, major);
    if (hlen > len - start) return vx_error("%s: .npy header is truncated (%zu bytes announced)", what, hlen);
    const char *hdr = (const char *)buf + start, *end = hdr + hlen;
    h->data_offset = start + hlen;

    const char *v = vx__dict_value(hdr, end, "descr");
    if (!v) return vx_error("%s: .npy header has no 'descr'", what);
    if (vx__parse_descr(v, end, what, h)) return -1;

    v = vx__dict_value(hdr, end, "fortran_order");
    if (!v) return vx_error("%s: .npy header has no 'fortran_order'", what);
    if (end - v >= 4 && !memcmp(v, "True", 4)) return vx_error("%s: Fortran-order .npy arrays are not supported; save with C order", what);
    if (!(end - v >= 5 && !memcmp(v, "False", 5))) return vx_error("%s: .npy 'fortran_order' is neither True nor False", what);

    v = vx__dict_value(hdr, end, "shape");
    if (!v || v >= end || *v != '(') return vx_error("%s: .npy header has no 'shape' tuple", what);
    v++;
    h->ndim = 0;
    for (;;) {
        v = vx__skip_ws(v, end);
        if (v >= end) return vx_error("%s: .npy 'shape' is not terminated", what);
        if (*v == ')') break;
        if (!isdigit((unsigned char)*v)) return vx_error("%s: .npy 'shape' has a non-integer entry", what);
        if (h->ndim == 8) return vx_error("%s: .npy array has more than 8 dimensions", what);
        unsigned long long x = 0;
        while (v < end && isdigit((unsigned char)*v)) {
            if (x > (SIZE_MAX - 9) / 10) return vx_error("%s: .npy 'shape' entry is too large", what);
            x = x * 10 + (unsigned)(*v++ - '0');
        }
        h->shape[h->ndim++] = (size_t)x;
        v = vx__skip_ws(v, end);
        if (v < end && *v == ',') v++;
        else if (v < end && *v != ')') return vx_error("%s: .npy 'shape' is malformed", what);
    }
    return 0;
}

/* ---- payload conversion ---------------------------------------------------------------- */

static float vx__elem(const unsigned char *p, vx_dtype t, int be) {
    unsigned char b[8];
    size_t n = vx_dtype_size(t);
    for (size_t i = 0; i < n; i++) b[i] = be ? p[n - 1 - i] : p[i];
    switch (t) {
    case VX_DT_F32: { float f; memcpy(&f, b, 4); return f; }
    case VX_DT_F64: { double d; memcpy(&d, b, 8); return (float)d; }
    case VX_DT_F16: return vx_half_to_float((uint16_t)(b[0] | b[1] << 8));
    case VX_DT_U8: return b[0];
    case VX_DT_I8: return (signed char)b[0];
    case VX_DT_U16: return (uint16_t)(b[0] | b[1] << 8);
    case VX_DT_I16: return (int16_t)(b[0] | b[1] << 8);
    case VX_DT_U32: return (float)(uint32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
    case VX_DT_I32: return (float)(int32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
    }
    return 0.0f;
}

void vx_npy_convert(const unsigned char *src, size_t n, vx_dtype t, int be, float *dst) {
    size_t es = vx_dtype_size(t);
    if (t == VX_DT_F32 && !be) { memcpy(dst, src, n * 4); return; }
    for (size_t i = 0; i < n; i++) dst[i] = vx__elem(src + i * es, t, be);
}

static int vx__payload_count(const vx_npy_header *h, size_t len, const char *what, size_t *count) {
    size_t n = 1;
    for (int i = 0; i < h->ndim; i++)
        if (vx_mul_size(n, h->shape[i], &n)) return vx_error("%s: .npy shape overflows", what);
    size_t bytes;
    if (vx_mul_size(n, vx_dtype_size(h->dtype), &bytes)) return vx_error("%s: .npy shape overflows", what);
    size_t have = len - h->data_offset;
    if (have < bytes) return vx_error("%s: .npy data is truncated: shape needs %zu bytes, file has %zu", what, bytes, have);
    if (have > bytes) return vx_error("%s: .npy file has %zu bytes after the array (shape needs %zu)", what, have - bytes, bytes);
    *count = n;
    return 0;
}

int vx_npy_load_buffer(const unsigned char *buf, size_t len, const char *what, vx_npy_header *h, float **out) {
    *out = NULL;
    size_t n, bytes;
    if (vx_npy_parse_header(buf, len, what, h) || vx__payload_count(h, len, what, &n)) return -1;
    if (vx_mul_size(n, sizeof(float), &bytes) || bytes > vx_mem_budget()) {
        char w[1200];
        snprintf(w, sizeof w, "%s: array of %zu elements", what, n);
        return vx_mem_refuse(w, n > SIZE_MAX / 4 ? SIZE_MAX : n * 4);
    }
    float *f = vx_malloc(bytes, what);
    if (!f) return -1;
    const unsigned char *p = buf + h->data_offset;
    size_t es = vx_dtype_size(h->dtype);
    for (size_t i = 0; i < n; i++) f[i] = vx__elem(p + i * es, h->dtype, h->big_endian);
    *out = f;
    return 0;
}

int vx_npy_load_grid(const char *path, vx_grid *g) {
    memset(g, 0, sizeof *g);
    /* read the header first, then check the file size before reading the payload */
    FILE *f = vx_fopen_read(path);
    if (!f) return -1;
    unsigned char head[65536 + 16];
    size_t got = fread(head, 1, sizeof head, f);
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return vx_error("%s: cannot seek", path); }
    long fsize = ftell(f);
    fclose(f);
    vx_npy_header h;
    if (fsize < 0 || vx_npy_parse_header(head, got, path, &h)) return -1;
    if (h.dtype != VX_DT_F32 && h.dtype != VX_DT_F16 && h.dtype != VX_DT_U8 && h.dtype != VX_DT_U16)
        return vx_error("%s: grid dtype %s is not supported (float32, float16, uint8, uint16)", path, vx_dtype_name(h.dtype));
    if (h.ndim != 3 && h.ndim != 4)
        return vx_error("%s: grid shape has %d dimensions; expected (Z, Y, X) or (Z, Y, X, C)", path, h.ndim);
    for (int i = 0; i < h.ndim; i++)
        if (h.shape[i] == 0 || h.shape[i] > 65536)
            return vx_error("%s: grid shape entry %zu is outside 1..65536", path, h.shape[i]);
    size_t nc = h.ndim == 4 ? h.shape[3] : 1;
    if (nc > 64) return vx_error("%s: grid has %zu channels; voxray supports 1..64", path, nc);
    size_t n;
    if (vx__payload_count(&h, (size_t)fsize, path, &n)) return -1;
    if (vx_grid_alloc(g, (int)h.shape[2], (int)h.shape[1], (int)h.shape[0], (int)nc, path)) return -1;
    unsigned char *buf;
    size_t len;
    if (vx_read_file(path, (size_t)fsize, &buf, &len)) { vx_grid_free(g); return -1; }
    if (len != (size_t)fsize) { free(buf); vx_grid_free(g); return vx_error("%s: file changed while reading", path); }
    size_t es = vx_dtype_size(h.dtype);
    const unsigned char *p = buf + h.data_offset;
    if (h.dtype == VX_DT_F32 && !h.big_endian) memcpy(g->data, p, n * 4);
    else
        for (size_t i = 0; i < n; i++) g->data[i] = vx__elem(p + i * es, h.dtype, h.big_endian);
    free(buf);
    g->src_dtype = h.dtype;
    double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1};
    vx_grid_set_bbox(g, lo, hi, 1);
    return 0;
}

/* ---- writing --------------------------------------------------------------------------- */

static int vx__write_npy(const char *path, const void *data, size_t elem, const char *descr, int ndim,
                         const size_t *shape) {
    char dict[512];
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        k += snprintf(dict + k, sizeof dict - k, ndim == 1 ? "%zu,), }" : (i + 1 < ndim ? "%zu, " : "%zu), }"), shape[i]);
        if (vx_mul_size(n, shape[i], &n)) return vx_error("%s: shape overflows", path);
    }
    if (ndim == 0) k += snprintf(dict + k, sizeof dict - k, "), }");
    size_t total = 10 + (size_t)k + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)k + pad + 1;
    char tmp[4096];
    vx_temp_name(path, tmp, sizeof tmp);
    FILE *f = fopen(tmp, "wb");
    if (!f) return vx_error("%s: cannot write: %s", path, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 255), (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)k, f) == (size_t)k;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && (n == 0 || fwrite(data, elem, n, f) == n);
    ok = (fclose(f) == 0) && ok;
    if (!ok) vx_error("%s: write failed", path);
    return vx_commit_temp(tmp, path, ok);
}

int vx_npy_write_f32(const char *path, const float *data, int ndim, const size_t *shape) {
    return vx__write_npy(path, data, 4, "<f4", ndim, shape);
}

int vx_npy_grid_fits_int(const vx_grid *g) {
    if (g->src_dtype != VX_DT_U8 && g->src_dtype != VX_DT_U16) return 0;
    float top = g->src_dtype == VX_DT_U8 ? 255.0f : 65535.0f;
    size_t n = vx_grid_count(g);
    for (size_t i = 0; i < n; i++) {
        float v = g->data[i];
        if (!(v >= 0.0f && v <= top) || v != floorf(v)) return 0;
    }
    return 1;
}

int vx_npy_write_grid(const char *path, const vx_grid *g, int half) {
    size_t shape[4] = {(size_t)g->nz, (size_t)g->ny, (size_t)g->nx, (size_t)g->nc};
    int ndim = g->nc == 1 ? 3 : 4;
    if (!half && vx_npy_grid_fits_int(g)) { /* keep the stored width: no 4x copy of a uint8 scan */
        size_t n = vx_grid_count(g), es = vx_dtype_size(g->src_dtype);
        unsigned char *buf = vx_malloc(n * es, path);
        if (!buf) return -1;
        for (size_t i = 0; i < n; i++) {
            unsigned v = (unsigned)g->data[i];
            if (es == 1) buf[i] = (unsigned char)v;
            else { buf[2 * i] = (unsigned char)v; buf[2 * i + 1] = (unsigned char)(v >> 8); }
        }
        int rc = vx__write_npy(path, buf, es, es == 1 ? "|u1" : "<u2", ndim, shape);
        free(buf);
        return rc;
    }
    if (!half) return vx__write_npy(path, g->data, 4, "<f4", ndim, shape);
    size_t n = vx_grid_count(g);
    uint16_t *hbuf = vx_malloc(n * 2, path);
    if (!hbuf) return -1;
    for (size_t i = 0; i < n; i++) hbuf[i] = vx_float_to_half(g->data[i]);
    int rc = vx__write_npy(path, hbuf, 2, "<f2", ndim, shape);
    free(hbuf);
    return rc;
}
