/* raw.c - headerless raw volumes: `--raw X,Y,Z,dtype[,endian]` names the sizes, element
 * type and byte order, `--spacing` the voxel size; the file must hold exactly that many
 * bytes. formats.c calls it; volume.c reads the payload. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vx_common.h"
#include "vx_fmt.h"

int vx_raw_info(const char *path, const char *spec, const double spacing[3], vx_vol_info *v) {
    vx_vol_info_init(v, "raw", path);
    char tmp[256];
    if (strlen(spec) >= sizeof tmp) return vx_error("--raw: '%.40s...' is too long", spec);
    snprintf(tmp, sizeof tmp, "%s", spec);
    char *f[6], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == 5) return vx_error("--raw: '%s' has too many fields (X,Y,Z,dtype[,endian])", spec);
        f[n++] = vx_fmt_trim(t);
    }
    if (n < 4) return vx_error("--raw: '%s' needs X,Y,Z,dtype[,endian]", spec);
    for (int a = 0; a < 3; a++) {
        char *e;
        v->dims[a] = strtoll(f[a], &e, 10);
        if (e == f[a] || *e || v->dims[a] < 1)
            return vx_error("--raw: size '%s' is not a positive integer", f[a]);
    }
    int t = vx_fmt_dtype_from_name(f[3]);
    if (t < 0)
        return vx_error("--raw: dtype '%s' is not one of uint8 int8 uint16 int16 uint32 int32 "
                        "float16 float32 float64", f[3]);
    v->dtype = (vx_dtype)t;
    if (n == 5) {
        if (!strcasecmp(f[4], "little") || !strcasecmp(f[4], "le")) v->big_endian = 0;
        else if (!strcasecmp(f[4], "big") || !strcasecmp(f[4], "be")) v->big_endian = 1;
        else return vx_error("--raw: endian '%s' is not little or big", f[4]);
    }
    if (spacing && spacing[0] > 0 && spacing[1] > 0 && spacing[2] > 0)
        for (int a = 0; a < 3; a++) v->i2w[5 * a] = spacing[a];
    if (vx_vol_check(v) != 0) return -1;
    long long size, need = v->dims[0] * v->dims[1] * v->dims[2] * (long long)vx_dtype_size(v->dtype);
    if (vx_fmt_file_size(path, &size) != 0) return -1;
    if (size != need)
        return vx_error("%s: --raw %s: needs exactly %lld bytes, the file has %lld", path, spec,
                        need, size);
    snprintf(v->notes, sizeof v->notes, "layout from --raw %s", spec);
    return 0;
}
