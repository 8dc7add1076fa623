/* formats.c - picks the reader for a volume file (raw spec, extension, then magic bytes)
 * and runs it; the entry points of formats.h used by scene.c, info.c and convert.c. */
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "vx_common.h"
#include "vx_fmt.h"
#ifdef VX_HAVE_VDB
#include "vdb.h"
#endif
#ifdef VX_HAVE_NANOVDB
#include "nvdb.h"
#endif

typedef enum {
    VX_FMT_NONE = 0, VX_FMT_RAW, VX_FMT_NRRD, VX_FMT_NIFTI, VX_FMT_META, VX_FMT_INR,
    VX_FMT_DEN, VX_FMT_NPZ, VX_FMT_VDB, VX_FMT_NVDB
} vx_fmt_kind;

static int vx__magic(const unsigned char *b, size_t n) {
    if (n >= 7 && memcmp(b, "NRRD000", 7) == 0) return VX_FMT_NRRD;
    if (n >= 13 && memcmp(b, "#INRIMAGE-4#{", 13) == 0) return VX_FMT_INR;
    if (n >= 4 && memcmp(b, "PK\x03\x04", 4) == 0) return VX_FMT_NPZ;
    if (n >= 8 && memcmp(b, " BDV", 4) == 0) return VX_FMT_VDB; /* OpenVDB: int32 0x56444220, LE */
    if (n >= 8 && memcmp(b, "NanoVDB", 7) == 0) return VX_FMT_NVDB; /* NanoVDB: "NanoVDB0" */
    if (n >= 348) {
        uint32_t le = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        uint32_t be = (uint32_t)b[3] | (uint32_t)b[2] << 8 | (uint32_t)b[1] << 16 | (uint32_t)b[0] << 24;
        if (le == 348 || be == 348) return VX_FMT_NIFTI;
    }
    if ((n >= 10 && memcmp(b, "ObjectType", 10) == 0) || (n >= 5 && memcmp(b, "NDims", 5) == 0))
        return VX_FMT_META;
    return VX_FMT_NONE;
}

static int vx__kind(const char *path, const vx_load_opts *opts) {
    if (opts && opts->raw_spec) return VX_FMT_RAW;
    static const struct { const char *ext; int kind; } exts[] = {
        {".npz", VX_FMT_NPZ}, {".nrrd", VX_FMT_NRRD}, {".nhdr", VX_FMT_NRRD},
        {".nii", VX_FMT_NIFTI}, {".nii.gz", VX_FMT_NIFTI}, {".hdr", VX_FMT_NIFTI},
        {".mha", VX_FMT_META}, {".mhd", VX_FMT_META}, {".inr", VX_FMT_INR},
        {".inr.gz", VX_FMT_INR}, {".den", VX_FMT_DEN}, {".vdb", VX_FMT_VDB}, {".nvdb", VX_FMT_NVDB},
    };
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (vx_fmt_has_ext(path, exts[i].ext)) return exts[i].kind;
    unsigned char *b = NULL;
    size_t n = 0;
    int kind = VX_FMT_NONE;
    if (vx_fmt_is_gzip(path)) {
        if (vx_gz_read(path, 0, 0, 0, 512, 1, &b, &n, "header") == 0) kind = vx__magic(b, n);
    } else if (vx_fmt_read_head(path, 512, &b, &n) == 0) {
        kind = vx__magic(b, n);
    }
    free(b);
    vx_clear_error();
    return kind;
}

int vx_format_recognized(const char *path, const vx_load_opts *opts) {
    return vx__kind(path, opts) != VX_FMT_NONE;
}

static int vx__info(int kind, const char *path, const vx_load_opts *opts, vx_vol_info *v) {
    switch (kind) {
    case VX_FMT_RAW: return vx_raw_info(path, opts->raw_spec, opts->spacing, v);
    case VX_FMT_NRRD: return vx_nrrd_info(path, v);
    case VX_FMT_NIFTI: return vx_nifti_info(path, v);
    case VX_FMT_META: return vx_metaimage_info(path, v);
    case VX_FMT_INR: return vx_inr_info(path, v);
    case VX_FMT_DEN: {
        if (vx_den_info(path, v) != 0) return -1;
        if (opts && opts->spacing[0] > 0 && opts->spacing[1] > 0 && opts->spacing[2] > 0) {
            memset(v->i2w, 0, sizeof v->i2w);
            for (int a = 0; a < 3; a++) v->i2w[a * 5] = opts->spacing[a];
        }
        return 0;
    }
    default: break;
    }
    long long size;
    if (vx_fmt_file_size(path, &size) != 0) return -1;
    return vx_error("%s: unknown volume format (voxray reads .nrrd .nhdr .nii .nii.gz .hdr .mha "
                    ".mhd .inr .inr.gz .den .npz .vdb .nvdb .npy .json; headerless data needs "
                    "--raw X,Y,Z,dtype[,endian])", path);
}

int vx_format_load(const char *path, const vx_load_opts *opts, vx_grid *g, vx_decoder *dec,
                   int *has_decoder) {
    *has_decoder = 0;
    if (strlen(path) >= sizeof ((vx_vol_info *)0)->path)
        return vx_error("%.80s...: path is longer than %zu bytes", path, sizeof ((vx_vol_info *)0)->path - 1);
    int kind = vx__kind(path, opts);
    if (kind == VX_FMT_VDB) {
#ifdef VX_HAVE_VDB
        return vx_vdb_load(path, opts ? opts->grid_name : NULL, g, dec, has_decoder);
#else
        return vx_error("%s: this voxray was built without OpenVDB (install libopenvdb-dev and rebuild)", path);
#endif
    }
    if (kind == VX_FMT_NVDB) {
#ifdef VX_HAVE_NANOVDB
        return vx_nvdb_load(path, opts ? opts->grid_name : NULL, g, dec, has_decoder);
#else
        return vx_error("%s: this voxray was built without NanoVDB (install libnanovdb-dev and rebuild)", path);
#endif
    }
    if (kind == VX_FMT_NPZ) {
        if (vx_plenoxels_load(path, g, dec) != 0) return -1;
        *has_decoder = 1;
        return 0;
    }
    vx_vol_info v;
    if (vx__info(kind, path, opts, &v) != 0) return -1;
    v.allow_outside = opts && opts->allow_outside_data;
    if (vx_vol_read(&v, opts ? opts->volume_index : 0, g) != 0) return -1;
    snprintf(g->source, sizeof g->source, "%s", path);
    return 0;
}

void vx_format_data_file(const char *path, const vx_load_opts *opts, char *buf, size_t cap) {
    if (cap) buf[0] = 0;
    int kind = vx__kind(path, opts);
    vx_vol_info v;
    if (kind != VX_FMT_NONE && kind != VX_FMT_NPZ && kind != VX_FMT_VDB && kind != VX_FMT_NVDB && vx__info(kind, path, opts, &v) == 0 &&
        strcmp(v.data_path, v.path) != 0)
        snprintf(buf, cap, "%s", v.data_path);
    vx_clear_error();
}

int vx_format_describe(const char *path, const vx_load_opts *opts, char *buf, size_t cap) {
    if (cap) buf[0] = 0;
    int kind = vx__kind(path, opts);
    if (kind == VX_FMT_NONE) return 0;
    if (kind == VX_FMT_NPZ) return vx_plenoxels_describe(path, buf, cap);
    if (kind == VX_FMT_VDB) {
#ifdef VX_HAVE_VDB
        return vx_vdb_describe(path, buf, cap);
#else
        return vx_error("%s: this voxray was built without OpenVDB (install libopenvdb-dev and rebuild)", path);
#endif
    }
    if (kind == VX_FMT_NVDB) {
#ifdef VX_HAVE_NANOVDB
        return vx_nvdb_describe(path, buf, cap);
#else
        return vx_error("%s: this voxray was built without NanoVDB (install libnanovdb-dev and rebuild)", path);
#endif
    }
    vx_vol_info v;
    if (vx__info(kind, path, opts, &v) != 0 || vx_vol_check(&v) != 0) return -1;
    vx_vol_describe(&v, buf, cap);
    return 0;
}
