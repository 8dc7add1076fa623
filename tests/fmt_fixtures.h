/* fmt_fixtures.h - writers of small synthetic volume files (NRRD, NIfTI-1, MetaImage,
 * INRIMAGE, VolPack .den, raw, Plenoxels .npz) with random values and the placement each
 * should load with. Used by tests/test_formats*.c and tests/fuzz/make_seeds.c. */
#ifndef FMT_FIXTURES_H
#define FMT_FIXTURES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>
#include <zlib.h>

#include "grid.h"
#include "vx_common.h"

#define FX_CHECK(c) do { if (!(c)) { fprintf(stderr, "fixture failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); abort(); } } while (0)

static uint64_t fx_rng = 0x1234567;
static const char *fx_dir = "/tmp";
static int fx_serial;

static inline void fx_setup(uint64_t seed, const char *dir) { fx_rng = seed; fx_dir = dir; }

static inline double fx_rand(void) { return vx_rand01(&fx_rng); }
static inline double fx_uniform(double lo, double hi) { return lo + (hi - lo) * fx_rand(); }

typedef struct {
    int nx, ny, nz;
    vx_dtype dtype;
    double *vals;        /* nz*ny*nx values, x fastest, exactly representable in dtype and float */
    double slope, inter; /* what the loader should apply (NIfTI writes them) */
} fx_vol;

static inline size_t fx_count(const fx_vol *v) { return (size_t)v->nx * v->ny * v->nz; }
static inline void fx_free(fx_vol *v) { free(v->vals); v->vals = NULL; }

static inline void fx_random(fx_vol *v, int nx, int ny, int nz, vx_dtype t) {
    v->nx = nx; v->ny = ny; v->nz = nz; v->dtype = t;
    v->slope = 1.0; v->inter = 0.0;
    v->vals = malloc(fx_count(v) * sizeof(double));
    FX_CHECK(v->vals);
    double lo = 0, hi = 255;
    switch (t) {
    case VX_DT_U8: lo = 0; hi = 255; break;
    case VX_DT_I8: lo = -128; hi = 127; break;
    case VX_DT_U16: lo = 0; hi = 65535; break;
    case VX_DT_I16: lo = -32768; hi = 32767; break;
    case VX_DT_U32: lo = 0; hi = 16777216; break;
    case VX_DT_I32: lo = -16777216; hi = 16777216; break;
    default: lo = -1000; hi = 1000; break;
    }
    int is_float = t == VX_DT_F32 || t == VX_DT_F64 || t == VX_DT_F16;
    for (size_t i = 0; i < fx_count(v); i++) {
        double x = fx_uniform(lo, hi + (is_float ? 0 : 1));
        v->vals[i] = is_float ? (double)(float)x : floor(x);
        if (t == VX_DT_F16) v->vals[i] = vx_half_to_float(vx_float_to_half((float)x));
    }
}

/* Encode the values in the fixture's dtype and byte order. */
static inline void fx_encode(const fx_vol *v, int big, unsigned char *out) {
    size_t es = vx_dtype_size(v->dtype);
    for (size_t i = 0; i < fx_count(v); i++) {
        unsigned char b[8];
        double x = v->vals[i];
        uint64_t u = 0;
        switch (v->dtype) {
        case VX_DT_U8: case VX_DT_I8: u = (uint64_t)(int64_t)x & 0xff; break;
        case VX_DT_U16: case VX_DT_I16: u = (uint64_t)(int64_t)x & 0xffff; break;
        case VX_DT_U32: case VX_DT_I32: u = (uint64_t)(int64_t)x & 0xffffffffu; break;
        case VX_DT_F16: u = vx_float_to_half((float)x); break;
        case VX_DT_F32: { float f = (float)x; uint32_t w; memcpy(&w, &f, 4); u = w; break; }
        case VX_DT_F64: memcpy(&u, &x, 8); break;
        }
        for (size_t k = 0; k < es; k++) b[k] = (unsigned char)(u >> (8 * k));
        for (size_t k = 0; k < es; k++) out[i * es + k] = big ? b[es - 1 - k] : b[k];
    }
}

static inline unsigned char *fx_payload(const fx_vol *v, int big, size_t *len) {
    *len = fx_count(v) * vx_dtype_size(v->dtype);
    unsigned char *p = malloc(*len + 1);
    FX_CHECK(p);
    fx_encode(v, big, p);
    return p;
}

static inline void fx_write2(const char *path, const void *a, size_t alen, const void *b, size_t blen) {
    FILE *f = fopen(path, "wb");
    FX_CHECK(f);
    FX_CHECK(fwrite(a, 1, alen, f) == alen);
    if (blen) FX_CHECK(fwrite(b, 1, blen, f) == blen);
    FX_CHECK(fclose(f) == 0);
}

/* gzip (zlib_wrapper = 0) or zlib (1) compression into a malloc'd buffer. */
static inline unsigned char *fx_deflate(const void *src, size_t n, int zlib_wrapper, size_t *out_len) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    FX_CHECK(deflateInit2(&zs, 6, Z_DEFLATED, zlib_wrapper ? 15 : 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    size_t cap = deflateBound(&zs, (uLong)n) + 64;
    unsigned char *out = malloc(cap);
    FX_CHECK(out);
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    FX_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

static inline void fx_name(char *path, size_t cap, const char *ext) {
    snprintf(path, cap, "%s/fx%04d%s", fx_dir, fx_serial++, ext);
}

static inline const char *fx_base(const char *p) { const char *s = strrchr(p, '/'); return s ? s + 1 : p; }

/* A random well-conditioned 3x3 (columns = index axes) and origin. */
static inline void fx_random_affine(double m[9], double o[3]) {
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) m[3 * r + c] = (r == c ? fx_uniform(0.5, 3) : 0) + fx_uniform(-0.3, 0.3);
    for (int r = 0; r < 3; r++) o[r] = fx_uniform(-100, 100);
}

/* ---- NRRD ---------------------------------------------------------------------------------- */
static inline const char *fx_nrrd_type(vx_dtype t) {
    switch (t) {
    case VX_DT_U8: return "unsigned char"; case VX_DT_I8: return "signed char";
    case VX_DT_U16: return "ushort"; case VX_DT_I16: return "short";
    case VX_DT_U32: return "unsigned int"; case VX_DT_I32: return "int32";
    case VX_DT_F32: return "float"; case VX_DT_F64: return "double";
    default: return "half";
    }
}

/* LPS space directions/origin; i2w gets the expected RAS placement. */
static inline void fx_nrrd(const fx_vol *v, char *path, size_t cap, int big, int gz, int detached, double *i2w) {
    double m[9], o[3];
    fx_random_affine(m, o);
    char hdr[2048], data[512];
    size_t plen, clen;
    unsigned char *pay = fx_payload(v, big, &plen), *comp = NULL;
    if (gz) comp = fx_deflate(pay, plen, 0, &clen);
    fx_name(path, cap, detached ? ".nhdr" : ".nrrd");
    int n = snprintf(hdr, sizeof hdr,
        "NRRD0004\n# synthetic\ntype: %s\ndimension: 3\nspace: left-posterior-superior\n"
        "sizes: %d %d %d\nspace directions: (%.17g,%.17g,%.17g) (%.17g,%.17g,%.17g) (%.17g,%.17g,%.17g)\n"
        "kinds: domain domain domain\nendian: %s\nencoding: %s\nspace origin: (%.17g,%.17g,%.17g)\n",
        fx_nrrd_type(v->dtype), v->nx, v->ny, v->nz, m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8],
        big ? "big" : "little", gz ? "gzip" : "raw", o[0], o[1], o[2]);
    if (detached) {
        snprintf(data, sizeof data, "%s.%s", path, gz ? "raw.gz" : "raw");
        snprintf(hdr + n, sizeof hdr - n, "data file: %s\n", fx_base(data));
        fx_write2(path, hdr, strlen(hdr), NULL, 0);
        fx_write2(data, gz ? comp : pay, gz ? clen : plen, NULL, 0);
    } else {
        snprintf(hdr + n, sizeof hdr - n, "\n");
        fx_write2(path, hdr, strlen(hdr), gz ? comp : pay, gz ? clen : plen);
    }
    for (int r = 0; r < 3; r++) {
        double s = r < 2 ? -1 : 1;
        for (int c = 0; c < 3; c++) i2w[4 * r + c] = s * m[3 * r + c];
        i2w[4 * r + 3] = s * o[r];
    }
    free(pay);
    free(comp);
}

/* ---- NIfTI-1 ------------------------------------------------------------------------------- */
static inline void fx_put16(unsigned char *p, int v, int big) {
    uint16_t u = (uint16_t)v;
    p[big ? 1 : 0] = (unsigned char)u; p[big ? 0 : 1] = (unsigned char)(u >> 8);
}
static inline void fx_put32(unsigned char *p, uint32_t u, int big) {
    for (int k = 0; k < 4; k++) p[big ? 3 - k : k] = (unsigned char)(u >> (8 * k));
}
static inline void fx_putf(unsigned char *p, double x, int big) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    fx_put32(p, u, big);
}
static inline int fx_nifti_code(vx_dtype t) {
    switch (t) {
    case VX_DT_U8: return 2; case VX_DT_I16: return 4; case VX_DT_I32: return 8;
    case VX_DT_F32: return 16; case VX_DT_F64: return 64; case VX_DT_I8: return 256;
    case VX_DT_U16: return 512; case VX_DT_U32: return 768; default: return 0;
    }
}

/* A 348-byte NIfTI-1 header (+4 extension bytes). placement: 0 sform, 1 qform, 2 pixdim.
 * nvol volumes; i2w gets the expected placement. */
static inline void fx_nifti_header(const fx_vol *v, unsigned char *h, int big, int pair, int placement,
                                   int nvol, double *i2w) {
    memset(h, 0, 352);
    fx_put32(h, 348, big);
    int d0 = nvol > 1 ? 4 : 3;
    int dims[8] = {d0, v->nx, v->ny, v->nz, nvol, 1, 1, 1};
    for (int i = 0; i < 8; i++) fx_put16(h + 40 + 2 * i, dims[i], big);
    fx_put16(h + 70, fx_nifti_code(v->dtype), big);
    fx_put16(h + 72, (int)(8 * vx_dtype_size(v->dtype)), big);
    double px[3] = {(float)fx_uniform(0.5, 3), (float)fx_uniform(0.5, 3), (float)fx_uniform(0.5, 3)};
    double qfac = fx_rand() < 0.5 ? -1 : 1;
    fx_putf(h + 76, qfac, big);
    for (int k = 0; k < 3; k++) fx_putf(h + 80 + 4 * k, px[k], big);
    fx_putf(h + 108, pair ? 0 : 352, big);
    fx_putf(h + 112, v->slope == 1.0 && v->inter == 0.0 ? 0.0 : v->slope, big); /* 0 = no scaling */
    fx_putf(h + 116, v->inter, big);
    memset(i2w, 0, 12 * sizeof(double));
    if (placement == 0) {
        fx_put16(h + 254, 2, big);
        fx_put16(h + 252, 1, big); /* a qform that must be ignored */
        fx_putf(h + 256, 0.5, big);
        double m[9], o[3];
        fx_random_affine(m, o);
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++) { fx_putf(h + 280 + 16 * r + 4 * c, m[3 * r + c], big); i2w[4 * r + c] = (float)m[3 * r + c]; }
            fx_putf(h + 280 + 16 * r + 12, o[r], big);
            i2w[4 * r + 3] = (float)o[r];
        }
    } else if (placement == 1) {
        /* known rotations: identity, 90 degrees about z, 180 degrees about x */
        static const double q[3][3] = {{0, 0, 0}, {0, 0, 0.70710678118654752}, {1, 0, 0}};
        static const double R[3][9] = {{1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, -1, 0, 1, 0, 0, 0, 0, 1},
                                       {1, 0, 0, 0, -1, 0, 0, 0, -1}};
        int k = (int)(fx_rand() * 3);
        fx_put16(h + 252, 1, big);
        for (int j = 0; j < 3; j++) fx_putf(h + 256 + 4 * j, q[k][j], big);
        double o[3] = {(float)fx_uniform(-50, 50), (float)fx_uniform(-50, 50), (float)fx_uniform(-50, 50)};
        for (int j = 0; j < 3; j++) fx_putf(h + 268 + 4 * j, o[j], big);
        double s[3] = {px[0], px[1], px[2] * qfac};
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++) i2w[4 * r + c] = R[k][3 * r + c] * s[c];
            i2w[4 * r + 3] = o[r];
        }
    } else {
        for (int k = 0; k < 3; k++) i2w[5 * k] = px[k];
    }
    memcpy(h + 344, pair ? "ni1\0" : "n+1\0", 4);
}

/* mode 0 .nii, 1 .nii.gz, 2 .hdr/.img. The fixture is volume `which` of nvol. */
static inline void fx_nifti(const fx_vol *v, char *path, size_t cap, int big, int mode, int placement,
                            int nvol, int which, double *i2w) {
    unsigned char h[352];
    fx_nifti_header(v, h, big, mode == 2, placement, nvol, i2w);
    size_t plen;
    unsigned char *one = fx_payload(v, big, &plen);
    unsigned char *all = calloc((size_t)nvol, plen + 1);
    FX_CHECK(all);
    memcpy(all + (size_t)which * plen, one, plen);
    for (int k = 0; k < nvol; k++)
        if (k != which) memset(all + (size_t)k * plen, 0x5a, plen); /* other volumes differ */
    size_t tot = (size_t)nvol * plen;
    fx_name(path, cap, mode == 0 ? ".nii" : mode == 1 ? ".nii.gz" : ".hdr");
    if (mode == 2) {
        char img[1024];
        snprintf(img, sizeof img, "%.*s.img", (int)strlen(path) - 4, path);
        fx_write2(path, h, 348, NULL, 0);
        fx_write2(img, all, tot, NULL, 0);
    } else {
        unsigned char *file = malloc(352 + tot);
        FX_CHECK(file);
        memcpy(file, h, 352);
        memcpy(file + 352, all, tot);
        if (mode == 1) {
            size_t clen;
            unsigned char *c = fx_deflate(file, 352 + tot, 0, &clen);
            fx_write2(path, c, clen, NULL, 0);
            free(c);
        } else {
            fx_write2(path, file, 352 + tot, NULL, 0);
        }
        free(file);
    }
    free(one);
    free(all);
}

/* ---- MetaImage ----------------------------------------------------------------------------- */
static inline const char *fx_met_type(vx_dtype t) {
    switch (t) {
    case VX_DT_U8: return "MET_UCHAR"; case VX_DT_I8: return "MET_CHAR";
    case VX_DT_U16: return "MET_USHORT"; case VX_DT_I16: return "MET_SHORT";
    case VX_DT_U32: return "MET_UINT"; case VX_DT_I32: return "MET_INT";
    case VX_DT_F32: return "MET_FLOAT"; case VX_DT_F64: return "MET_DOUBLE";
    default: return "MET_HALF";
    }
}

/* mode 0 .mha, 1 .mha compressed, 2 .mhd + .raw, 3 .mhd + compressed .zraw */
static inline void fx_metaimage(const fx_vol *v, char *path, size_t cap, int big, int mode, double *i2w) {
    double m[9], o[3], sp[3];
    fx_random_affine(m, o);
    for (int k = 0; k < 3; k++) {
        sp[k] = fx_uniform(0.3, 2.5);
        double n = sqrt(m[k] * m[k] + m[3 + k] * m[3 + k] + m[6 + k] * m[6 + k]);
        for (int r = 0; r < 3; r++) m[3 * r + k] /= n; /* unit direction per index axis */
    }
    size_t plen, clen = 0;
    unsigned char *pay = fx_payload(v, big, &plen), *comp = NULL;
    int compressed = mode == 1 || mode == 3;
    if (compressed) comp = fx_deflate(pay, plen, 1, &clen);
    fx_name(path, cap, mode < 2 ? ".mha" : ".mhd");
    char data[1024], hdr[4096], file[1024];
    snprintf(data, sizeof data, "%s.%s", path, compressed ? "zraw" : "raw");
    snprintf(file, sizeof file, "%s", mode < 2 ? "LOCAL" : fx_base(data));
    snprintf(hdr, sizeof hdr,
        "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = %s\n"
        "CompressedData = %s\n%s"
        "TransformMatrix = %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n"
        "Offset = %.17g %.17g %.17g\nCenterOfRotation = 0 0 0\nAnatomicalOrientation = RAI\n"
        "ElementSpacing = %.17g %.17g %.17g\nDimSize = %d %d %d\nElementType = %s\nElementDataFile = %s\n",
        big ? "True" : "False", compressed ? "True" : "False", "",
        m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8], o[0], o[1], o[2], sp[0], sp[1], sp[2],
        v->nx, v->ny, v->nz, fx_met_type(v->dtype), file);
    if (mode < 2) {
        fx_write2(path, hdr, strlen(hdr), compressed ? comp : pay, compressed ? clen : plen);
    } else {
        fx_write2(path, hdr, strlen(hdr), NULL, 0);
        fx_write2(data, compressed ? comp : pay, compressed ? clen : plen, NULL, 0);
    }
    for (int r = 0; r < 3; r++) {
        double s = r < 2 ? -1 : 1;
        for (int c = 0; c < 3; c++) i2w[4 * r + c] = s * sp[c] * m[3 * r + c];
        i2w[4 * r + 3] = s * o[r];
    }
    free(pay);
    free(comp);
}

/* ---- INRIMAGE ------------------------------------------------------------------------------ */
static inline void fx_inr_header(const fx_vol *v, int big, char *h, double *sp, const char *extra) {
    const char *type = "float";
    switch (v->dtype) {
    case VX_DT_U8: case VX_DT_U16: case VX_DT_U32: type = "unsigned fixed"; break;
    case VX_DT_I8: case VX_DT_I16: case VX_DT_I32: type = "signed fixed"; break;
    default: break;
    }
    int n = snprintf(h, 257, "#INRIMAGE-4#{\nXDIM=%d\nYDIM=%d\nZDIM=%d\nVDIM=1\nTYPE=%s\nPIXSIZE=%zu bits\n"
                     "SCALE=2**0\nCPU=%s\nVX=%.6f\nVY=%.6f\nVZ=%.6f\n%s", v->nx, v->ny, v->nz, type,
                     8 * vx_dtype_size(v->dtype), big ? "sun" : "decm", sp[0], sp[1], sp[2], extra);
    memset(h + n, '\n', 252 - n);
    memcpy(h + 252, "##}\n", 4);
}

static inline void fx_inr(const fx_vol *v, char *path, size_t cap, int big, int gz, double *i2w) {
    double sp[3] = {fx_uniform(0.5, 4), fx_uniform(0.5, 4), fx_uniform(0.5, 4)};
    for (int k = 0; k < 3; k++) sp[k] = round(sp[k] * 1e6) / 1e6;
    char h[257];
    fx_inr_header(v, big, h, sp, "");
    size_t plen;
    unsigned char *pay = fx_payload(v, big, &plen);
    fx_name(path, cap, gz ? ".inr.gz" : ".inr");
    unsigned char *file = malloc(256 + plen);
    FX_CHECK(file);
    memcpy(file, h, 256);
    memcpy(file + 256, pay, plen);
    if (gz) {
        size_t clen;
        unsigned char *c = fx_deflate(file, 256 + plen, 0, &clen);
        fx_write2(path, c, clen, NULL, 0);
        free(c);
    } else {
        fx_write2(path, file, 256 + plen, NULL, 0);
    }
    memset(i2w, 0, 12 * sizeof(double));
    for (int k = 0; k < 3; k++) i2w[5 * k] = sp[k];
    free(file);
    free(pay);
}

/* ---- VolPack .den and raw ------------------------------------------------------------------ */
static inline void fx_den_header(unsigned char *h, int big, const int orig[3], const int map[3], uint32_t map_length) {
    memset(h, 0, 62);
    fx_put16(h, 1, big);
    for (int a = 0; a < 3; a++) {
        fx_put16(h + 2 + 2 * (3 + a), orig[a] - 1, big);  /* orig_max */
        fx_put16(h + 2 + 2 * (6 + a), orig[a], big);      /* orig_len */
        fx_put16(h + 2 + 2 * (15 + a), orig[a], big);     /* extr_len */
        fx_put16(h + 2 + 2 * (21 + a), map[a] - 1, big);  /* map_max */
        fx_put16(h + 2 + 2 * (24 + a), map[a], big);      /* map_len */
    }
    fx_put16(h + 56, 3, big);
    fx_put32(h + 58, map_length, big);
}

static inline void fx_den(const fx_vol *v, char *path, size_t cap, int big, double *i2w) {
    int map[3] = {v->nx, v->ny, v->nz}, orig[3];
    for (int a = 0; a < 3; a++) orig[a] = map[a] * (1 + (int)(fx_rand() * 3));
    unsigned char h[62];
    fx_den_header(h, big, orig, map, (uint32_t)fx_count(v));
    size_t plen;
    unsigned char *pay = fx_payload(v, big, &plen);
    fx_name(path, cap, ".den");
    fx_write2(path, h, 62, pay, plen);
    memset(i2w, 0, 12 * sizeof(double));
    for (int a = 0; a < 3; a++) i2w[5 * a] = (double)orig[a] / map[a];
    free(pay);
}

static inline const char *fx_dtype_word(vx_dtype t) {
    switch (t) {
    case VX_DT_U8: return "uint8"; case VX_DT_I8: return "int8"; case VX_DT_U16: return "uint16";
    case VX_DT_I16: return "int16"; case VX_DT_U32: return "uint32"; case VX_DT_I32: return "int32";
    case VX_DT_F16: return "float16"; case VX_DT_F32: return "float32"; default: return "float64";
    }
}

static inline void fx_raw(const fx_vol *v, char *path, size_t cap, int big, char *spec, size_t scap) {
    size_t plen;
    unsigned char *pay = fx_payload(v, big, &plen);
    fx_name(path, cap, ".raw");
    fx_write2(path, pay, plen, NULL, 0);
    snprintf(spec, scap, "%d,%d,%d,%s,%s", v->nx, v->ny, v->nz, fx_dtype_word(v->dtype), big ? "big" : "little");
    free(pay);
}

/* ---- Plenoxels .npz ------------------------------------------------------------------------ */
typedef struct {
    int res[3], deg, n;
    int32_t *links;      /* res[0]*res[1]*res[2], svox2 order (z fastest) */
    float *density;      /* n */
    uint16_t *sh;        /* n * 3 * (deg+1)^2 halves, colour-major */
    double radius[3], center[3];
} fx_plenoxels;

static inline void fx_plenoxels_make(fx_plenoxels *p, int X, int Y, int Z, int deg) {
    p->res[0] = X; p->res[1] = Y; p->res[2] = Z; p->deg = deg;
    size_t nl = (size_t)X * Y * Z;
    p->links = malloc(nl * sizeof(int32_t));
    FX_CHECK(p->links);
    p->n = 0;
    for (size_t i = 0; i < nl; i++) p->links[i] = fx_rand() < 0.3 ? -1 : p->n++;
    for (size_t i = 0; i < nl; i++) /* shuffle the order links point in */
        if (p->links[i] >= 0) {
            size_t j = (size_t)(fx_rand() * nl);
            if (p->links[j] >= 0) { int32_t t = p->links[i]; p->links[i] = p->links[j]; p->links[j] = t; }
        }
    int cols = 3 * (deg + 1) * (deg + 1);
    p->density = malloc((size_t)(p->n + 1) * sizeof(float));
    p->sh = malloc((size_t)(p->n + 1) * cols * sizeof(uint16_t));
    FX_CHECK(p->density && p->sh);
    for (int i = 0; i < p->n; i++) {
        p->density[i] = (float)fx_uniform(-5, 50);
        for (int k = 0; k < cols; k++) p->sh[(size_t)i * cols + k] = vx_float_to_half((float)fx_uniform(-2, 2));
    }
    for (int a = 0; a < 3; a++) { p->radius[a] = (float)fx_uniform(0.5, 2); p->center[a] = (float)fx_uniform(-1, 1); }
}

static inline void fx_plenoxels_free(fx_plenoxels *p) { free(p->links); free(p->density); free(p->sh); }

/* A .npy in memory: descr, shape and raw little-endian bytes. */
static inline unsigned char *fx_npy(const char *descr, const char *shape, const void *data, size_t bytes, size_t *len) {
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    size_t hl = (size_t)n + 1, total = 10 + hl;
    size_t pad = (64 - total % 64) % 64;
    hl += pad;
    unsigned char *b = malloc(10 + hl + bytes + 1);
    FX_CHECK(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(hl & 0xff);
    b[9] = (unsigned char)(hl >> 8);
    memcpy(b + 10, dict, (size_t)n);
    memset(b + 10 + n, ' ', pad);
    b[10 + hl - 1] = '\n';
    if (bytes) memcpy(b + 10 + hl, data, bytes);
    *len = 10 + hl + bytes;
    return b;
}

/* Write the checkpoint. variant: NULL, or one of "no-links", "basis-3", "sh-cols",
 * "link-oob", "links-f32", "n-mismatch" to make it malformed. */
static inline void fx_plenoxels_write(const fx_plenoxels *p, char *path, size_t cap, const char *variant) {
    fx_name(path, cap, ".npz");
    int err = 0;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    FX_CHECK(z);
    unsigned char *bufs[8];
    int nb = 0;
    char shape[128];
    size_t len, nl = (size_t)p->res[0] * p->res[1] * p->res[2];
    int cols = 3 * (p->deg + 1) * (p->deg + 1);
    int is = variant && !strcmp(variant, "link-oob");
    int32_t *links = malloc(nl * sizeof(int32_t));
    FX_CHECK(links);
    memcpy(links, p->links, nl * sizeof(int32_t));
    if (is) links[nl / 2] = p->n;
#define FX_ADD(name) do { \
        zip_source_t *s = zip_source_buffer(z, bufs[nb - 1], len, 0); FX_CHECK(s); \
        FX_CHECK(zip_file_add(z, name, s, ZIP_FL_OVERWRITE) >= 0); } while (0)
    if (!(variant && !strcmp(variant, "no-links"))) {
        snprintf(shape, sizeof shape, "(%d, %d, %d)", p->res[0], p->res[1], p->res[2]);
        if (variant && !strcmp(variant, "links-f32")) bufs[nb++] = fx_npy("<f4", shape, links, nl * 4, &len);
        else bufs[nb++] = fx_npy("<i4", shape, links, nl * 4, &len);
        FX_ADD("links.npy");
    }
    int nd = p->n + (variant && !strcmp(variant, "n-mismatch") ? 1 : 0);
    snprintf(shape, sizeof shape, "(%d, 1)", nd);
    bufs[nb++] = fx_npy("<f4", shape, p->density, (size_t)nd * 4, &len);
    FX_ADD("density_data.npy");
    int c2 = variant && !strcmp(variant, "sh-cols") ? cols - 1 : cols;
    snprintf(shape, sizeof shape, "(%d, %d)", p->n, c2);
    bufs[nb++] = fx_npy("<f2", shape, p->sh, (size_t)p->n * c2 * 2, &len);
    FX_ADD("sh_data.npy");
    float r[3] = {(float)p->radius[0], (float)p->radius[1], (float)p->radius[2]};
    float c[3] = {(float)p->center[0], (float)p->center[1], (float)p->center[2]};
    bufs[nb++] = fx_npy("<f4", "(3,)", r, 12, &len);
    FX_ADD("radius.npy");
    bufs[nb++] = fx_npy("<f4", "(3,)", c, 12, &len);
    FX_ADD("center.npy");
    int32_t bt = variant && !strcmp(variant, "basis-3") ? 3 : 1;
    double huge = 1e300; /* "basis-huge": a float64 basis_type no int can hold */
    if (variant && !strcmp(variant, "basis-huge")) bufs[nb++] = fx_npy("<f8", "()", &huge, 8, &len);
    else bufs[nb++] = fx_npy("<i4", "()", &bt, 4, &len);
    FX_ADD("basis_type.npy");
#undef FX_ADD
    FX_CHECK(zip_close(z) == 0);
    for (int i = 0; i < nb; i++) free(bufs[i]);
    free(links);
}

#endif
