/* nifti.c - NIfTI-1 header reader (.nii, .nii.gz, .hdr/.img pairs, either endian):
 * datatype/bitpix, scl_slope/scl_inter, sform (else qform, else pixdim) -> RAS
 * index-to-world; 4-D files hold several volumes. formats.c calls it; volume.c reads data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"
#include "vx_fmt.h"

static int16_t vx__i16(const unsigned char *b, int big) {
    return (int16_t)(big ? (b[0] << 8 | b[1]) : (b[1] << 8 | b[0]));
}

static int32_t vx__i32(const unsigned char *b, int big) {
    uint32_t u = big ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
                     : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
    return (int32_t)u;
}

static double vx__f32(const unsigned char *b, int big) {
    int32_t i = vx__i32(b, big);
    float f;
    memcpy(&f, &i, 4);
    return f;
}

static int vx__datatype(int code, vx_dtype *t) {
    switch (code) {
    case 2: *t = VX_DT_U8; return 0;
    case 4: *t = VX_DT_I16; return 0;
    case 8: *t = VX_DT_I32; return 0;
    case 16: *t = VX_DT_F32; return 0;
    case 64: *t = VX_DT_F64; return 0;
    case 256: *t = VX_DT_I8; return 0;
    case 512: *t = VX_DT_U16; return 0;
    case 768: *t = VX_DT_U32; return 0;
    default: return -1;
    }
}

/* The qform rotation from quaternion (b, c, d) with spacings and qfac (NIfTI-1 method 2). */
static void vx__qform(double b, double c, double d, const double px[3], double qfac,
                      double qx, double qy, double qz, double *m) {
    double a = 1.0 - (b * b + c * c + d * d);
    if (a < 1e-7) { /* 180 degree rotation: renormalise (b,c,d), a = 0 */
        double s = 1.0 / sqrt(b * b + c * c + d * d);
        b *= s; c *= s; d *= s;
        a = 0.0;
    } else {
        a = sqrt(a);
    }
    double r[9] = {a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c),
                   2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b),
                   2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b};
    double s[3] = {px[0], px[1], px[2] * qfac};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) m[4 * i + j] = r[3 * i + j] * s[j];
    m[3] = qx; m[7] = qy; m[11] = qz;
}

int vx_nifti_info(const char *path, vx_vol_info *v) {
    vx_vol_info_init(v, "NIfTI-1", path);
    unsigned char *h = NULL;
    size_t n = 0;
    int gz = vx_fmt_is_gzip(path), rc = -1;
    if (gz) {
        if (vx_gz_read(path, 0, 0, 0, 348, 1, &h, &n, "header") != 0) return -1;
    } else if (vx_fmt_read_head(path, 348, &h, &n) != 0) {
        return -1;
    }
    if (n < 348) { vx_error("%s: header: %zu bytes, NIfTI-1 needs 348", path, n); goto done; }
    int big;
    if (vx__i32(h, 0) == 348) big = 0;
    else if (vx__i32(h, 1) == 348) big = 1;
    else if (vx__i32(h, 0) == 540 || vx__i32(h, 1) == 540) {
        vx_error("%s: sizeof_hdr: 540 is NIfTI-2, which voxray does not read", path);
        goto done;
    } else { vx_error("%s: sizeof_hdr: %d (NIfTI-1 has 348)", path, vx__i32(h, 0)); goto done; }
    const unsigned char *magic = h + 344;
    int single = memcmp(magic, "n+1\0", 4) == 0, pair = memcmp(magic, "ni1\0", 4) == 0;
    if (!single && !pair) {
        vx_error("%s: magic: not 'n+1' or 'ni1' (ANALYZE 7.5 is not supported)", path);
        goto done;
    }
    int dim[8];
    for (int i = 0; i < 8; i++) dim[i] = vx__i16(h + 40 + 2 * i, big);
    if (dim[0] < 3 || dim[0] > 7) {
        vx_error("%s: dim[0]: %d (voxray reads 3-D volumes, or 4-D+ as a series of volumes)",
                 path, dim[0]);
        goto done;
    }
    for (int i = 1; i <= dim[0]; i++)
        if (dim[i] < 1) { vx_error("%s: dim[%d]: %d is not a positive size", path, i, dim[i]); goto done; }
    for (int k = 0; k < 3; k++) v->dims[k] = dim[k + 1];
    v->nvol = 1;
    for (int i = 4; i <= dim[0]; i++) {
        v->nvol *= dim[i];
        if (v->nvol > (1 << 20)) { vx_error("%s: dim[%d]: too many volumes", path, i); goto done; }
    }
    int code = vx__i16(h + 70, big), bitpix = vx__i16(h + 72, big);
    if (vx__datatype(code, &v->dtype) != 0) {
        vx_error("%s: datatype: %d is not supported (uint8/16/32, int8/16/32, float32, float64)",
                 path, code);
        goto done;
    }
    if ((size_t)bitpix != 8 * vx_dtype_size(v->dtype)) {
        vx_error("%s: bitpix: %d contradicts datatype %d (%s, %zu bits)", path, bitpix, code,
                 vx_dtype_name(v->dtype), 8 * vx_dtype_size(v->dtype));
        goto done;
    }
    v->big_endian = big;
    double px[8];
    for (int i = 0; i < 8; i++) px[i] = vx__f32(h + 76 + 4 * i, big);
    double vox_offset = vx__f32(h + 108, big);
    double slope = vx__f32(h + 112, big), inter = vx__f32(h + 116, big);
    if (slope != 0.0 && isfinite(slope)) {
        v->slope = slope;
        v->inter = isfinite(inter) ? inter : 0.0;
    }
    if (!isfinite(vox_offset) || vox_offset < (single ? 352.0 : 0.0) || vox_offset > 1e15 ||
        vox_offset != floor(vox_offset)) {
        vx_error("%s: vox_offset: %g is not a whole byte offset%s", path, vox_offset,
                 single ? " >= 352" : "");
        goto done;
    }
    int qcode = vx__i16(h + 252, big), scode = vx__i16(h + 254, big);
    const char *method;
    if (scode > 0) {
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++) v->i2w[4 * r + c] = vx__f32(h + 280 + 16 * r + 4 * c, big);
        method = "sform";
    } else if (qcode > 0) {
        double sp[3];
        for (int k = 0; k < 3; k++) {
            sp[k] = px[k + 1];
            if (!(sp[k] > 0) || !isfinite(sp[k])) {
                vx_error("%s: pixdim[%d]: %g is not a positive spacing", path, k + 1, sp[k]);
                goto done;
            }
        }
        double qfac = px[0] < 0 ? -1.0 : 1.0;
        vx__qform(vx__f32(h + 256, big), vx__f32(h + 260, big), vx__f32(h + 264, big), sp, qfac,
                  vx__f32(h + 268, big), vx__f32(h + 272, big), vx__f32(h + 276, big), v->i2w);
        method = "qform";
    } else {
        memset(v->i2w, 0, sizeof v->i2w);
        for (int k = 0; k < 3; k++)
            v->i2w[5 * k] = px[k + 1] > 0 && isfinite(px[k + 1]) ? px[k + 1] : 1.0;
        method = "pixdim (no sform or qform)";
    }
    snprintf(v->notes, sizeof v->notes,
             "placement: %s (sform_code %d, qform_code %d), world RAS mm; datatype %d", method,
             scode, qcode, code);
    if (gz) {
        v->encoding = VX_ENC_GZIP;
        v->gz_skip = (long long)vox_offset;
    } else if (pair) {
        /* the data sits in the .img next to the .hdr */
        size_t l = strlen(path);
        if (!vx_fmt_has_ext(path, ".hdr") || l >= sizeof v->data_path) {
            vx_error("%s: magic: 'ni1' keeps the data in a .img file; open the .hdr", path);
            goto done;
        }
        snprintf(v->data_path, sizeof v->data_path, "%s", path);
        memcpy(v->data_path + l - 4, vx_fmt_has_ext(path, ".HDR") && path[l - 1] == 'R' ? ".IMG" : ".img", 4);
        v->data_offset = (long long)vox_offset;
    } else {
        v->data_offset = (long long)vox_offset;
    }
    rc = vx_vol_check(v);
done:
    free(h);
    return rc;
}
