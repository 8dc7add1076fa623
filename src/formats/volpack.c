/* volpack.c - VolPack .den reader (the density files of VolPack's examples): a 62-byte
 * header of int16 fields (either byte order, told apart by map_version = 1) and an int32
 * map_length, then map_len[0]*map_len[1]*map_len[2] uint8 voxels. formats.c calls it. */
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"
#include "vx_fmt.h"

#define VX_DEN_HEADER 62

static int vx__s16(const unsigned char *b, int big) {
    return (int16_t)(big ? (b[0] << 8 | b[1]) : (b[1] << 8 | b[0]));
}

int vx_den_info(const char *path, vx_vol_info *v) {
    vx_vol_info_init(v, "VolPack den", path);
    unsigned char *h;
    size_t n;
    if (vx_fmt_read_head(path, VX_DEN_HEADER, &h, &n) != 0) return -1;
    int rc = -1, big;
    if (n < VX_DEN_HEADER) { vx_error("%s: header: %zu bytes, a .den header has 62", path, n); goto done; }
    if (vx__s16(h, 0) == 1) big = 0;
    else if (vx__s16(h, 1) == 1) big = 1;
    else { vx_error("%s: map_version: %d (expected 1)", path, vx__s16(h, 0)); goto done; }
    /* int16 fields: version, orig_min[3] orig_max[3] orig_len[3] extr_min[3] extr_max[3]
     * extr_len[3] map_min[3] map_max[3] map_len[3], map_warps; then int32 map_length */
    int orig_len[3], map_len[3];
    for (int a = 0; a < 3; a++) {
        orig_len[a] = vx__s16(h + 2 + 2 * (6 + a), big);
        map_len[a] = vx__s16(h + 2 + 2 * (24 + a), big);
        if (map_len[a] < 1) { vx_error("%s: map_len[%d]: %d is not a positive size", path, a, map_len[a]); goto done; }
    }
    const unsigned char *m = h + 58;
    long long map_length = big ? (long long)((uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 | (uint32_t)m[2] << 8 | m[3])
                               : (long long)((uint32_t)m[3] << 24 | (uint32_t)m[2] << 16 | (uint32_t)m[1] << 8 | m[0]);
    long long prod = (long long)map_len[0] * map_len[1] * map_len[2];
    if (map_length != prod) {
        vx_error("%s: map_length: %lld contradicts map_len %d x %d x %d = %lld", path, map_length,
                 map_len[0], map_len[1], map_len[2], prod);
        goto done;
    }
    v->dtype = VX_DT_U8;
    v->data_offset = VX_DEN_HEADER;
    /* the map was resampled from the original scan: keep the original's aspect ratio */
    for (int a = 0; a < 3; a++) {
        v->dims[a] = map_len[a];
        v->i2w[5 * a] = orig_len[a] > 0 ? (double)orig_len[a] / map_len[a] : 1.0;
    }
    snprintf(v->notes, sizeof v->notes, "original scan %d x %d x %d; spacing = original/map size "
             "(override with --spacing)", orig_len[0], orig_len[1], orig_len[2]);
    rc = vx_vol_check(v);
done:
    free(h);
    return rc;
}
