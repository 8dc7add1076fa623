/* plenoxels.c - Plenoxels (svox2) checkpoints: an .npz (zip via libzip) of .npy arrays
 * links (int32 index volume, negative = empty), density_data (N,1), sh_data (N,3B)
 * colour-major, radius, center, basis_type -> an sh grid with cell-centred samples.
 * formats.c calls it; members are streamed with their sizes checked before use. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "npy.h"
#include "vx_common.h"
#include "vx_fmt.h"

/* Read member NAME fully. 1 if absent and optional, 0 ok, -1 error. */
static int vx__member(zip_t *z, const char *path, const char *name, int required,
                      unsigned char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    zip_int64_t idx = zip_name_locate(z, name, 0);
    if (idx < 0) {
        if (!required) return 1;
        return vx_error("%s: member %s: missing (a Plenoxels checkpoint holds links, "
                        "density_data, sh_data, radius, center)", path, name);
    }
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z, (zip_uint64_t)idx, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
        return vx_error("%s: member %s: no size in the zip directory", path, name);
    if (st.size > vx_mem_budget()) {
        char what[1200];
        snprintf(what, sizeof what, "%s: member %s", path, name);
        return vx_mem_refuse(what, (size_t)st.size);
    }
    size_t want = (size_t)st.size, cap = want < ((size_t)1 << 20) ? want : ((size_t)1 << 20), got = 0;
    zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)idx, 0);
    if (!f) return vx_error("%s: member %s: cannot open (%s)", path, name, zip_strerror(z));
    unsigned char *buf = vx_malloc(cap + 1, name);
    int rc = -1;
    if (!buf) goto done;
    while (got < want) {
        if (got == cap) { /* grow only as data arrives */
            size_t nc = cap * 2 > want ? want : cap * 2;
            unsigned char *nb = realloc(buf, nc + 1);
            if (!nb) { vx_error("out of memory reading %s from %s", name, path); goto done; }
            buf = nb;
            cap = nc;
        }
        zip_int64_t r = zip_fread(f, buf + got, cap - got);
        if (r < 0) {
            vx_error("%s: member %s: corrupt data (%s)", path, name, zip_file_strerror(f));
            goto done;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got < want) {
        vx_error("%s: member %s: data ends after %zu of %zu bytes", path, name, got, want);
        goto done;
    }
    unsigned char extra;
    if (zip_fread(f, &extra, 1) != 0) {
        vx_error("%s: member %s: more data than the %zu bytes declared (or corrupt)", path, name, want);
        goto done;
    }
    rc = 0;
done:
    zip_fclose(f);
    if (rc == 0) { *out = buf; *len = got; } else free(buf);
    return rc;
}

/* A small float member: exactly n values (a single value is broadcast to n). */
static int vx__vector(zip_t *z, const char *path, const char *name, int n, double *v) {
    unsigned char *b;
    size_t len;
    if (vx__member(z, path, name, 1, &b, &len) != 0) return -1;
    char what[1100];
    snprintf(what, sizeof what, "%s: member %s", path, name);
    vx_npy_header h;
    float *f;
    int rc = vx_npy_load_buffer(b, len, what, &h, &f);
    free(b);
    if (rc != 0) return -1;
    size_t count = 1;
    for (int i = 0; i < h.ndim; i++) count *= h.shape[i];
    if (count != (size_t)n && count != 1) {
        free(f);
        return vx_error("%s: member %s: %zu values, expected %d", path, name, count, n);
    }
    for (int i = 0; i < n; i++) v[i] = f[count == 1 ? 0 : i];
    free(f);
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i])) return vx_error("%s: member %s: value %g is not finite", path, name, v[i]);
    return 0;
}

typedef struct {
    int res[3];           /* svox2 (x, y, z) resolution; links[x][y][z], z fastest */
    double radius[3], center[3];
    int basis_type, basis_dim;
    size_t n_points;
    vx_dtype sh_dtype;
} vx_plenoxels_facts;

static int vx__open(const char *path, zip_t **z) {
    int err = 0;
    long long size;
    if (vx_fmt_file_size(path, &size) != 0) return -1;
    *z = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!*z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        vx_error("%s: not a readable .npz (zip): %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return -1;
    }
    return 0;
}

/* Header facts and the two small vectors; links header checked but not read. */
static int vx__facts(zip_t *z, const char *path, vx_plenoxels_facts *p) {
    memset(p, 0, sizeof *p);
    if (vx__vector(z, path, "radius.npy", 3, p->radius) != 0 ||
        vx__vector(z, path, "center.npy", 3, p->center) != 0)
        return -1;
    for (int a = 0; a < 3; a++)
        if (!(p->radius[a] > 0)) return vx_error("%s: member radius.npy: %g is not positive", path, p->radius[a]);
    double bt = 1;
    unsigned char *b;
    size_t len;
    int r = vx__member(z, path, "basis_type.npy", 0, &b, &len);
    if (r < 0) return -1;
    if (r == 0) {
        free(b);
        if (vx__vector(z, path, "basis_type.npy", 1, &bt) != 0) return -1;
    }
    if (bt != 1) /* compared as a double: a huge value must not reach an int cast */
        return vx_error("%s: member basis_type.npy: %g (only 1 = spherical harmonics is supported; "
                        "3-D texture and MLP bases are not)", path, bt);
    p->basis_type = 1;
    return 0;
}

int vx_plenoxels_load(const char *path, vx_grid *g, vx_decoder *dec) {
    zip_t *z;
    if (vx__open(path, &z) != 0) return -1;
    vx_plenoxels_facts p;
    unsigned char *lb = NULL, *db = NULL, *sb = NULL;
    float *dens = NULL, *sh = NULL;
    size_t ll, dl, sl;
    int rc = -1;
    char what[1100];
    memset(g, 0, sizeof *g);
    if (vx__facts(z, path, &p) != 0) goto done;

    /* links: int32 (X, Y, Z), read as integers (indices pass 2^24) */
    if (vx__member(z, path, "links.npy", 1, &lb, &ll) != 0) goto done;
    snprintf(what, sizeof what, "%s: member links.npy", path);
    vx_npy_header lh;
    if (vx_npy_parse_header(lb, ll, what, &lh) != 0) goto done;
    if (lh.dtype != VX_DT_I32 || lh.ndim != 3) {
        vx_error("%s: dtype %s with %d dimensions (expected int32, 3 dimensions)", what,
                 vx_dtype_name(lh.dtype), lh.ndim);
        goto done;
    }
    size_t nl;
    if (vx_mul_size4(lh.shape[0], lh.shape[1], lh.shape[2], 4, &nl) || ll - lh.data_offset != nl) {
        vx_error("%s: shape (%zu, %zu, %zu) needs %zu bytes of int32, the member has %zu", what,
                 lh.shape[0], lh.shape[1], lh.shape[2], nl, ll - lh.data_offset);
        goto done;
    }
    for (int a = 0; a < 3; a++) {
        if (lh.shape[a] < 1 || lh.shape[a] > 65536) {
            vx_error("%s: resolution %zu along axis %d is outside 1..65536", what, lh.shape[a], a);
            goto done;
        }
        p.res[a] = (int)lh.shape[a];
    }

    /* density_data (N, 1) and sh_data (N, 3B) */
    vx_npy_header dh, sh_h;
    if (vx__member(z, path, "density_data.npy", 1, &db, &dl) != 0) goto done;
    snprintf(what, sizeof what, "%s: member density_data.npy", path);
    if (vx_npy_load_buffer(db, dl, what, &dh, &dens) != 0) goto done;
    free(db); db = NULL;
    if (dh.ndim < 1 || dh.ndim > 2 || (dh.ndim == 2 && dh.shape[1] != 1)) {
        vx_error("%s: shape must be (N, 1)", what);
        goto done;
    }
    p.n_points = dh.shape[0];
    if (vx__member(z, path, "sh_data.npy", 1, &sb, &sl) != 0) goto done;
    snprintf(what, sizeof what, "%s: member sh_data.npy", path);
    if (vx_npy_load_buffer(sb, sl, what, &sh_h, &sh) != 0) goto done;
    free(sb); sb = NULL;
    if (sh_h.ndim != 2 || sh_h.shape[0] != p.n_points) {
        vx_error("%s: shape must be (%zu, 3*basis_dim) to match density_data", what, p.n_points);
        goto done;
    }
    size_t cols = sh_h.shape[1];
    int deg = -1;
    for (int d = 0; d <= 3; d++) if (cols == (size_t)(3 * (d + 1) * (d + 1))) deg = d;
    if (deg < 0) {
        vx_error("%s: %zu columns is not 3 * basis_dim for SH degree 0..3 (3, 12, 27, 48)", what, cols);
        goto done;
    }
    p.basis_dim = (deg + 1) * (deg + 1);
    p.sh_dtype = sh_h.dtype;

    int nc = 1 + (int)cols;
    /* the dense grid next to the links, densities and coefficients already held: a
     * tiny .npz of zeros can announce a huge lattice */
    size_t dense, held = ll + (p.n_points * (1 + cols)) * sizeof(float);
    if (vx_mul_size(nl, (size_t)nc, &dense) || dense > vx_mem_budget() || held > vx_mem_budget() - dense) {
        snprintf(what, sizeof what, "%s: %d x %d x %d lattice with %d channels", path, p.res[0], p.res[1], p.res[2], nc);
        vx_mem_refuse(what, dense > SIZE_MAX - held ? SIZE_MAX : dense + held);
        goto done;
    }
    if (vx_grid_alloc(g, p.res[0], p.res[1], p.res[2], nc, path) != 0) goto done;
    memset(g->data, 0, vx_grid_count(g) * sizeof(float)); /* empty links: zero density */
    const unsigned char *lp = lb + lh.data_offset;
    int X = p.res[0], Y = p.res[1], Z = p.res[2];
    size_t i = 0;
    for (int x = 0; x < X; x++)
        for (int y = 0; y < Y; y++)
            for (int zz = 0; zz < Z; zz++, i++) {
                const unsigned char *q = lp + 4 * i;
                int32_t l = (int32_t)(lh.big_endian
                    ? (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]
                    : (uint32_t)q[3] << 24 | (uint32_t)q[2] << 16 | (uint32_t)q[1] << 8 | q[0]);
                if (l < 0) continue;
                if ((size_t)l >= p.n_points) {
                    vx_error("%s: member links.npy: entry %d at (%d, %d, %d) is past the %zu "
                             "rows of density_data", path, l, x, y, zz, p.n_points);
                    goto done;
                }
                /* voxray's lattice is x fastest: svox2 x -> voxray x */
                float *dst = g->data + (((size_t)zz * Y + y) * X + x) * (size_t)nc;
                dst[0] = dens[l];
                memcpy(dst + 1, sh + (size_t)l * cols, cols * sizeof(float));
            }
    double lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        lo[a] = p.center[a] - p.radius[a];
        hi[a] = p.center[a] + p.radius[a];
    }
    vx_grid_set_bbox(g, lo, hi, 0); /* svox2 samples at cell centres */
    g->src_dtype = p.sh_dtype;
    memset(dec, 0, sizeof *dec);
    dec->type = VX_DEC_SH;
    dec->sh_degree = deg;
    dec->density_act = VX_DACT_RELU;
    dec->color_act = VX_CACT_PLENOXELS;
    dec->density_scale = 1.0f;
    rc = 0;
done:
    if (rc != 0) vx_grid_free(g);
    free(lb); free(db); free(sb); free(dens); free(sh);
    zip_discard(z);
    return rc;
}

int vx_plenoxels_describe(const char *path, char *buf, size_t cap) {
    zip_t *z;
    if (vx__open(path, &z) != 0) return -1;
    vx_plenoxels_facts p;
    int rc = vx__facts(z, path, &p);
    if (rc == 0) {
        int n = snprintf(buf, cap, "format: Plenoxels (svox2) checkpoint .npz, basis_type %d "
                         "(spherical harmonics)\nradius: %g %g %g\ncenter: %g %g %g\nmembers:",
                         p.basis_type, p.radius[0], p.radius[1], p.radius[2], p.center[0],
                         p.center[1], p.center[2]);
        zip_int64_t m = zip_get_num_entries(z, 0);
        for (zip_int64_t i = 0; i < m && n > 0 && (size_t)n < cap; i++) {
            zip_stat_t st;
            if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) == 0 && (st.valid & ZIP_STAT_NAME))
                n += snprintf(buf + n, cap - n, " %s (%llu bytes)", st.name,
                              (unsigned long long)st.size);
        }
        if (n > 0 && (size_t)n < cap) snprintf(buf + n, cap - n, "\nplacement: box center +- radius, "
                                               "cell-centred (align_corners false)\n");
    }
    zip_discard(z);
    return rc;
}
