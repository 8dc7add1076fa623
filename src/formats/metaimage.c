/* metaimage.c - MetaImage (ITK) header reader: .mha (data after the header, LOCAL) and
 * .mhd + separate data file, CompressedData (zlib), byte order, spacing, Offset and
 * TransformMatrix (ITK's LPS world, converted to RAS). formats.c calls it. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vx_common.h"
#include "vx_fmt.h"

static int vx__bool(const char *s) {
    return !strcasecmp(s, "true") || !strcasecmp(s, "1") || !strcasecmp(s, "yes");
}

static int vx__etype(const char *s) {
    static const struct { const char *n; vx_dtype t; } tt[] = {
        {"MET_UCHAR", VX_DT_U8}, {"MET_CHAR", VX_DT_I8}, {"MET_USHORT", VX_DT_U16},
        {"MET_SHORT", VX_DT_I16}, {"MET_UINT", VX_DT_U32}, {"MET_INT", VX_DT_I32},
        {"MET_ULONG", VX_DT_U32}, {"MET_LONG", VX_DT_I32}, {"MET_FLOAT", VX_DT_F32},
        {"MET_DOUBLE", VX_DT_F64},
    };
    for (size_t i = 0; i < sizeof tt / sizeof tt[0]; i++)
        if (!strcasecmp(s, tt[i].n)) return (int)tt[i].t;
    return -1;
}

int vx_metaimage_info(const char *path, vx_vol_info *v) {
    vx_vol_info_init(v, "MetaImage", path);
    unsigned char *buf;
    size_t len;
    if (vx_fmt_read_head(path, VX_FMT_MAX_HEADER, &buf, &len) != 0) return -1;
    int rc = -1, ndims = 0, nsize = -1, nsp = -1, norg = -1, ntm = -1, type = -1, big = 0;
    int compressed = 0, channels = 1, have_file = 0;
    double size[8], sp[8], org[8], tm[16];
    long long header_size = 0, comp_size = 0;
    char *s = (char *)buf, file[1024] = "";
    if (memchr(s, 0, len)) len = strlen(s);
    size_t pos = 0;
    while (pos < len && !have_file) {
        char *line = s + pos, *nl = memchr(line, '\n', len - pos);
        if (!nl) nl = s + len;
        *nl = 0;
        pos = (size_t)(nl - s) + 1;
        char *l = vx_fmt_trim(line);
        if (!*l) continue;
        char *eq = strchr(l, '=');
        if (!eq) { vx_error("%s: header line '%.60s' is not 'Key = Value'", path, l); goto done; }
        *eq = 0;
        char *key = vx_fmt_trim(l), *val = vx_fmt_trim(eq + 1);
        if (!strcasecmp(key, "ObjectType")) {
            if (strcasecmp(val, "Image")) { vx_error("%s: ObjectType: '%s' is not Image", path, val); goto done; }
        } else if (!strcasecmp(key, "NDims")) {
            long long nd;
            ndims = vx_fmt_int(val, 1, 8, &nd) ? -1 : (int)nd;
            if (ndims < 1) { vx_error("%s: NDims: '%s' is not 1..8", path, val); goto done; }
        } else if (!strcasecmp(key, "DimSize")) {
            nsize = vx_fmt_doubles(val, size, 8);
        } else if (!strcasecmp(key, "ElementSpacing") || !strcasecmp(key, "ElementSize")) {
            if (nsp < 0 || !strcasecmp(key, "ElementSpacing")) nsp = vx_fmt_doubles(val, sp, 8);
        } else if (!strcasecmp(key, "Offset") || !strcasecmp(key, "Position") ||
                   !strcasecmp(key, "Origin")) {
            norg = vx_fmt_doubles(val, org, 8);
        } else if (!strcasecmp(key, "TransformMatrix") || !strcasecmp(key, "Rotation") ||
                   !strcasecmp(key, "Orientation")) {
            ntm = vx_fmt_doubles(val, tm, 16);
        } else if (!strcasecmp(key, "ElementType")) {
            type = vx__etype(val);
            if (type < 0) {
                vx_error("%s: ElementType: '%s' is not supported (MET_UCHAR..MET_DOUBLE)", path, val);
                goto done;
            }
        } else if (!strcasecmp(key, "ElementByteOrderMSB") || !strcasecmp(key, "BinaryDataByteOrderMSB")) {
            big = vx__bool(val);
        } else if (!strcasecmp(key, "CompressedData")) {
            compressed = vx__bool(val);
        } else if (!strcasecmp(key, "CompressedDataSize")) {
            if (vx_fmt_int(val, 0, LLONG_MAX, &comp_size)) comp_size = -1;
            if (comp_size < 0) { vx_error("%s: CompressedDataSize: %s is negative", path, val); goto done; }
        } else if (!strcasecmp(key, "HeaderSize")) {
            if (vx_fmt_int(val, -1, LLONG_MAX, &header_size)) header_size = -2;
            if (header_size < -1) { vx_error("%s: HeaderSize: %s is not >= -1", path, val); goto done; }
        } else if (!strcasecmp(key, "ElementNumberOfChannels")) {
            long long ch;
            if (vx_fmt_int(val, 1, 64, &ch)) {
                vx_error("%s: ElementNumberOfChannels: '%s' is not 1..64", path, val);
                goto done;
            }
            channels = (int)ch;
        } else if (!strcasecmp(key, "BinaryData")) {
            if (!vx__bool(val)) { vx_error("%s: BinaryData: ASCII data is not supported", path); goto done; }
        } else if (!strcasecmp(key, "AnatomicalOrientation")) {
            snprintf(v->notes, sizeof v->notes, "AnatomicalOrientation: %.32s (world taken as "
                     "ITK's LPS, index_to_world is RAS)", val);
        } else if (!strcasecmp(key, "ElementDataFile")) {
            snprintf(file, sizeof file, "%s", val);
            have_file = 1;
            v->data_offset = (long long)pos; /* LOCAL: the data starts on the next byte */
        }
    }
    if (!have_file) { vx_error("%s: ElementDataFile: missing", path); goto done; }
    if (!ndims) { vx_error("%s: NDims: missing", path); goto done; }
    if (ndims < 3 || ndims > 4) {
        vx_error("%s: NDims: %d (voxray reads 3-D volumes, or 4-D as a series)", path, ndims);
        goto done;
    }
    if (nsize != ndims) { vx_error("%s: DimSize: %d values for NDims %d", path, nsize, ndims); goto done; }
    if (type < 0) { vx_error("%s: ElementType: missing", path); goto done; }
    if (channels != 1) {
        vx_error("%s: ElementNumberOfChannels: %d (voxray reads scalar volumes)", path, channels);
        goto done;
    }
    if (nsp >= 0 && nsp != ndims) { vx_error("%s: ElementSpacing: %d values for NDims %d", path, nsp, ndims); goto done; }
    if (norg >= 0 && norg != ndims) { vx_error("%s: Offset: %d values for NDims %d", path, norg, ndims); goto done; }
    if (ntm >= 0 && ntm != ndims * ndims) {
        vx_error("%s: TransformMatrix: %d values for NDims %d", path, ntm, ndims);
        goto done;
    }
    for (int k = 0; k < ndims; k++) {
        if (!(size[k] >= 1) || size[k] > 1e12 || size[k] != floor(size[k])) {
            vx_error("%s: DimSize: '%g' is not a positive integer", path, size[k]);
            goto done;
        }
    }
    for (int k = 0; k < 3; k++) v->dims[k] = (long long)size[k];
    if (ndims == 4) v->nvol = (long long)size[3];
    /* column k of the placement = spacing_k * (row k of TransformMatrix) */
    for (int k = 0; k < 3; k++) {
        double s = nsp == ndims ? sp[k] : 1.0;
        if (!(s > 0) || !isfinite(s)) { vx_error("%s: ElementSpacing: %g is not positive", path, s); goto done; }
        for (int r = 0; r < 3; r++) {
            double d = ntm == ndims * ndims ? tm[k * ndims + r] : (r == k);
            v->i2w[4 * r + k] = s * d;
        }
    }
    for (int r = 0; r < 3; r++) v->i2w[4 * r + 3] = norg == ndims ? org[r] : 0.0;
    for (int r = 0; r < 2; r++) /* LPS -> RAS */
        for (int c = 0; c < 4; c++) v->i2w[4 * r + c] = -v->i2w[4 * r + c];
    v->dtype = (vx_dtype)type;
    v->big_endian = big;
    v->encoding = compressed ? VX_ENC_GZIP : VX_ENC_RAW;
    v->comp_size = compressed ? comp_size : 0;
    if (strcasecmp(file, "LOCAL") != 0) {
        if (!strncasecmp(file, "LIST", 4) || strchr(file, '%') || strchr(file, ' ')) {
            vx_error("%s: ElementDataFile: '%.60s': multi-file data is not supported", path, file);
            goto done;
        }
        char dir[1024];
        vx_dirname(path, dir, sizeof dir);
        if (vx_path_join(dir, file, v->data_path, sizeof v->data_path)) goto done;
        v->data_offset = 0;
        if (header_size == -1) {
            if (compressed) { vx_error("%s: HeaderSize: -1 contradicts CompressedData", path); goto done; }
            v->data_at_end = 1;
        } else {
            v->data_offset = header_size;
        }
    }
    rc = vx_vol_check(v);
done:
    free(buf);
    return rc;
}
