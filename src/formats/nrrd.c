/* nrrd.c - NRRD header reader (.nrrd attached, .nhdr detached): scalar types, raw/gzip,
 * both endians, 3-D or 4-D (a trailing list/time axis), space directions/origin (oblique
 * included) -> RAS index-to-world. The payload is read by volume.c; formats.c calls this. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vx_common.h"
#include "vx_fmt.h"

#define VX_NRRD_MAXDIM 16

static int vx__type(const char *s) {
    static const struct { const char *n; vx_dtype t; } tt[] = {
        {"signed char", VX_DT_I8}, {"int8", VX_DT_I8}, {"int8_t", VX_DT_I8},
        {"uchar", VX_DT_U8}, {"unsigned char", VX_DT_U8}, {"uint8", VX_DT_U8}, {"uint8_t", VX_DT_U8},
        {"short", VX_DT_I16}, {"short int", VX_DT_I16}, {"signed short", VX_DT_I16},
        {"signed short int", VX_DT_I16}, {"int16", VX_DT_I16}, {"int16_t", VX_DT_I16},
        {"ushort", VX_DT_U16}, {"unsigned short", VX_DT_U16}, {"unsigned short int", VX_DT_U16},
        {"uint16", VX_DT_U16}, {"uint16_t", VX_DT_U16},
        {"int", VX_DT_I32}, {"signed int", VX_DT_I32}, {"int32", VX_DT_I32}, {"int32_t", VX_DT_I32},
        {"uint", VX_DT_U32}, {"unsigned int", VX_DT_U32}, {"uint32", VX_DT_U32},
        {"uint32_t", VX_DT_U32}, {"float", VX_DT_F32}, {"double", VX_DT_F64},
    };
    for (size_t i = 0; i < sizeof tt / sizeof tt[0]; i++)
        if (strcasecmp(s, tt[i].n) == 0) return (int)tt[i].t;
    return -1;
}

/* Whitespace-separated integers; returns count or -1. */
static int vx__ints(char *s, long long *out, int max) {
    int n = 0;
    char *end;
    for (;;) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) return n;
        if (n == max) return -1;
        out[n++] = strtoll(s, &end, 10);
        if (end == s || (*end && !isspace((unsigned char)*end))) return -1;
        s = end;
    }
}

/* "(x,y,z)" at *s: parses into v (space dimension 3). Returns 0, or -1. */
static int vx__vec3(char **s, double v[3]) {
    char *p = *s, *end;
    while (isspace((unsigned char)*p)) p++;
    if (*p++ != '(') return -1;
    for (int k = 0; k < 3; k++) {
        v[k] = strtod(p, &end);
        if (end == p) return -1;
        p = end;
        while (isspace((unsigned char)*p)) p++;
        if (*p++ != (k < 2 ? ',' : ')')) return -1;
    }
    *s = p;
    return 0;
}

/* "space directions": per axis "(x,y,z)" or "none"; has[i] = 1 for vectors. */
static int vx__directions(char *s, double dir[][3], int *has, int max) {
    int n = 0;
    for (;;) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) return n;
        if (n == max) return -1;
        if (strncasecmp(s, "none", 4) == 0) {
            has[n++] = 0;
            s += 4;
        } else {
            if (vx__vec3(&s, dir[n]) != 0) return -1;
            has[n++] = 1;
        }
    }
}

/* Signs that take the named space to RAS (right-anterior-superior). */
static int vx__space_to_ras(const char *s, double sign[3]) {
    sign[0] = sign[1] = sign[2] = 1;
    if (!strncasecmp(s, "right-anterior-superior", 23) || !strncasecmp(s, "RAS", 3)) return 0;
    if (!strncasecmp(s, "left-anterior-superior", 22) || !strncasecmp(s, "LAS", 3)) {
        sign[0] = -1;
        return 0;
    }
    if (!strncasecmp(s, "left-posterior-superior", 23) || !strncasecmp(s, "LPS", 3)) {
        sign[0] = sign[1] = -1;
        return 0;
    }
    if (!strncasecmp(s, "scanner-xyz", 11) || !strncasecmp(s, "3D-right-handed", 15) ||
        !strncasecmp(s, "3D-left-handed", 14))
        return 0;
    return -1;
}

int vx_nrrd_info(const char *path, vx_vol_info *v) {
    vx_vol_info_init(v, "NRRD", path);
    unsigned char *buf;
    size_t len;
    if (vx_fmt_read_head(path, VX_FMT_MAX_HEADER, &buf, &len) != 0) return -1;
    int rc = -1;
    char *s = (char *)buf;
    if (len < 8 || memcmp(s, "NRRD000", 7) != 0 || !isdigit((unsigned char)s[7])) {
        vx_error("%s: not a NRRD file (magic NRRD000x missing)", path);
        goto done;
    }
    if (memchr(s, 0, len)) len = strlen(s); /* binary payload: text ends at first NUL */
    int type = -1, dim = 0, nsizes = 0, ndirs = -1, nsp = -1, big = -1, enc = -1;
    int has_origin = 0, space_dim = 0, attached = 0, ndkinds = 0, has_space = 0;
    long long sizes[VX_NRRD_MAXDIM], byte_skip = 0, line_skip = 0;
    double dirs[VX_NRRD_MAXDIM][3], sp[VX_NRRD_MAXDIM], origin[3] = {0, 0, 0}, sign[3] = {1, 1, 1};
    int has_dir[VX_NRRD_MAXDIM];
    char data_file[1024] = "", space_name[64] = "", kinds[VX_NRRD_MAXDIM][32];
    size_t pos = 0;
    while (pos < len) {
        char *line = s + pos;
        char *nl = memchr(line, '\n', len - pos);
        if (!nl) {
            if (len == VX_FMT_MAX_HEADER) {
                vx_error("%s: header: longer than %zu bytes", path, VX_FMT_MAX_HEADER);
                goto done;
            }
            nl = s + len; /* last line of a detached header */
        }
        *nl = 0;
        pos = (size_t)(nl - s) + 1;
        char *l = vx_fmt_trim(line);
        if (line == s) continue; /* magic line */
        if (!*l) { attached = 1; v->data_offset = (long long)pos; break; }
        if (*l == '#' || strstr(l, ":=")) continue; /* comment / key-value pair */
        char *colon = strstr(l, ": ");
        if (!colon) {
            if (l[strlen(l) - 1] == ':') colon = l + strlen(l) - 1;
            else { vx_error("%s: header line '%.60s' is not 'field: value'", path, l); goto done; }
        }
        *colon = 0;
        char *field = vx_fmt_trim(l), *val = vx_fmt_trim(colon + 1);
        if (!strcasecmp(field, "type")) {
            type = vx__type(val);
            if (type < 0) {
                vx_error("%s: type: '%s' is not supported (8/16/32-bit integers, float, double)",
                         path, val);
                goto done;
            }
        } else if (!strcasecmp(field, "dimension")) {
            long long d;
            dim = vx_fmt_int(val, 1, VX_NRRD_MAXDIM, &d) ? -1 : (int)d;
            if (dim < 1) {
                vx_error("%s: dimension: '%s' is not 1..%d", path, val, VX_NRRD_MAXDIM);
                goto done;
            }
        } else if (!strcasecmp(field, "sizes")) {
            nsizes = vx__ints(val, sizes, VX_NRRD_MAXDIM);
            if (nsizes < 0) { vx_error("%s: sizes: cannot parse '%.60s'", path, val); goto done; }
        } else if (!strcasecmp(field, "encoding")) {
            if (!strcasecmp(val, "raw")) enc = VX_ENC_RAW;
            else if (!strcasecmp(val, "gzip") || !strcasecmp(val, "gz")) enc = VX_ENC_GZIP;
            else {
                vx_error("%s: encoding: '%s' is not supported (raw, gzip)", path, val);
                goto done;
            }
        } else if (!strcasecmp(field, "endian")) {
            if (!strcasecmp(val, "little")) big = 0;
            else if (!strcasecmp(val, "big")) big = 1;
            else { vx_error("%s: endian: '%s' is not little or big", path, val); goto done; }
        } else if (!strcasecmp(field, "space")) {
            has_space = 1;
            snprintf(space_name, sizeof space_name, "%s", val);
            if (vx__space_to_ras(val, sign) != 0) {
                vx_error("%s: space: '%s' is not a 3-D space voxray knows (RAS, LAS, LPS, "
                         "scanner-xyz, 3D-right-handed)", path, val);
                goto done;
            }
            space_dim = 3;
        } else if (!strcasecmp(field, "space dimension")) {
            long long sdl;
            int sd = vx_fmt_int(val, 1, 16, &sdl) ? -1 : (int)sdl;
            if (sd != 3) { vx_error("%s: space dimension: %s (only 3 is supported)", path, val); goto done; }
            if (has_space && space_dim != sd) {
                vx_error("%s: space dimension: %d contradicts space '%s'", path, sd, space_name);
                goto done;
            }
            space_dim = sd;
        } else if (!strcasecmp(field, "space directions")) {
            ndirs = vx__directions(val, dirs, has_dir, VX_NRRD_MAXDIM);
            if (ndirs < 0) {
                vx_error("%s: space directions: cannot parse '%.60s' (expected (x,y,z) or none "
                         "per axis)", path, val);
                goto done;
            }
        } else if (!strcasecmp(field, "space origin")) {
            char *p = val;
            if (vx__vec3(&p, origin) != 0) {
                vx_error("%s: space origin: cannot parse '%.60s' (expected (x,y,z))", path, val);
                goto done;
            }
            has_origin = 1;
        } else if (!strcasecmp(field, "spacings")) {
            nsp = vx_fmt_doubles(val, sp, VX_NRRD_MAXDIM);
            if (nsp < 0) { vx_error("%s: spacings: cannot parse '%.60s'", path, val); goto done; }
        } else if (!strcasecmp(field, "data file") || !strcasecmp(field, "datafile")) {
            if (!strncasecmp(val, "LIST", 4) || strchr(val, '%') || strchr(val, ' ')) {
                vx_error("%s: data file: '%.60s': multi-file data is not supported", path, val);
                goto done;
            }
            snprintf(data_file, sizeof data_file, "%s", val);
        } else if (!strcasecmp(field, "byte skip") || !strcasecmp(field, "byteskip")) {
            char *end;
            byte_skip = strtoll(val, &end, 10);
            if (end == val || *end || byte_skip < -1) {
                vx_error("%s: byte skip: '%s' is not an integer >= -1", path, val);
                goto done;
            }
        } else if (!strcasecmp(field, "line skip") || !strcasecmp(field, "lineskip")) {
            if (vx_fmt_int(val, 0, LLONG_MAX, &line_skip)) line_skip = -1;
            if (line_skip != 0) { vx_error("%s: line skip: %s is not supported", path, val); goto done; }
        } else if (!strcasecmp(field, "kinds")) {
            char *save = NULL;
            ndkinds = 0;
            for (char *t = strtok_r(val, " \t", &save); t && ndkinds < VX_NRRD_MAXDIM;
                 t = strtok_r(NULL, " \t", &save))
                snprintf(kinds[ndkinds++], sizeof kinds[0], "%s", t);
        }
        /* other fields (content, centers, units, measurement frame...) do not matter here */
    }
    if (type < 0) { vx_error("%s: type: missing", path); goto done; }
    if (!dim) { vx_error("%s: dimension: missing", path); goto done; }
    if (enc < 0) { vx_error("%s: encoding: missing", path); goto done; }
    if (nsizes != dim) {
        vx_error("%s: sizes: %d values for dimension %d", path, nsizes, dim);
        goto done;
    }
    if (dim < 3 || dim > 4) {
        vx_error("%s: dimension: %d (voxray reads 3-D volumes, or 4-D with a list/time axis)",
                 path, dim);
        goto done;
    }
    for (int a = 0; a < dim; a++)
        if (sizes[a] < 1) { vx_error("%s: sizes: axis %d has size %lld", path, a, sizes[a]); goto done; }
    if (ndirs >= 0 && ndirs != dim) {
        vx_error("%s: space directions: %d entries for dimension %d", path, ndirs, dim);
        goto done;
    }
    if (nsp >= 0 && nsp != dim) {
        vx_error("%s: spacings: %d values for dimension %d", path, nsp, dim);
        goto done;
    }
    if (ndkinds && ndkinds != dim) {
        vx_error("%s: kinds: %d entries for dimension %d", path, ndkinds, dim);
        goto done;
    }
    /* which axis is not spatial in 4-D: from directions ("none"), else kinds, else the last */
    int extra = -1;
    if (dim == 4) {
        if (ndirs == dim) {
            for (int a = 0; a < dim; a++) if (!has_dir[a]) { extra = a; break; }
        } else if (ndkinds == dim) {
            for (int a = 0; a < dim; a++)
                if (strcasecmp(kinds[a], "domain") && strcasecmp(kinds[a], "space")) { extra = a; break; }
        }
        if (extra < 0) extra = 3;
        if (extra == 0) {
            if (sizes[0] != 1) {
                vx_error("%s: sizes: %lld components per voxel on axis 0 (voxray reads scalar "
                         "volumes)", path, sizes[0]);
                goto done;
            }
        } else if (extra != 3) {
            vx_error("%s: space directions: the non-spatial axis is %d (expected 0 or 3)", path, extra);
            goto done;
        } else {
            v->nvol = sizes[3];
        }
    }
    int sa[3], ns = 0; /* the spatial axes, fastest first */
    for (int a = 0; a < dim && ns < 3; a++) if (a != extra) sa[ns++] = a;
    for (int k = 0; k < 3; k++) v->dims[k] = sizes[sa[k]];
    if (ndirs == dim) {
        for (int k = 0; k < 3; k++) {
            if (!has_dir[sa[k]]) {
                vx_error("%s: space directions: spatial axis %d is 'none'", path, sa[k]);
                goto done;
            }
            for (int r = 0; r < 3; r++) v->i2w[4 * r + k] = dirs[sa[k]][r];
        }
        if (dim == 4 && has_dir[extra]) {
            vx_error("%s: space directions: 4 vectors in a 3-D space", path);
            goto done;
        }
    } else {
        memset(v->i2w, 0, sizeof v->i2w);
        for (int k = 0; k < 3; k++) {
            double s = nsp == dim ? sp[sa[k]] : 1.0;
            if (!isfinite(s) || s == 0) {
                vx_error("%s: spacings: axis %d has spacing %g (expected a finite non-zero number)",
                         path, sa[k], s);
                goto done;
            }
            v->i2w[5 * k] = s;
        }
    }
    if (has_origin) for (int r = 0; r < 3; r++) v->i2w[4 * r + 3] = origin[r];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) v->i2w[4 * r + c] *= sign[r];
    v->dtype = (vx_dtype)type;
    v->encoding = enc;
    if (big < 0 && vx_dtype_size(v->dtype) > 1) {
        vx_error("%s: endian: missing (needed for %s data)", path, vx_dtype_name(v->dtype));
        goto done;
    }
    v->big_endian = big > 0;
    if (data_file[0]) {
        char dir[1024];
        vx_dirname(path, dir, sizeof dir);
        if (vx_path_join(dir, data_file, v->data_path, sizeof v->data_path)) goto done;
        v->data_offset = 0;
    } else if (!attached) {
        vx_error("%s: header: no blank line before the data and no 'data file' field", path);
        goto done;
    }
    if (byte_skip == -1) {
        if (enc != VX_ENC_RAW) { vx_error("%s: byte skip: -1 is only valid for raw encoding", path); goto done; }
        v->data_at_end = 1;
    } else if (enc == VX_ENC_RAW) {
        if (byte_skip > LLONG_MAX / 4 - v->data_offset) {
            vx_error("%s: byte skip: %lld is beyond any file", path, byte_skip);
            goto done;
        }
        v->data_offset += byte_skip;
    } else {
        v->gz_skip = byte_skip;
    }
    if (space_name[0])
        snprintf(v->notes, sizeof v->notes, "space: %s (index_to_world is RAS)", space_name);
    rc = vx_vol_check(v);
done:
    free(buf);
    return rc;
}
