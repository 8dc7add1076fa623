/* image.c - frames to files: 8-bit PNG through stb_image_write (the one file that
 * includes its implementation), 16-bit grey PNG for depth written with zlib (stb only
 * writes 8-bit). Every file is written to a temporary name and renamed into place. */
#include "image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "vx_common.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBIW_ASSERT(x) ((void)0)
#include <stb/stb_image_write.h>

static unsigned char vx__q8(float v) {
    if (!(v > 0.0f)) return 0; /* also NaN */
    if (v >= 1.0f) return 255;
    return (unsigned char)lrintf(v * 255.0f);
}

void vx_image_quantize(const vx_frame *f, int transparent, unsigned char *out) {
    size_t n = (size_t)f->width * f->height;
    int ch = transparent ? 4 : 3;
    for (size_t p = 0; p < n; p++) {
        float a = f->alpha[p];
        if (transparent) {
            /* straight alpha: the frame was rendered on a black background, so rgb is
             * the premultiplied colour; divide by the opacity */
            for (int c = 0; c < 3; c++) {
                float col = a > 1e-6f ? f->rgb[3 * p + c] / a : 0.0f;
                out[ch * p + c] = vx__q8(col);
            }
            out[ch * p + 3] = vx__q8(a);
        } else {
            for (int c = 0; c < 3; c++) out[ch * p + c] = vx__q8(f->rgb[3 * p + c]);
        }
    }
}

typedef struct { unsigned char *buf; size_t len, cap; int failed; } vx__membuf;

static void vx__mem_write(void *ctx, void *data, int size) {
    vx__membuf *m = ctx;
    if (m->failed || size <= 0) return;
    if (m->len + (size_t)size > m->cap) {
        size_t cap = (m->cap ? m->cap * 2 : 1 << 16);
        while (cap < m->len + (size_t)size) cap *= 2;
        unsigned char *nb = realloc(m->buf, cap);
        if (!nb) { m->failed = 1; return; }
        m->buf = nb;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, data, (size_t)size);
    m->len += (size_t)size;
}

static int vx__png8(const char *path, const unsigned char *px, int w, int h, int ch) {
    vx__membuf m = {0};
    int ok = stbi_write_png_to_func(vx__mem_write, &m, w, h, ch, px, w * ch) && !m.failed;
    int rc = ok ? vx_write_file_atomic(path, m.buf, m.len) : vx_error("%s: PNG encoding failed", path);
    free(m.buf);
    return rc;
}

int vx_image_write_png(const char *path, const vx_frame *f, int transparent) {
    int ch = transparent ? 4 : 3;
    unsigned char *px = vx_malloc((size_t)f->width * f->height * ch, path);
    if (!px) return -1;
    vx_image_quantize(f, transparent, px);
    int rc = vx__png8(path, px, f->width, f->height, ch);
    free(px);
    return rc;
}

int vx_image_write_gray8(const char *path, const float *v, int w, int h, float lo, float hi) {
    unsigned char *px = vx_malloc((size_t)w * h, path);
    if (!px) return -1;
    float s = hi > lo ? 1.0f / (hi - lo) : 0.0f;
    for (size_t p = 0; p < (size_t)w * h; p++) px[p] = vx__q8((v[p] - lo) * s);
    int rc = vx__png8(path, px, w, h, 1);
    free(px);
    return rc;
}

/* ---- 16-bit PNG: signature, IHDR, one IDAT (zlib), IEND ---------------------------- */

static void vx__be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static int vx__chunk(FILE *f, const char *type, const unsigned char *data, uint32_t len) {
    unsigned char hdr[8];
    vx__be32(hdr, len);
    memcpy(hdr + 4, type, 4);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (len) crc = crc32(crc, data, len);
    unsigned char tail[4];
    vx__be32(tail, (uint32_t)crc);
    return fwrite(hdr, 1, 8, f) == 8 && (!len || fwrite(data, 1, len, f) == len) && fwrite(tail, 1, 4, f) == 4;
}

int vx_image_write_depth16(const char *path, const float *depth, const float *alpha, int w, int h) {
    size_t n = (size_t)w * h, raw_len = (size_t)h * (1 + 2 * (size_t)w);
    /* normalise by the expected depth divided by opacity over pixels that hit something */
    float lo = INFINITY, hi = -INFINITY;
    for (size_t p = 0; p < n; p++) {
        if (alpha[p] < 1e-3f) continue;
        float d = depth[p] / alpha[p];
        if (d < lo) lo = d;
        if (d > hi) hi = d;
    }
    unsigned char *raw = vx_malloc(raw_len, path);
    uLongf zcap = compressBound((uLong)raw_len);
    unsigned char *z = vx_malloc(zcap, path);
    if (!raw || !z) { free(raw); free(z); return -1; }
    float s = hi > lo ? 65534.0f / (hi - lo) : 0.0f;
    for (int y = 0; y < h; y++) {
        unsigned char *row = raw + (size_t)y * (1 + 2 * (size_t)w);
        row[0] = 0; /* filter: none */
        for (int x = 0; x < w; x++) {
            size_t p = (size_t)y * w + x;
            uint16_t v = 0; /* 0: nothing hit; near = 65535, far = 1 */
            if (alpha[p] >= 1e-3f) v = (uint16_t)(65535 - lrintf((depth[p] / alpha[p] - lo) * s));
            row[1 + 2 * x] = (unsigned char)(v >> 8);
            row[2 + 2 * x] = (unsigned char)v;
        }
    }
    int zrc = compress2(z, &zcap, raw, (uLong)raw_len, 6);
    free(raw);
    if (zrc != Z_OK) { free(z); return vx_error("%s: zlib compression failed", path); }
    char tmp[4096];
    vx_temp_name(path, tmp, sizeof tmp);
    FILE *f = fopen(tmp, "wb");
    if (!f) { free(z); return vx_error("%s: cannot write", path); }
    static const unsigned char sig[8] = {137, 'P', 'N', 'G', 13, 10, 26, 10};
    unsigned char ihdr[13];
    vx__be32(ihdr, (uint32_t)w);
    vx__be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 16; ihdr[9] = 0; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
    int ok = fwrite(sig, 1, 8, f) == 8 && vx__chunk(f, "IHDR", ihdr, 13) && vx__chunk(f, "IDAT", z, (uint32_t)zcap) &&
             vx__chunk(f, "IEND", NULL, 0);
    ok = (fclose(f) == 0) && ok;
    free(z);
    if (!ok) vx_error("%s: write failed", path);
    return vx_commit_temp(tmp, path, ok);
}
