/* test_npy.c - .npy round trips (float32, float16, 3-D and 4-D), v2 headers, other
 * dtypes converted on read, and malformed headers and payloads rejected with messages
 * that name the file. Also the half-float conversion and trilinear fetch by hand. */
#include "vx_test.h"

#include <math.h>

#include "march.h"
#include "npy.h"
#include "vx_common.h"

static void path_in_tmp(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", vx_test_tmpdir(), name);
}

static void test_roundtrip_f32_f16(void **state) {
    (void)state;
    for (int half = 0; half <= 1; half++)
        for (int nc = 1; nc <= 5; nc += 3) {
            vx_grid g, r;
            assert_int_equal(vx_grid_alloc(&g, 7, 5, 3, nc, "mem"), 0);
            for (size_t i = 0; i < vx_grid_count(&g); i++) g.data[i] = (float)vx_test_uniform(-100, 100);
            char p[512];
            path_in_tmp(p, sizeof p, "rt.npy");
            assert_int_equal(vx_npy_write_grid(p, &g, half), 0);
            assert_int_equal(vx_npy_load_grid(p, &r), 0);
            assert_int_equal(r.nx, 7); assert_int_equal(r.ny, 5); assert_int_equal(r.nz, 3); assert_int_equal(r.nc, nc);
            assert_int_equal(r.src_dtype, half ? VX_DT_F16 : VX_DT_F32);
            for (size_t i = 0; i < vx_grid_count(&g); i++) {
                float want = half ? vx_half_to_float(vx_float_to_half(g.data[i])) : g.data[i];
                assert_true(r.data[i] == want);
                if (half) assert_true(fabsf(r.data[i] - g.data[i]) <= fabsf(g.data[i]) * 1e-3f);
            }
            vx_grid_free(&g);
            vx_grid_free(&r);
        }
}

static void test_half_exact(void **state) {
    (void)state;
    /* every finite half survives half -> float -> half */
    for (uint32_t h = 0; h < 65536; h++) {
        if (((h >> 10) & 31) == 31) continue;
        assert_int_equal(vx_float_to_half(vx_half_to_float((uint16_t)h)), h);
    }
    assert_float_equal(vx_half_to_float(0x3c00), 1.0, 0);
    assert_float_equal(vx_half_to_float(0xc000), -2.0, 0);
    assert_float_equal(vx_half_to_float(0x0001), 5.960464477539063e-08, 1e-15);
    assert_int_equal(vx_float_to_half(1e6f), 0x7c00); /* overflow to inf */
    assert_int_equal(vx_float_to_half(1.0f + 1.0f / 2048), 0x3c00); /* tie rounds to even */
}

/* write raw bytes: header dict + payload */
static void write_npy(const char *path, int major, const char *dict, const void *payload, size_t plen) {
    unsigned char buf[4096];
    size_t dl = strlen(dict), pre = major == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    if (major == 1) { buf[8] = (unsigned char)dl; buf[9] = (unsigned char)(dl >> 8); }
    else { buf[8] = (unsigned char)dl; buf[9] = (unsigned char)(dl >> 8); buf[10] = 0; buf[11] = 0; }
    memcpy(buf + pre, dict, dl);
    memcpy(buf + pre + dl, payload, plen);
    vx_test_write(path, buf, pre + dl + plen);
}

static void test_v2_and_dtypes(void **state) {
    (void)state;
    char p[512];
    path_in_tmp(p, sizeof p, "u16.npy");
    uint16_t be[8];
    for (int i = 0; i < 8; i++) be[i] = (uint16_t)(((i * 1000) >> 8) | ((i * 1000 & 255) << 8)); /* big endian */
    write_npy(p, 2, "{'descr': '>u2', 'fortran_order': False, 'shape': (2, 2, 2), }\n", be, 16);
    vx_grid g;
    assert_int_equal(vx_npy_load_grid(p, &g), 0);
    for (int i = 0; i < 8; i++) assert_float_equal(g.data[i], i * 1000, 0);
    assert_int_equal(g.src_dtype, VX_DT_U16);
    vx_grid_free(&g);
    unsigned char u8[8] = {0, 1, 2, 3, 250, 251, 252, 255};
    path_in_tmp(p, sizeof p, "u8.npy");
    write_npy(p, 1, "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (2, 2, 2, 1)}", u8, 8);
    assert_int_equal(vx_npy_load_grid(p, &g), 0);
    assert_float_equal(g.data[7], 255, 0);
    assert_int_equal(g.nc, 1);
    vx_grid_free(&g);
}

/* A header that ends right after "'shape':" (found by fuzz_npy: the parser read the byte
 * after the header). The buffer is exactly the header, so ASan sees any read past it. */
static void test_header_ends_at_value(void **state) {
    (void)state;
    const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape':   ";
    size_t hl = strlen(d), n = 10 + hl;
    unsigned char *b = malloc(n);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(hl & 0xff);
    b[9] = (unsigned char)(hl >> 8);
    memcpy(b + 10, d, hl);
    vx_npy_header h;
    assert_int_equal(vx_npy_parse_header(b, n, "t.npy", &h), -1);
    assert_non_null(strstr(vx_errmsg(), "shape"));
    free(b);
}

typedef struct { const char *name, *dict; size_t payload; const char *expect; } bad_case;

static void test_bad_files(void **state) {
    (void)state;
    static const bad_case cases[] = {
        {"fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }", 32, "Fortran"},
        {"dtype", "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 2, 2), }", 64, "not supported"},
        {"f64", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 2), }", 64, "float64 is not supported"},
        {"truncated", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", 31, "truncated"},
        {"extra", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", 40, "after the array"},
        {"2d", "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }", 32, "dimensions"},
        {"zero", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2, 2), }", 0, "outside 1..65536"},
        {"huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536, 64), }", 32, "truncated"},
        {"overflow", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 2, 2), }", 32, "too large"},
        {"channels", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 65), }", 260, "channels"},
        {"noshape", "{'descr': '<f4', 'fortran_order': False, }", 4, "shape"},
        {"nodescr", "{'fortran_order': False, 'shape': (1, 1, 1), }", 4, "descr"},
        {"badshape", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, x, 1), }", 4, "non-integer"},
    };
    static unsigned char zeros[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/bad_%s.npy", vx_test_tmpdir(), cases[i].name);
        write_npy(p, 1, cases[i].dict, zeros, cases[i].payload);
        vx_grid g;
        vx_clear_error();
        if (vx_npy_load_grid(p, &g) == 0) fail_msg("case %s loaded", cases[i].name);
        if (!strstr(vx_errmsg(), cases[i].expect) || !strstr(vx_errmsg(), p))
            fail_msg("case %s: message '%s' lacks '%s' or the path", cases[i].name, vx_errmsg(), cases[i].expect);
    }
    /* not npy at all, header length past the end, missing file */
    char p[512];
    path_in_tmp(p, sizeof p, "notnpy.npy");
    vx_test_write_text(p, "hello world, not numpy");
    vx_grid g;
    assert_int_equal(vx_npy_load_grid(p, &g), -1);
    assert_non_null(strstr(vx_errmsg(), "bad magic"));
    unsigned char shortv[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0x7f, '{', '}'};
    path_in_tmp(p, sizeof p, "hlen.npy");
    vx_test_write(p, shortv, sizeof shortv);
    assert_int_equal(vx_npy_load_grid(p, &g), -1);
    assert_non_null(strstr(vx_errmsg(), "truncated"));
    assert_int_equal(vx_npy_load_grid("/nonexistent/grid.npy", &g), -1);
    assert_non_null(strstr(vx_errmsg(), "/nonexistent/grid.npy"));
}

/* trilinear fetch against values computed by hand */
static void test_trilinear_by_hand(void **state) {
    (void)state;
    /* 2x2x2 lattice, value = 1 + x + 2y + 4z (+ 10 in channel 1) */
    float d[16];
    for (int z = 0; z < 2; z++) for (int y = 0; y < 2; y++) for (int x = 0; x < 2; x++) {
        int i = (z * 2 + y) * 2 + x;
        d[2 * i] = (float)(1 + x + 2 * y + 4 * z);
        d[2 * i + 1] = d[2 * i] + 10;
    }
    float out[2];
    vx_trilinear_fetch(d, 2, 2, 2, 2, vx_v3(0.25f, 0.5f, 0.75f), out);
    assert_float_equal(out[0], 1 + 0.25 + 1.0 + 3.0, 1e-6);
    assert_float_equal(out[1], 15.25, 1e-6);
    vx_trilinear_fetch(d, 2, 2, 2, 2, vx_v3(-3.0f, 0.0f, 9.0f), out); /* clamps to (0, 0, 1) */
    assert_float_equal(out[0], 5.0, 1e-6);
    /* a non-linear 3x3x3 case: value x*y*z at (1.5, 0.5, 1.25): product of coordinates
     * is trilinear within a cell, so the interpolant equals it exactly */
    float e[27];
    for (int z = 0; z < 3; z++) for (int y = 0; y < 3; y++) for (int x = 0; x < 3; x++) e[(z * 3 + y) * 3 + x] = (float)(x * y * z);
    vx_trilinear_fetch(e, 3, 3, 3, 1, vx_v3(1.5f, 0.5f, 1.25f), out);
    assert_float_equal(out[0], 1.5 * 0.5 * 1.25, 1e-6);
}

/* SH basis at known directions */
static void test_sh_basis(void **state) {
    (void)state;
    float b[16];
    assert_int_equal(vx_sh_basis(3, vx_v3(0, 0, 1), b), 16);
    assert_float_equal(b[0], 0.28209479177387814, 1e-7);
    assert_float_equal(b[1], 0, 1e-7);
    assert_float_equal(b[2], 0.4886025119029199, 1e-7);
    assert_float_equal(b[6], 0.6307831305050401, 1e-6);
    assert_float_equal(b[12], 0.7463526651802308, 1e-6);
    assert_int_equal(vx_sh_basis(1, vx_v3(1, 0, 0), b), 4);
    assert_float_equal(b[3], -0.4886025119029199, 1e-7);
    assert_int_equal(vx_sh_basis(2, vx_v3(0, 1, 0), b), 9);
    assert_float_equal(b[1], -0.4886025119029199, 1e-7);
    assert_float_equal(b[8], -0.5462742152960396, 1e-6);
    /* orthonormality: integral of b_i b_j over the sphere = delta_ij (Fibonacci points) */
    double acc[16][16] = {{0}};
    int n = 20000;
    for (int k = 0; k < n; k++) {
        double z = 1 - (2.0 * k + 1) / n, r = sqrt(1 - z * z), ph = k * M_PI * (3 - sqrt(5.0));
        float bb[16];
        vx_sh_basis(3, vx_v3((float)(r * cos(ph)), (float)(r * sin(ph)), (float)z), bb);
        for (int i = 0; i < 16; i++) for (int j = 0; j < 16; j++) acc[i][j] += bb[i] * bb[j] * 4 * M_PI / n;
    }
    for (int i = 0; i < 16; i++) for (int j = 0; j < 16; j++) assert_float_equal(acc[i][j], i == j, 2e-3);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_f32_f16), cmocka_unit_test(test_half_exact),
        cmocka_unit_test(test_v2_and_dtypes),     cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_header_ends_at_value),
        cmocka_unit_test(test_trilinear_by_hand), cmocka_unit_test(test_sh_basis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
