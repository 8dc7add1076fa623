/* inrimage.c - INRIMAGE-4 header reader (.inr, .inr.gz; used by CGAL and medInria):
 * 256-byte-block ASCII header ending "##}", XDIM/YDIM/ZDIM, TYPE + PIXSIZE, CPU byte
 * order, VX/VY/VZ spacing and TX/TY/TZ origin. formats.c calls it; volume.c reads data. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vx_common.h"
#include "vx_fmt.h"

#define VX_INR_MAX_HEADER 65536

int vx_inr_info(const char *path, vx_vol_info *v) {
    vx_vol_info_init(v, "INRIMAGE-4", path);
    unsigned char *buf = NULL;
    size_t len = 0;
    int gz = vx_fmt_is_gzip(path), rc = -1;
    if (gz) {
        if (vx_gz_read(path, 0, 0, 0, VX_INR_MAX_HEADER, 1, &buf, &len, "header") != 0) return -1;
    } else if (vx_fmt_read_head(path, VX_INR_MAX_HEADER, &buf, &len) != 0) {
        return -1;
    }
    char *s = (char *)buf;
    if (len < 14 || memcmp(s, "#INRIMAGE-4#{", 13) != 0) {
        vx_error("%s: not an INRIMAGE-4 file (magic #INRIMAGE-4#{ missing)", path);
        goto done;
    }
    char *end = NULL;
    for (size_t i = 0; i + 4 <= len; i++)
        if (memcmp(s + i, "##}\n", 4) == 0) { end = s + i; break; }
    if (!end) { vx_error("%s: header: no '##}' end mark in the first %d bytes", path, VX_INR_MAX_HEADER); goto done; }
    size_t hlen = (size_t)(end - s) + 4;
    if (hlen % 256) { vx_error("%s: header: %zu bytes, not a multiple of 256", path, hlen); goto done; }
    *end = 0;
    long long dim[3] = {-1, -1, -1}, vdim = 1, pixsize = -1;
    double vx[3] = {1, 1, 1}, tx[3] = {0, 0, 0};
    char type[64] = "";
    int big = 0;
    char *save = NULL;
    for (char *l = strtok_r(s + 14, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        l = vx_fmt_trim(l);
        if (!*l || *l == '#') continue;
        char *eq = strchr(l, '=');
        if (!eq) { vx_error("%s: header line '%.60s' is not KEY=VALUE", path, l); goto done; }
        *eq = 0;
        char *key = vx_fmt_trim(l), *val = vx_fmt_trim(eq + 1), *e;
        static const char *dk[3] = {"XDIM", "YDIM", "ZDIM"}, *sk[3] = {"VX", "VY", "VZ"},
                          *ok[3] = {"TX", "TY", "TZ"};
        int done_key = 0;
        for (int a = 0; a < 3; a++) {
            if (!strcasecmp(key, dk[a])) {
                dim[a] = strtoll(val, &e, 10);
                if (e == val || *e || dim[a] < 1) { vx_error("%s: %s: '%s' is not a positive size", path, key, val); goto done; }
                done_key = 1;
            } else if (!strcasecmp(key, sk[a]) || !strcasecmp(key, ok[a])) {
                double d = strtod(val, &e);
                if (e == val) { vx_error("%s: %s: '%s' is not a number", path, key, val); goto done; }
                if (!strcasecmp(key, sk[a])) vx[a] = d; else tx[a] = d;
                done_key = 1;
            }
        }
        if (done_key) continue;
        if (!strcasecmp(key, "VDIM")) {
            vdim = strtoll(val, &e, 10);
            if (vdim != 1) { vx_error("%s: VDIM: %s components per voxel (voxray reads scalar volumes)", path, val); goto done; }
        } else if (!strcasecmp(key, "TYPE")) {
            snprintf(type, sizeof type, "%s", val);
        } else if (!strcasecmp(key, "PIXSIZE")) {
            pixsize = strtoll(val, &e, 10);
            if (e == val) { vx_error("%s: PIXSIZE: '%s' is not 'N bits'", path, val); goto done; }
        } else if (!strcasecmp(key, "CPU")) {
            if (!strcasecmp(val, "decm") || !strcasecmp(val, "alpha") || !strcasecmp(val, "pc")) big = 0;
            else if (!strcasecmp(val, "sun") || !strcasecmp(val, "sgi")) big = 1;
            else { vx_error("%s: CPU: '%s' is not decm, alpha, pc, sun or sgi", path, val); goto done; }
        }
    }
    for (int a = 0; a < 3; a++)
        if (dim[a] < 1) { vx_error("%s: %cDIM: missing", path, "XYZ"[a]); goto done; }
    if (!type[0]) { vx_error("%s: TYPE: missing", path); goto done; }
    if (pixsize < 0) { vx_error("%s: PIXSIZE: missing", path); goto done; }
    if (!strcasecmp(type, "float")) {
        if (pixsize == 32) v->dtype = VX_DT_F32;
        else if (pixsize == 64) v->dtype = VX_DT_F64;
        else { vx_error("%s: PIXSIZE: %lld bits contradicts TYPE=float (32 or 64)", path, pixsize); goto done; }
    } else if (!strcasecmp(type, "unsigned fixed") || !strcasecmp(type, "signed fixed")) {
        int sg = type[0] == 's' || type[0] == 'S';
        if (pixsize == 8) v->dtype = sg ? VX_DT_I8 : VX_DT_U8;
        else if (pixsize == 16) v->dtype = sg ? VX_DT_I16 : VX_DT_U16;
        else if (pixsize == 32) v->dtype = sg ? VX_DT_I32 : VX_DT_U32;
        else { vx_error("%s: PIXSIZE: %lld bits contradicts TYPE=%s (8, 16 or 32)", path, pixsize, type); goto done; }
    } else {
        vx_error("%s: TYPE: '%s' is not supported (float, unsigned fixed, signed fixed)", path, type);
        goto done;
    }
    for (int a = 0; a < 3; a++) {
        if (!(vx[a] > 0)) { vx_error("%s: V%c: %g is not a positive spacing", path, "XYZ"[a], vx[a]); goto done; }
        v->dims[a] = dim[a];
        v->i2w[5 * a] = vx[a];
        v->i2w[4 * a + 3] = tx[a];
    }
    v->big_endian = big;
    if (gz) {
        v->encoding = VX_ENC_GZIP;
        v->gz_skip = (long long)hlen;
    } else {
        v->data_offset = (long long)hlen;
    }
    snprintf(v->notes, sizeof v->notes, "header: %zu bytes; TYPE=%s PIXSIZE=%lld", hlen, type, pixsize);
    rc = vx_vol_check(v);
done:
    free(buf);
    return rc;
}
