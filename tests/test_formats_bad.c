/* test_formats_bad.c - malformed volume files, per format: truncated payloads, wrong
 * sizes, corrupt gzip, unsupported types, contradicting fields, overflowing sizes,
 * missing detached data. Each must fail with one line naming the file and the field,
 * and huge claimed sizes must not be allocated before the data is there. */
#include "vx_test.h"

#include <sys/resource.h>

#include "formats.h"
#include "scene.h"
#include "vx_common.h"
#include "fmt_fixtures.h"

/* Load must fail; the one-line message names the file (when given) and `field`. */
static void expect_bad_opts(const char *path, const vx_load_opts *o, const char *field, int names_file) {
    vx_grid g;
    vx_decoder d;
    int has = 0;
    memset(&g, 0, sizeof g);
    vx_clear_error();
    int rc = vx_format_load(path, o, &g, &d, &has);
    const char *m = vx_errmsg();
    if (rc != -1 || !strstr(m, field) || (names_file && !strstr(m, fx_base(path))) || strchr(m, '\n') || !m[0]) {
        fprintf(stderr, "%s: rc %d, message '%s'; expected a failure naming '%s'\n", path, rc, m, field);
        if (rc == 0) vx_grid_free(&g);
        fail();
    }
    /* describing a broken file must not crash either */
    char buf[4096];
    (void)vx_format_describe(path, o, buf, sizeof buf);
}

static void expect_bad(const char *path, const char *field) { expect_bad_opts(path, NULL, field, 1); }

/* Header text + payload into a fresh file with extension ext. */
static const char *bad_file(const char *ext, const char *hdr, const void *pay, size_t plen) {
    static char path[8][512];
    static int k;
    char *p = path[k++ % 8];
    fx_name(p, 512, ext);
    fx_write2(p, hdr, strlen(hdr), pay, plen);
    return p;
}

static unsigned char zeros[4096];

/* ---- NRRD -------------------------------------------------------------------------------- */
static void test_nrrd_bad(void **st) {
    (void)st;
#define NH "NRRD0004\ntype: uchar\ndimension: 3\n"
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: raw\n\n", zeros, 10), "payload");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4\nencoding: raw\n\n", zeros, 64), "sizes");
    expect_bad(bad_file(".nrrd", "NRRD0004\ntype: block\ndimension: 3\nsizes: 4 4 4\nencoding: raw\n\n", zeros, 64), "type");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: ascii\n\n", "1 2 3", 5), "encoding");
    expect_bad(bad_file(".nrrd", NH "sizes: 70000 4 4\nencoding: raw\n\n", zeros, 64), "size along x");
    expect_bad(bad_file(".nrrd", NH "sizes: 4000000000 4000000000 4000000000\nencoding: raw\n\n", zeros, 64), "size along");
    expect_bad(bad_file(".nrrd", "NRRD0004\ntype: double\ndimension: 3\nsizes: 65536 65536 65536\nendian: little\nencoding: raw\n\n", zeros, 64), "allowed");
    expect_bad(bad_file(".nrrd", "NRRD0004\ntype: short\ndimension: 3\nsizes: 4 4 4\nencoding: raw\n\n", zeros, 128), "endian");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: raw\nspace: RAS\nspace directions: (1,0,0) (0,1,0)\n\n", zeros, 64), "space directions");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: raw\nspace: RAS\nspace directions: (1,0,0) (0,1,0) (0,0\n\n", zeros, 64), "space directions");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: raw\nspace: RAS\nspace directions: (1,0,0) (2,0,0) (0,0,1)\n\n", zeros, 64), "singular");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: raw\nspace: martian\n\n", zeros, 64), "space");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: raw\nspace dimension: 2\n\n", zeros, 64), "space dimension");
    expect_bad(bad_file(".nrrd", "NRRD0004\ntype: uchar\ndimension: 4\nsizes: 3 4 4 4\nencoding: raw\nkinds: RGB-color domain domain domain\n\n", zeros, 192), "components");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: raw\n", NULL, 0), "header");
    expect_bad(bad_file(".nrrd", "NRRD0004\nsizes: 4 4 4\nencoding: raw\ndimension: 3\n\n", zeros, 64), "type");
    expect_bad(bad_file(".nrrd", "NRRD9\n", NULL, 0), "magic");
    expect_bad(bad_file(".nhdr", NH "sizes: 4 4 4\nencoding: raw\ndata file: not-there.raw\n", NULL, 0), "data file");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: gzip\nbyte skip: -1\n\n", zeros, 64), "byte skip");
    /* gzip: corrupt and short streams */
    unsigned char pay[64];
    for (int i = 0; i < 64; i++) pay[i] = (unsigned char)(fx_rand() * 256);
    size_t cl;
    unsigned char *c = fx_deflate(pay, sizeof pay, 0, &cl);
    unsigned char *bad = malloc(cl);
    memcpy(bad, c, cl);
    for (size_t i = 10; i < cl - 8; i++) bad[i] ^= 0x5a;
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: gzip\n\n", bad, cl), "gzip");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: gzip\n\n", c, cl / 2), "compressed data ends");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 8\nencoding: gzip\n\n", c, cl), "compressed data ends");
    expect_bad(bad_file(".nrrd", NH "sizes: 4 4 4\nencoding: gzip\n\n", "not gzip at all", 15), "gzip");
    free(bad);
    free(c);
#undef NH
}

/* Sizes that pass the limits but whose compressed payload is tiny: the reader must fail
 * on the short data without first allocating what the header claims (13.5 GB here). */
/* gcc defines __SANITIZE_ADDRESS__; clang says so through __has_feature */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif

static void test_no_alloc_from_header(void **st) {
    (void)st;
    unsigned char pay[100] = {0};
    size_t cl;
    unsigned char *c = fx_deflate(pay, sizeof pay, 0, &cl);
    const char *p = bad_file(".nrrd", "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 1500 1500 1500\nencoding: gzip\n\n", c, cl);
    vx_mem_budget_set(VX_MAX_GRID_BYTES); /* past the budget check, on any machine: the stream decides */
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit old, lim;
    getrlimit(RLIMIT_AS, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)2 << 30; /* 2 GiB of address space: a 13.5 GB malloc cannot happen */
    setrlimit(RLIMIT_AS, &lim);
#endif
    expect_bad(p, "compressed data ends");
    /* raw: sizes checked against the file size before allocating */
    expect_bad(bad_file(".nrrd", "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 1500 1500 1500\nencoding: raw\n\n", pay, 100), "payload");
    /* NIfTI gz claiming a big volume */
    fx_vol v;
    fx_random(&v, 2, 2, 2, VX_DT_U8);
    unsigned char h[352];
    double i2w[12];
    fx_nifti_header(&v, h, 0, 0, 2, 1, i2w);
    fx_put16(h + 42, 1500, 0); fx_put16(h + 44, 1500, 0); fx_put16(h + 46, 1500, 0);
    size_t hl;
    unsigned char *hz = fx_deflate(h, 352, 0, &hl);
    char path[512];
    fx_name(path, sizeof path, ".nii.gz");
    fx_write2(path, hz, hl, NULL, 0);
    expect_bad(path, "compressed data ends");
#if !defined(__SANITIZE_ADDRESS__)
    setrlimit(RLIMIT_AS, &old);
#endif
    vx_mem_budget_set(0);
    free(hz);
    free(c);
    fx_free(&v);
}

/* ---- NIfTI ------------------------------------------------------------------------------- */
static const char *nifti_with(void (*edit)(unsigned char *h), size_t payload, const char *ext) {
    static char path[512];
    fx_vol v;
    fx_random(&v, 4, 4, 4, VX_DT_I16);
    unsigned char h[352];
    double i2w[12];
    fx_nifti_header(&v, h, 0, 0, 0, 1, i2w);
    if (edit) edit(h);
    unsigned char *file = calloc(1, 352 + payload);
    memcpy(file, h, 352);
    fx_name(path, sizeof path, ext);
    if (!strcmp(ext, ".nii.gz")) {
        size_t cl;
        unsigned char *c = fx_deflate(file, 352 + payload, 0, &cl);
        /* corrupt the CRC-32 in the gzip trailer: the data still inflates, only the check
         * value catches it (corrupting the deflate bytes could hit the header instead) */
        c[cl - 8] ^= 0xff;
        fx_write2(path, c, cl, NULL, 0);
        free(c);
    } else {
        fx_write2(path, file, 352 + payload, NULL, 0);
    }
    free(file);
    fx_free(&v);
    return path;
}
static void ed_bitpix(unsigned char *h) { fx_put16(h + 72, 8, 0); }
static void ed_complex(unsigned char *h) { fx_put16(h + 70, 32, 0); fx_put16(h + 72, 64, 0); }
static void ed_offset(unsigned char *h) { fx_putf(h + 108, 100, 0); }
static void ed_offset_frac(unsigned char *h) { fx_putf(h + 108, 352.5, 0); }
static void ed_huge(unsigned char *h) { for (int i = 1; i <= 3; i++) fx_put16(h + 40 + 2 * i, 30000, 0); }
static void ed_neg(unsigned char *h) { fx_put16(h + 44, -3, 0); }
static void ed_magic(unsigned char *h) { memcpy(h + 344, "abc\0", 4); }
static void ed_nifti2(unsigned char *h) { fx_put32(h, 540, 0); }
static void ed_dim0(unsigned char *h) { fx_put16(h + 40, 2, 0); }
static void ed_nan(unsigned char *h) { fx_putf(h + 284, NAN, 0); }
static void ed_4d_many(unsigned char *h) { fx_put16(h + 40, 7, 0); for (int i = 4; i <= 7; i++) fx_put16(h + 40 + 2 * i, 32000, 0); }

static void test_nifti_bad(void **st) {
    (void)st;
    expect_bad(nifti_with(ed_bitpix, 128, ".nii"), "bitpix");
    expect_bad(nifti_with(ed_complex, 512, ".nii"), "datatype");
    expect_bad(nifti_with(NULL, 100, ".nii"), "payload");
    expect_bad(nifti_with(ed_offset, 128, ".nii"), "vox_offset");
    expect_bad(nifti_with(ed_offset_frac, 128, ".nii"), "vox_offset");
    expect_bad(nifti_with(ed_huge, 128, ".nii"), "allowed");
    expect_bad(nifti_with(ed_neg, 128, ".nii"), "dim[2]");
    expect_bad(nifti_with(ed_magic, 128, ".nii"), "magic");
    expect_bad(nifti_with(ed_nifti2, 128, ".nii"), "NIfTI-2");
    expect_bad(nifti_with(ed_dim0, 128, ".nii"), "dim[0]");
    expect_bad(nifti_with(ed_nan, 128, ".nii"), "not finite");
    expect_bad(nifti_with(ed_4d_many, 128, ".nii"), "volumes");
    expect_bad(nifti_with(NULL, 4096, ".nii.gz"), "gzip");
    expect_bad(bad_file(".nii", "short", NULL, 0), "348");
    /* .hdr without its .img */
    fx_vol v;
    fx_random(&v, 2, 2, 2, VX_DT_U8);
    char path[512];
    double i2w[12];
    fx_nifti(&v, path, sizeof path, 0, 2, 0, 1, 0, i2w);
    char img[600];
    snprintf(img, sizeof img, "%.*s.img", (int)strlen(path) - 4, path);
    remove(img);
    expect_bad(path, "data file");
    fx_free(&v);
}

/* ---- MetaImage --------------------------------------------------------------------------- */
static void test_metaimage_bad(void **st) {
    (void)st;
#define MH "ObjectType = Image\nNDims = 3\n"
    expect_bad(bad_file(".mha", MH "DimSize = 4 4\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n", zeros, 64), "DimSize");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nElementType = MET_LONG_LONG\nElementDataFile = LOCAL\n", zeros, 512), "ElementType");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n", zeros, 20), "payload");
    expect_bad(bad_file(".mhd", MH "DimSize = 4 4 4\nElementType = MET_UCHAR\nElementDataFile = gone.raw\n", NULL, 0), "data file");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nElementType = MET_UCHAR\nCompressedData = True\nElementDataFile = LOCAL\n", "garbage!garbage!", 16), "gzip");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nElementNumberOfChannels = 3\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n", zeros, 192), "ElementNumberOfChannels");
    expect_bad(bad_file(".mhd", MH "DimSize = 4 4 4\nElementType = MET_UCHAR\nCompressedData = True\nHeaderSize = -1\nElementDataFile = x.zraw\n", NULL, 0), "HeaderSize");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nElementType = MET_UCHAR\n", NULL, 0), "ElementDataFile");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nElementSpacing = 1 0 1\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n", zeros, 64), "ElementSpacing");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nTransformMatrix = 1 0 0 0 1 0\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n", zeros, 64), "TransformMatrix");
    expect_bad(bad_file(".mha", "ObjectType = Image\nNDims = 3\nDimSize = 100000 4 4\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n", zeros, 64), "size along x");
    expect_bad(bad_file(".mha", "ObjectType = Tube\nNDims = 3\n", NULL, 0), "ObjectType");
    expect_bad(bad_file(".mha", MH "DimSize = 4 4 4\nElementType = MET_UCHAR\nElementDataFile = LIST\n", NULL, 0), "ElementDataFile");
    expect_bad(bad_file(".mha", "what is this\n", NULL, 0), "Key = Value");
#undef MH
}

/* ---- INRIMAGE ---------------------------------------------------------------------------- */
static const char *inr_with(const char *type, int pixsize, const char *extra, int vdim, size_t payload, int hdr_len) {
    char h[600];
    int n = snprintf(h, sizeof h, "#INRIMAGE-4#{\nXDIM=4\nYDIM=4\nZDIM=4\nVDIM=%d\nTYPE=%s\nPIXSIZE=%d bits\nCPU=decm\n%s",
                     vdim, type, pixsize, extra);
    memset(h + n, '\n', (size_t)(hdr_len - 4 - n));
    memcpy(h + hdr_len - 4, "##}\n", 5);
    return bad_file(".inr", h, zeros, payload);
}

static void test_inr_bad(void **st) {
    (void)st;
    expect_bad(inr_with("float", 16, "", 1, 256, 256), "PIXSIZE");
    expect_bad(inr_with("unsigned fixed", 12, "", 1, 256, 256), "PIXSIZE");
    expect_bad(inr_with("packed", 8, "", 1, 256, 256), "TYPE");
    expect_bad(inr_with("float", 32, "", 3, 768, 256), "VDIM");
    expect_bad(inr_with("float", 32, "", 1, 100, 256), "payload");
    expect_bad(inr_with("float", 32, "", 1, 256, 300), "header");
    expect_bad(inr_with("float", 32, "VX=-1\n", 1, 256, 256), "VX");
    expect_bad(inr_with("float", 32, "CPU=vax\n", 1, 256, 256), "CPU");
    expect_bad(bad_file(".inr", "#INRIMAGE-4#{\nYDIM=4\nZDIM=4\nTYPE=float\nPIXSIZE=32 bits\n", NULL, 0), "##}");
    char h[257] = {0}; /* fx_inr_header fills 256 bytes; h[256] ends the string */
    fx_vol v;
    fx_random(&v, 4, 4, 4, VX_DT_F32);
    double sp[3] = {1, 1, 1};
    fx_inr_header(&v, 0, h, sp, "");
    char *noxdim = strstr(h, "XDIM");
    noxdim[0] = 'Q';
    expect_bad(bad_file(".inr", h, zeros, 256), "XDIM");
    /* .inr.gz with a corrupt stream after a good header */
    fx_inr_header(&v, 0, h, sp, "");
    unsigned char file[512];
    memcpy(file, h, 256);
    for (int i = 256; i < 512; i++) file[i] = (unsigned char)(fx_rand() * 256);
    size_t cl;
    unsigned char *c = fx_deflate(file, sizeof file, 0, &cl);
    expect_bad(bad_file(".inr.gz", "", c, cl - 20), "compressed data ends");
    fx_free(&v);
    free(c);
}

/* ---- VolPack .den and raw ---------------------------------------------------------------- */
static void test_den_raw_bad(void **st) {
    (void)st;
    unsigned char h[62];
    int orig[3] = {8, 8, 8}, map[3] = {4, 4, 4};
    fx_den_header(h, 0, orig, map, 65);
    char path[512];
    fx_name(path, sizeof path, ".den");
    fx_write2(path, h, 62, zeros, 65);
    expect_bad(path, "map_length");
    fx_den_header(h, 1, orig, map, 64);
    fx_name(path, sizeof path, ".den");
    fx_write2(path, h, 62, zeros, 30);
    expect_bad(path, "payload");
    h[0] = 9; h[1] = 9;
    fx_name(path, sizeof path, ".den");
    fx_write2(path, h, 62, zeros, 64);
    expect_bad(path, "map_version");
    int neg[3] = {4, -4, 4};
    fx_den_header(h, 0, orig, neg, 64);
    fx_name(path, sizeof path, ".den");
    fx_write2(path, h, 62, zeros, 64);
    expect_bad(path, "map_len");
    fx_name(path, sizeof path, ".den");
    fx_write2(path, h, 20, NULL, 0);
    expect_bad(path, "header");

    vx_load_opts o;
    memset(&o, 0, sizeof o);
    fx_name(path, sizeof path, ".raw");
    fx_write2(path, zeros, 100, NULL, 0);
    o.raw_spec = "4,4,4,uint16";
    expect_bad_opts(path, &o, "needs exactly", 1);
    o.raw_spec = "4,4,4,complex64";
    expect_bad_opts(path, &o, "dtype", 0);
    o.raw_spec = "4,4";
    expect_bad_opts(path, &o, "--raw", 0);
    o.raw_spec = "4,4,x,uint8";
    expect_bad_opts(path, &o, "size", 0);
    o.raw_spec = "4,4,4,uint8,middle";
    expect_bad_opts(path, &o, "endian", 0);
    o.raw_spec = "65536,65536,65536,float64";
    expect_bad_opts(path, &o, "allowed", 1);
    expect_bad(bad_file(".raw", "abc", NULL, 0), "--raw");
    expect_bad(bad_file(".xyz", "hello", NULL, 0), "unknown volume format");
}

/* ---- Plenoxels --------------------------------------------------------------------------- */
static void test_plenoxels_bad(void **st) {
    (void)st;
    fx_plenoxels p;
    fx_plenoxels_make(&p, 4, 3, 5, 2);
    char path[512];
    static const struct { const char *variant, *field; } cases[] = {
        {"no-links", "links.npy"}, {"basis-3", "basis_type"}, {"basis-huge", "basis_type"}, {"sh-cols", "sh_data"},
        {"link-oob", "links.npy"}, {"links-f32", "links.npy"}, {"n-mismatch", "sh_data"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fx_plenoxels_write(&p, path, sizeof path, cases[i].variant);
        expect_bad(path, cases[i].field);
    }
    /* truncated and corrupted archives */
    fx_plenoxels_write(&p, path, sizeof path, NULL);
    unsigned char *data;
    size_t len;
    assert_int_equal(vx_read_file(path, 1 << 24, &data, &len), 0);
    char cut[512];
    fx_name(cut, sizeof cut, ".npz");
    fx_write2(cut, data, len / 2, NULL, 0);
    expect_bad(cut, ".npz");
    for (size_t i = 40; i < len / 2; i += 7) data[i] ^= 0xa5;
    fx_name(cut, sizeof cut, ".npz");
    fx_write2(cut, data, len, NULL, 0);
    expect_bad(cut, "");
    expect_bad(bad_file(".npz", "PK\x03\x04 not really a zip", NULL, 0), "zip");
    free(data);
    /* radius / centre near FLT_MAX: the world box overflows float in the renderer
     * (issue 15.1); the scene loader refuses the placement */
    for (int k = 0; k < 2; k++) {
        fx_plenoxels q = p;
        for (int a = 0; a < 3; a++) {
            q.radius[a] = k ? 1.0 : 3e38;
            q.center[a] = k ? 3e38 : 0.0;
        }
        fx_plenoxels_write(&q, path, sizeof path, NULL);
        vx_scene s;
        vx_clear_error();
        assert_int_equal(vx_scene_load(path, NULL, &s), -1);
        assert_non_null(strstr(vx_errmsg(), "placement"));
    }
    fx_plenoxels_free(&p);
}

int main(void) {
    vx_test_seed();
    fx_setup(vx_test_rng_state, vx_test_tmpdir());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nrrd_bad),
        cmocka_unit_test(test_no_alloc_from_header),
        cmocka_unit_test(test_nifti_bad),
        cmocka_unit_test(test_metaimage_bad),
        cmocka_unit_test(test_inr_bad),
        cmocka_unit_test(test_den_raw_bad),
        cmocka_unit_test(test_plenoxels_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
