/* volume.c - the part every header-based reader shares: size checks before allocating,
 * raw and gzip/zlib payload reading (streamed, growing only as data arrives), element
 * conversion to float32 in either byte order, and the `voxray info` text. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include "vx_common.h"
#include "vx_fmt.h"

void vx_vol_info_init(vx_vol_info *v, const char *format, const char *path) {
    memset(v, 0, sizeof *v);
    v->format = format;
    snprintf(v->path, sizeof v->path, "%s", path);
    snprintf(v->data_path, sizeof v->data_path, "%s", path);
    v->dims[0] = v->dims[1] = v->dims[2] = 1;
    v->nvol = 1;
    v->slope = 1.0;
    v->i2w[0] = v->i2w[5] = v->i2w[10] = 1.0;
}

static double vx__det3(const double *m) {
    return m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) +
           m[2] * (m[4] * m[9] - m[5] * m[8]);
}

int vx_vol_check(const vx_vol_info *v) {
    static const char *ax = "xyz";
    for (int a = 0; a < 3; a++)
        if (v->dims[a] < 1 || v->dims[a] > 65536)
            return vx_error("%s: %s size along %c is %lld (expected 1..65536)", v->path,
                            v->format, ax[a], v->dims[a]);
    if (v->nvol < 1 || v->nvol > (1 << 20))
        return vx_error("%s: %s volume count %lld (expected 1..1048576)", v->path, v->format,
                        v->nvol);
    size_t vox, bytes, fbytes, total;
    if (vx_mul_size4((size_t)v->dims[0], (size_t)v->dims[1], (size_t)v->dims[2], 1, &vox) ||
        vx_mul_size(vox, vx_dtype_size(v->dtype), &bytes) || vx_mul_size(vox, 4, &fbytes) ||
        vx_mul_size(bytes, (size_t)v->nvol, &total) || total > (size_t)LLONG_MAX / 2)
        return vx_error("%s: sizes %lld x %lld x %lld x %lld overflow", v->path, v->dims[0],
                        v->dims[1], v->dims[2], v->nvol);
    /* the float32 grid and, while it is converted, one volume as stored */
    if (fbytes > vx_mem_budget() || bytes > vx_mem_budget() - fbytes) {
        char what[1200];
        snprintf(what, sizeof what, "%s: %lld x %lld x %lld %s", v->path, v->dims[0], v->dims[1],
                 v->dims[2], vx_dtype_name(v->dtype));
        return vx_mem_refuse(what, fbytes + bytes);
    }
    if (v->data_offset < 0 || v->gz_skip < 0 || v->comp_size < 0)
        return vx_error("%s: negative data offset", v->path);
    if (v->data_offset > LLONG_MAX / 4 || v->gz_skip > LLONG_MAX / 4 || v->comp_size > LLONG_MAX / 4)
        return vx_error("%s: data offset %lld / skip %lld is beyond any file", v->path,
                        v->data_offset, v->gz_skip);
    for (int i = 0; i < 12; i++)
        if (!isfinite(v->i2w[i]))
            return vx_error("%s: %s placement (spacing/directions/origin) is not finite", v->path,
                            v->format);
    if (fabs(vx__det3(v->i2w)) < 1e-30)
        return vx_error("%s: %s placement is singular (zero spacing or parallel directions)",
                        v->path, v->format);
    if (!isfinite(v->slope) || !isfinite(v->inter))
        return vx_error("%s: value scaling (slope %g, intercept %g) is not finite", v->path,
                        v->slope, v->inter);
    return 0;
}

/* ---- helpers --------------------------------------------------------------------------- */
int vx_fmt_file_size(const char *path, long long *size) {
    struct stat st;
    if (stat(path, &st) != 0) return vx_error("%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return vx_error("%s: not a regular file", path);
    *size = (long long)st.st_size;
    return 0;
}

int vx_fmt_read_head(const char *path, size_t max, unsigned char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    long long size;
    if (vx_fmt_file_size(path, &size) != 0) return -1;
    size_t n = (size_t)size < max ? (size_t)size : max;
    FILE *f = vx_fopen_read(path);
    if (!f) return -1;
    unsigned char *b = vx_malloc(n + 1, path);
    if (!b) { fclose(f); return -1; }
    size_t got = fread(b, 1, n, f);
    fclose(f);
    b[got] = 0;
    *buf = b;
    *len = got;
    return 0;
}

int vx_fmt_is_gzip(const char *path) {
    unsigned char m[2] = {0, 0};
    FILE *f = vx_fopen_read(path);
    if (!f) return 0;
    size_t n = fread(m, 1, 2, f);
    fclose(f);
    return n == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

int vx_fmt_has_ext(const char *path, const char *ext) {
    size_t n = strlen(path), e = strlen(ext);
    return n >= e && strcasecmp(path + n - e, ext) == 0;
}

char *vx_fmt_trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = 0;
    return s;
}

int vx_fmt_int(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    while (isspace((unsigned char)*end)) end++;
    if (end == s || *end || errno == ERANGE || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

int vx_fmt_doubles(const char *s, double *out, int max) {
    int n = 0;
    char *end;
    for (;;) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) return n;
        if (n == max) return -1;
        out[n++] = strtod(s, &end);
        if (end == s || (*end && !isspace((unsigned char)*end))) return -1;
        s = end;
    }
}

int vx_fmt_dtype_from_name(const char *s) {
    static const struct { const char *name; vx_dtype t; } names[] = {
        {"uint8", VX_DT_U8}, {"u8", VX_DT_U8}, {"uchar", VX_DT_U8}, {"u1", VX_DT_U8},
        {"int8", VX_DT_I8}, {"i8", VX_DT_I8}, {"i1", VX_DT_I8},
        {"uint16", VX_DT_U16}, {"u16", VX_DT_U16}, {"u2", VX_DT_U16},
        {"int16", VX_DT_I16}, {"i16", VX_DT_I16}, {"i2", VX_DT_I16},
        {"uint32", VX_DT_U32}, {"u32", VX_DT_U32}, {"u4", VX_DT_U32},
        {"int32", VX_DT_I32}, {"i32", VX_DT_I32}, {"i4", VX_DT_I32},
        {"float16", VX_DT_F16}, {"f16", VX_DT_F16}, {"half", VX_DT_F16}, {"f2", VX_DT_F16},
        {"float32", VX_DT_F32}, {"f32", VX_DT_F32}, {"float", VX_DT_F32}, {"f4", VX_DT_F32},
        {"float64", VX_DT_F64}, {"f64", VX_DT_F64}, {"double", VX_DT_F64}, {"f8", VX_DT_F64},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(s, names[i].name) == 0) return (int)names[i].t;
    return -1;
}

void vx_fmt_to_float(const unsigned char *src, size_t n, vx_dtype t, int big_endian, float *dst) {
    size_t es = vx_dtype_size(t);
    unsigned char b[8];
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = src + i * es;
        for (size_t k = 0; k < es; k++) b[k] = big_endian ? p[es - 1 - k] : p[k]; /* -> LE */
        uint16_t u16 = (uint16_t)(b[0] | b[1] << 8);
        uint32_t u32 = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                       (uint32_t)b[3] << 24;
        switch (t) {
        case VX_DT_U8: dst[i] = (float)b[0]; break;
        case VX_DT_I8: dst[i] = (float)(int8_t)b[0]; break;
        case VX_DT_U16: dst[i] = (float)u16; break;
        case VX_DT_I16: dst[i] = (float)(int16_t)u16; break;
        case VX_DT_U32: dst[i] = (float)u32; break;
        case VX_DT_I32: dst[i] = (float)(int32_t)u32; break;
        case VX_DT_F16: dst[i] = vx_half_to_float(u16); break;
        case VX_DT_F32: { float f; memcpy(&f, &u32, 4); dst[i] = f; break; }
        case VX_DT_F64: {
            uint64_t u = 0;
            for (int k = 7; k >= 0; k--) u = u << 8 | b[k];
            double d;
            memcpy(&d, &u, 8);
            dst[i] = (float)d;
            break;
        }
        }
    }
}

/* ---- gzip / zlib streams --------------------------------------------------------------- */

/* Next chunk of compressed input (at most *comp_left bytes when that is >= 0). */
static void vx__gz_refill(z_stream *zs, FILE *f, unsigned char *in, size_t chunk, long long *comp_left, int *eof) {
    size_t want = chunk;
    if (*comp_left >= 0 && (long long)want > *comp_left) want = (size_t)*comp_left;
    size_t r = want ? fread(in, 1, want, f) : 0;
    if (*comp_left >= 0) *comp_left -= (long long)r;
    if (r == 0) *eof = 1;
    zs->next_in = in;
    zs->avail_in = (uInt)r;
}
int vx_gz_read(const char *path, long long offset, long long comp_size, size_t skip, size_t n,
               int allow_short, unsigned char **out, size_t *got_out, const char *what) {
    *out = NULL;
    if (got_out) *got_out = 0;
    FILE *f = vx_fopen_read(path);
    if (!f) return -1;
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
        fclose(f);
        return vx_error("%s: %s: cannot seek to byte %lld", path, what, offset);
    }
    enum { CHUNK = 1 << 16 };
    unsigned char *in = vx_malloc(CHUNK, "gzip input"), *scratch = vx_malloc(CHUNK, "gzip skip");
    size_t cap = n < ((size_t)1 << 20) ? n : ((size_t)1 << 20), got = 0;
    unsigned char *buf = vx_malloc(cap, "gzip output");
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int rc = -1, zinit = 0, eof = 0, ended = 0;
    long long comp_left = comp_size > 0 ? comp_size : -1;
    if (!in || !scratch || !buf) goto done;
    if (inflateInit2(&zs, 15 + 32) != Z_OK) { vx_error("%s: zlib init failed", path); goto done; }
    zinit = 1;
    while (got < n) {
        if (zs.avail_in == 0 && !eof) vx__gz_refill(&zs, f, in, CHUNK, &comp_left, &eof);
        if (skip > 0) {
            zs.next_out = scratch;
            zs.avail_out = (uInt)(skip < CHUNK ? skip : CHUNK);
        } else {
            if (got == cap) { /* grow as data arrives: never sized by the header alone */
                size_t nc = cap * 2 > n ? n : cap * 2;
                if (nc < 64) nc = n < 64 ? n : 64;
                unsigned char *nb = realloc(buf, nc);
                if (!nb) { vx_error("out of memory decompressing %s", path); goto done; }
                buf = nb;
                cap = nc;
            }
            size_t room = cap - got;
            zs.next_out = buf + got;
            zs.avail_out = (uInt)(room < CHUNK * 16 ? room : CHUNK * 16);
        }
        uInt before = zs.avail_out;
        int zr = inflate(&zs, Z_NO_FLUSH);
        size_t made = before - zs.avail_out;
        if (skip > 0) skip -= made; else got += made;
        if (zr == Z_STREAM_END) {
            ended = 1;
            if (got >= n) break;
            /* concatenated gzip members continue; anything else means the data ended */
            if (zs.avail_in == 0 && !eof) {
                size_t r = fread(in, 1, CHUNK, f);
                zs.next_in = in;
                zs.avail_in = (uInt)r;
                if (r == 0) eof = 1;
            }
            if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
                inflateReset(&zs);
                ended = 0;
                continue;
            }
            break;
        }
        if (zr == Z_NEED_DICT || zr == Z_DATA_ERROR || zr == Z_MEM_ERROR || zr == Z_STREAM_ERROR) {
            vx_error("%s: %s: corrupt gzip/zlib data (%s)", path, what, zs.msg ? zs.msg : "zlib error");
            goto done;
        }
        if (zr == Z_BUF_ERROR && zs.avail_in == 0 && eof) break; /* input ran out */
    }
    if (got < n && !allow_short) {
        if (skip > 0)
            vx_error("%s: %s: compressed data ends before the payload starts (truncated?)", path,
                     what);
        else
            vx_error("%s: %s: compressed data ends after %zu of %zu bytes (truncated?)", path,
                     what, got, n);
        goto done;
    }
    /* A payload read goes on to the end of the stream, so that zlib checks its CRC-32 /
     * Adler-32: corruption that still inflates (flipped literals, a broken trailer) is
     * caught instead of rendered. */
    while (!allow_short && !ended) {
        if (zs.avail_in == 0 && !eof) vx__gz_refill(&zs, f, in, CHUNK, &comp_left, &eof);
        zs.next_out = scratch;
        zs.avail_out = CHUNK;
        int zr = inflate(&zs, Z_NO_FLUSH);
        if (zr == Z_STREAM_END) break;
        if (zr == Z_NEED_DICT || zr == Z_DATA_ERROR || zr == Z_MEM_ERROR || zr == Z_STREAM_ERROR) {
            vx_error("%s: %s: corrupt gzip/zlib data (%s)", path, what, zs.msg ? zs.msg : "zlib error");
            goto done;
        }
        if (zr == Z_BUF_ERROR && zs.avail_in == 0 && eof) {
            vx_error("%s: %s: compressed data ends before its stream's end (truncated gzip/zlib?)", path, what);
            goto done;
        }
    }
    rc = 0;
done:
    if (zinit) inflateEnd(&zs);
    fclose(f);
    free(in);
    free(scratch);
    if (rc == 0) {
        *out = buf;
        if (got_out) *got_out = got;
    } else {
        free(buf);
    }
    return rc;
}

/* ---- payload ---------------------------------------------------------------------------- */

/* The data-file error names the header too; the message already names the data file. */
static int vx__data_error(const vx_vol_info *v) {
    if (strcmp(v->data_path, v->path) == 0) return -1;
    char m[1024];
    snprintf(m, sizeof m, "%s", vx_errmsg());
    return vx_error("%s: data file %s", v->path, m);
}

int vx_vol_data_inside(const vx_vol_info *v) {
    if (v->allow_outside || strcmp(v->data_path, v->path) == 0) return 0;
    char dir[1024], rdir[PATH_MAX], rdata[PATH_MAX];
    vx_dirname(v->path, dir, sizeof dir);
    if (!realpath(dir, rdir)) return vx_error("%s: cannot resolve its directory: %s", v->path, strerror(errno));
    if (!realpath(v->data_path, rdata)) return 0; /* missing: the read reports it */
    size_t n = strlen(rdir);
    if (!strcmp(rdir, "/") || (!strncmp(rdata, rdir, n) && rdata[n] == '/')) return 0;
    return vx_error("%s: data file %s is outside the header's directory %s; pass "
                    "--allow-outside-data to read it", v->path, v->data_path, rdir);
}
int vx_vol_read(const vx_vol_info *v, int index, vx_grid *g) {
    if (vx_vol_check(v) != 0 || vx_vol_data_inside(v) != 0) return -1;
    if (index < 0 || index >= v->nvol)
        return vx_error("%s: volume %d requested but the file holds %lld (0..%lld)", v->path,
                        index, v->nvol, v->nvol - 1);
    size_t es = vx_dtype_size(v->dtype);
    size_t nvox = (size_t)v->dims[0] * (size_t)v->dims[1] * (size_t)v->dims[2];
    size_t vbytes = nvox * es;
    long long total = (long long)vbytes * v->nvol;
    unsigned char *raw = NULL;
    if (v->encoding == VX_ENC_RAW) {
        long long size;
        if (vx_fmt_file_size(v->data_path, &size) != 0) return vx__data_error(v);
        long long off = v->data_at_end ? size - total : v->data_offset;
        if (off < 0 || off > size || size - off < total)
            return vx_error("%s: payload: %lld x %lld x %lld x %lld %s needs %lld bytes at offset "
                            "%lld but %s has %lld (truncated or wrong sizes)", v->path,
                            v->dims[0], v->dims[1], v->dims[2], v->nvol, vx_dtype_name(v->dtype),
                            total, v->data_at_end ? 0 : off, v->data_path, size);
        if (size - off > total)
            vx_warn("%s: %lld bytes after the payload ignored", v->data_path, size - off - total);
        FILE *f = vx_fopen_read(v->data_path);
        if (!f) return -1;
        raw = vx_malloc(vbytes, v->path);
        if (!raw || fseeko(f, (off_t)(off + (long long)vbytes * index), SEEK_SET) != 0 ||
            fread(raw, 1, vbytes, f) != vbytes) {
            fclose(f);
            free(raw);
            return vx_error("%s: payload: read failed", v->data_path);
        }
        fclose(f);
    } else {
        long long fs;
        if (vx_fmt_file_size(v->data_path, &fs) != 0) return vx__data_error(v);
        if (v->data_offset > fs)
            return vx_error("%s: payload: offset %lld is past the end of %s (%lld bytes)",
                            v->path, v->data_offset, v->data_path, fs);
        size_t got;
        if (vx_gz_read(v->data_path, v->data_offset, v->comp_size,
                       (size_t)v->gz_skip + vbytes * (size_t)index, vbytes, 0, &raw, &got,
                       "payload") != 0)
            return -1;
    }
    if (vx_grid_alloc(g, (int)v->dims[0], (int)v->dims[1], (int)v->dims[2], 1, v->path) != 0) {
        free(raw);
        return -1;
    }
    vx_fmt_to_float(raw, nvox, v->dtype, v->big_endian, g->data);
    free(raw);
    if (v->slope != 1.0 || v->inter != 0.0)
        for (size_t i = 0; i < nvox; i++)
            g->data[i] = (float)(v->slope * g->data[i] + v->inter);
    g->src_dtype = v->dtype;
    memcpy(g->i2w, v->i2w, sizeof g->i2w);
    g->align_corners = 0;
    return 0;
}

void vx_vol_describe(const vx_vol_info *v, char *buf, size_t cap) {
    double sp[3];
    for (int a = 0; a < 3; a++)
        sp[a] = sqrt(v->i2w[a] * v->i2w[a] + v->i2w[4 + a] * v->i2w[4 + a] +
                     v->i2w[8 + a] * v->i2w[8 + a]);
    const char *enc = v->encoding == VX_ENC_GZIP ? "gzip/zlib" : "raw";
    int n = snprintf(buf, cap,
        "format: %s\n"
        "dims: %lld x %lld x %lld (x fastest)%s",
        v->format, v->dims[0], v->dims[1], v->dims[2], v->nvol > 1 ? "" : "\n");
    if (v->nvol > 1 && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - n, ", %lld volumes\n", v->nvol);
    if (n < 0 || (size_t)n >= cap) return;
    n += snprintf(buf + n, cap - n,
        "dtype: %s%s\n"
        "encoding: %s, data in %s at byte %lld%s\n"
        "spacing: %g %g %g\n"
        "index_to_world: [%g %g %g %g] [%g %g %g %g] [%g %g %g %g]\n",
        vx_dtype_name(v->dtype),
        vx_dtype_size(v->dtype) > 1 ? (v->big_endian ? " big-endian" : " little-endian") : "",
        enc, v->data_path, v->data_at_end ? -1LL : v->data_offset,
        v->data_at_end ? " (end of file)" : "", sp[0], sp[1], sp[2],
        v->i2w[0], v->i2w[1], v->i2w[2], v->i2w[3], v->i2w[4], v->i2w[5], v->i2w[6], v->i2w[7],
        v->i2w[8], v->i2w[9], v->i2w[10], v->i2w[11]);
    if (n < 0 || (size_t)n >= cap) return;
    if (v->slope != 1.0 || v->inter != 0.0)
        n += snprintf(buf + n, cap - n, "value scaling: %g * stored + %g\n", v->slope, v->inter);
    if (n < 0 || (size_t)n >= cap) return;
    if (v->notes[0]) snprintf(buf + n, cap - n, "%s\n", v->notes);
}
