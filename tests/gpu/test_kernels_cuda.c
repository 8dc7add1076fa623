/* test_kernels_cuda.c - every version of the CUDA trilinear op, forward and backward,
 * and the grid gather/scatter (float32 and float16), against the CPU references in
 * trilinear_cpu.c on fresh random inputs; gradients against finite differences.
 * Needs a GPU: built and run by `make test-gpu`. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "vx_common.h"
#include "cuda_device.h"
#include "cuda_trilinear.h"
#include "gpu_test.h"

static void *dev(size_t bytes) {
    void *d = NULL;
    if (vx_cuda_alloc(&d, bytes, "test buffer")) fail_msg("%s", vx_errmsg());
    return d;
}

/* Max error over n values with tolerance tol + |ref| * rel; prints the first misses. */
static int compare(const char *what, const float *got, const float *ref, size_t n, float tol, float rel) {
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        float e = fabsf(got[i] - ref[i]);
        if (!(e <= tol + fabsf(ref[i]) * rel)) {
            if (bad < 5) print_message("%s: [%zu] got %.7g want %.7g\n", what, i, got[i], ref[i]);
            bad++;
        }
    }
    return bad;
}

/* ---- the cell op ------------------------------------------------------------------ */

static void run_cell_case(int n, int f) {
    size_t nf = (size_t)n * f, n8f = nf * 8;
    float *feats = malloc(n8f * 4), *pts = malloc((size_t)n * 12), *ref = malloc(nf * 4), *got = malloc(n8f * 4);
    float *dout = malloc(nf * 4), *dref = malloc(n8f * 4);
    for (size_t i = 0; i < n8f; i++) feats[i] = frand(-1, 1);
    for (size_t i = 0; i < (size_t)n * 3; i++) pts[i] = frand(-1, 1);
    for (size_t i = 0; i < nf; i++) dout[i] = frand(-1, 1);
    vx_trilinear_forward_cpu(feats, pts, ref, n, f);
    vx_trilinear_backward_cpu(dout, pts, dref, n, f);
    float *d_feats = dev(n8f * 4), *d_pts = dev((size_t)n * 12), *d_out = dev(nf * 4), *d_dout = dev(nf * 4);
    float *d_df = dev(n8f * 4);
    OK(vx_cuda_upload(d_feats, feats, n8f * 4));
    OK(vx_cuda_upload(d_pts, pts, (size_t)n * 12));
    OK(vx_cuda_upload(d_dout, dout, nf * 4));
    int blocks[] = {0, 32, 128, 1024};
    for (int v = 1; v <= VX_TRILINEAR_FWD_VERSIONS; v++)
        for (int b = 0; b < 4; b++) {
            OK(vx_cuda_zero(d_out, nf * 4));
            OK(vx_trilinear_forward_cuda(v, d_feats, d_pts, d_out, n, f, blocks[b]));
            OK(vx_cuda_download(got, d_out, nf * 4));
            char what[96];
            snprintf(what, sizeof what, "forward v%d block %d N %d F %d", v, blocks[b], n, f);
            assert_int_equal(compare(what, got, ref, nf, 1e-6f, 8 * 1.2e-7f), 0);
        }
    for (int v = 1; v <= VX_TRILINEAR_BWD_VERSIONS; v++)
        for (int b = 0; b < 4; b++) {
            OK(vx_cuda_zero(d_df, n8f * 4));
            OK(vx_trilinear_backward_cuda(v, d_dout, d_pts, d_df, n, f, blocks[b]));
            OK(vx_cuda_download(got, d_df, n8f * 4));
            char what[96];
            snprintf(what, sizeof what, "backward v%d block %d N %d F %d", v, blocks[b], n, f);
            assert_int_equal(compare(what, got, dref, n8f, 1e-6f, 4 * 1.2e-7f), 0);
        }
    vx_cuda_free(d_feats); vx_cuda_free(d_pts); vx_cuda_free(d_out); vx_cuda_free(d_dout); vx_cuda_free(d_df);
    free(feats); free(pts); free(ref); free(got); free(dout); free(dref);
}

static void test_cell_versions(void **state) {
    (void)state;
    run_cell_case(1, 1);
    run_cell_case(1000, 32);
    run_cell_case(777, 13);   /* F % 4 != 0: vector versions fall back */
    run_cell_case(3001, 256);
    run_cell_case(4099, 36);  /* odd number of float4 groups for version 4 */
}

static void test_cell_bad_args(void **state) {
    (void)state;
    assert_int_equal(vx_trilinear_forward_cuda(0, NULL, NULL, NULL, 10, 4, 0), -1);
    assert_int_equal(vx_trilinear_forward_cuda(VX_TRILINEAR_FWD_VERSIONS + 1, NULL, NULL, NULL, 10, 4, 0), -1);
    assert_int_equal(vx_trilinear_backward_cuda(2, NULL, NULL, NULL, 0, 4, 0), -1);
    assert_int_equal(vx_trilinear_forward_cuda(2, NULL, NULL, NULL, 10, 4, 48), -1);
}

/* dL/dfeats from backward equals finite differences of L = <r, forward(feats)>. */
static void test_cell_gradient_fd(void **state) {
    (void)state;
    int n = 64, f = 8;
    size_t nf = (size_t)n * f, n8f = nf * 8;
    float *feats = malloc(n8f * 4), *pts = malloc((size_t)n * 12), *r = malloc(nf * 4), *out = malloc(nf * 4);
    float *grad = malloc(n8f * 4);
    for (size_t i = 0; i < n8f; i++) feats[i] = frand(-1, 1);
    for (size_t i = 0; i < (size_t)n * 3; i++) pts[i] = frand(-1, 1);
    for (size_t i = 0; i < nf; i++) r[i] = frand(-1, 1);
    float *d_feats = dev(n8f * 4), *d_pts = dev((size_t)n * 12), *d_out = dev(nf * 4), *d_r = dev(nf * 4), *d_g = dev(n8f * 4);
    OK(vx_cuda_upload(d_pts, pts, (size_t)n * 12));
    OK(vx_cuda_upload(d_r, r, nf * 4));
    OK(vx_trilinear_backward_cuda(VX_TRILINEAR_BWD_VERSIONS, d_r, d_pts, d_g, n, f, 0));
    OK(vx_cuda_download(grad, d_g, n8f * 4));
    for (int t = 0; t < 40; t++) {
        size_t e = (size_t)(frand(0, 1) * (n8f - 1));
        double L[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float keep = feats[e];
            feats[e] = keep + (sgn ? 1e-2f : -1e-2f);
            OK(vx_cuda_upload(d_feats, feats, n8f * 4));
            OK(vx_trilinear_forward_cuda(VX_TRILINEAR_FWD_VERSIONS, d_feats, d_pts, d_out, n, f, 0));
            OK(vx_cuda_download(out, d_out, nf * 4));
            feats[e] = keep;
            L[sgn] = 0;
            for (size_t i = 0; i < nf; i++) L[sgn] += (double)r[i] * out[i];
        }
        double fd = (L[1] - L[0]) / 2e-2;
        if (fabs(fd - grad[e]) > 2e-3) fail_msg("feats[%zu]: backward %g, finite difference %g", e, grad[e], fd);
    }
    vx_cuda_free(d_feats); vx_cuda_free(d_pts); vx_cuda_free(d_out); vx_cuda_free(d_r); vx_cuda_free(d_g);
    free(feats); free(pts); free(r); free(out); free(grad);
}

/* ---- grid gather / scatter ---------------------------------------------------------- */

static void make_desc(vx_grid_desc *g, int nx, int ny, int nz, int nc) {
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    /* a rotated, scaled placement so every affine term matters */
    float m[12] = {0, 3.0f, 0.2f, 1.0f, -2.5f, 0, 0.1f, 20.0f, 0.3f, 0, 4.0f, -2.0f};
    for (int i = 0; i < 12; i++) g->w2i[i] = m[i];
}

/* World point whose index coordinates are (x, y, z): solve the desc's affine. */
static void random_world_points(const vx_grid_desc *g, float *pts, int m) {
    for (int i = 0; i < m; i++) {
        /* mostly inside, some outside to exercise the border clamp */
        float ix = frand(-2, g->nx + 1), iy = frand(-2, g->ny + 1), iz = frand(-2, g->nz + 1);
        /* invert m numerically by Cramer's rule */
        const float *M = g->w2i;
        double b[3] = {ix - M[3], iy - M[7], iz - M[11]};
        double a[9] = {M[0], M[1], M[2], M[4], M[5], M[6], M[8], M[9], M[10]};
        double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + a[2] * (a[3] * a[7] - a[4] * a[6]);
        for (int c = 0; c < 3; c++) {
            double t[9];
            for (int k = 0; k < 9; k++) t[k] = a[k];
            t[c] = b[0]; t[3 + c] = b[1]; t[6 + c] = b[2];
            pts[i * 3 + c] = (float)((t[0] * (t[4] * t[8] - t[5] * t[7]) - t[1] * (t[3] * t[8] - t[5] * t[6]) +
                                      t[2] * (t[3] * t[7] - t[4] * t[6])) / det);
        }
    }
}

static void run_grid_case(int nx, int ny, int nz, int nc, int m, int half) {
    vx_grid_desc g;
    make_desc(&g, nx, ny, nz, nc);
    size_t cnt = (size_t)nx * ny * nz * nc, mc = (size_t)m * nc;
    float *grid = malloc(cnt * 4), *pts = malloc((size_t)m * 12), *ref = malloc(mc * 4);
    float *got = malloc((cnt > mc ? cnt : mc) * 4); /* gathered values, then the gradient grid */
    float *dout = malloc(mc * 4), *dref = calloc(cnt, 4);
    for (size_t i = 0; i < cnt; i++) grid[i] = frand(-1, 1);
    if (half) /* the reference sees the values the device stores */
        for (size_t i = 0; i < cnt; i++) grid[i] = vx_half_to_float(vx_float_to_half(grid[i]));
    random_world_points(&g, pts, m);
    for (size_t i = 0; i < mc; i++) dout[i] = frand(-1, 1);
    vx_grid_gather_cpu(&g, grid, pts, m, ref);
    assert_int_equal(vx_grid_scatter_cpu(&g, dout, pts, m, dref), 0);
    float *d_grid32 = dev(cnt * 4), *d_pts = dev((size_t)m * 12), *d_out = dev(mc * 4), *d_dout = dev(mc * 4);
    void *d_grid = half ? dev(cnt * 2) : d_grid32;
    void *d_dgrid = dev(cnt * (half ? 2 : 4));
    OK(vx_cuda_upload(d_grid32, grid, cnt * 4));
    if (half) OK(vx_cuda_to_half(d_grid32, d_grid, cnt));
    OK(vx_cuda_upload(d_pts, pts, (size_t)m * 12));
    OK(vx_cuda_upload(d_dout, dout, mc * 4));
    OK(vx_grid_gather_cuda(&g, d_grid, half, d_pts, m, d_out));
    OK(vx_cuda_download(got, d_out, mc * 4));
    char what[96];
    snprintf(what, sizeof what, "gather %s %dx%dx%dx%d", half ? "f16" : "f32", nx, ny, nz, nc);
    /* index coordinates differ by float rounding of the affine: a few e-6 per unit slope */
    assert_int_equal(compare(what, got, ref, mc, 2e-5f, 1e-5f), 0);
    OK(vx_cuda_zero(d_dgrid, cnt * (half ? 2 : 4)));
    OK(vx_grid_scatter_cuda(&g, d_dout, d_pts, m, d_dgrid, half));
    if (half) {
        uint16_t *h = malloc(cnt * 2);
        OK(vx_cuda_download(h, d_dgrid, cnt * 2));
        for (size_t i = 0; i < cnt; i++) got[i] = vx_half_to_float(h[i]);
        free(h);
    } else {
        OK(vx_cuda_download(got, d_dgrid, cnt * 4));
    }
    snprintf(what, sizeof what, "scatter %s %dx%dx%dx%d", half ? "f16" : "f32", nx, ny, nz, nc);
    /* f32: atomics in any order; f16: each add rounds to 11 bits */
    assert_int_equal(compare(what, got, dref, cnt, half ? 5e-2f : 1e-4f, half ? 2e-2f : 1e-5f), 0);
    vx_cuda_free(d_grid32); if (half) vx_cuda_free(d_grid);
    vx_cuda_free(d_pts); vx_cuda_free(d_out); vx_cuda_free(d_dout); vx_cuda_free(d_dgrid);
    free(grid); free(pts); free(ref); free(got); free(dout); free(dref);
}

static void test_grid_gather_scatter(void **state) {
    (void)state;
    for (int half = 0; half < 2; half++) {
        run_grid_case(17, 9, 12, 4, 5000, half);
        run_grid_case(16, 16, 16, 28, 3000, half);
        run_grid_case(11, 7, 5, 3, 2000, half);   /* scalar path */
        run_grid_case(1, 6, 5, 4, 500, half);     /* a flat axis */
    }
}

/* The scatter is the gradient of L = <r, gather(grid)>: check against differences. */
static void test_grid_gradient_fd(void **state) {
    (void)state;
    vx_grid_desc g;
    make_desc(&g, 9, 8, 7, 4);
    int m = 400;
    size_t cnt = (size_t)9 * 8 * 7 * 4, mc = (size_t)m * 4;
    float *grid = malloc(cnt * 4), *pts = malloc((size_t)m * 12), *r = malloc(mc * 4), *out = malloc(mc * 4), *grad = malloc(cnt * 4);
    for (size_t i = 0; i < cnt; i++) grid[i] = frand(-1, 1);
    random_world_points(&g, pts, m);
    for (size_t i = 0; i < mc; i++) r[i] = frand(-1, 1);
    float *d_grid = dev(cnt * 4), *d_pts = dev((size_t)m * 12), *d_out = dev(mc * 4), *d_r = dev(mc * 4), *d_g = dev(cnt * 4);
    OK(vx_cuda_upload(d_pts, pts, (size_t)m * 12));
    OK(vx_cuda_upload(d_r, r, mc * 4));
    OK(vx_cuda_zero(d_g, cnt * 4));
    OK(vx_grid_scatter_cuda(&g, d_r, d_pts, m, d_g, 0));
    OK(vx_cuda_download(grad, d_g, cnt * 4));
    for (int t = 0; t < 40; t++) {
        size_t e = (size_t)(frand(0, 1) * (cnt - 1));
        double L[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float keep = grid[e];
            grid[e] = keep + (sgn ? 1e-2f : -1e-2f);
            OK(vx_cuda_upload(d_grid, grid, cnt * 4));
            OK(vx_grid_gather_cuda(&g, d_grid, 0, d_pts, m, d_out));
            OK(vx_cuda_download(out, d_out, mc * 4));
            grid[e] = keep;
            L[sgn] = 0;
            for (size_t i = 0; i < mc; i++) L[sgn] += (double)r[i] * out[i];
        }
        double fd = (L[1] - L[0]) / 2e-2;
        if (fabs(fd - grad[e]) > 5e-3 * (1 + fabs(fd)))
            fail_msg("grid[%zu]: scatter %g, finite difference %g", e, grad[e], fd);
    }
    vx_cuda_free(d_grid); vx_cuda_free(d_pts); vx_cuda_free(d_out); vx_cuda_free(d_r); vx_cuda_free(d_g);
    free(grid); free(pts); free(r); free(out); free(grad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cell_versions),
        cmocka_unit_test(test_cell_bad_args),
        cmocka_unit_test(test_cell_gradient_fd),
        cmocka_unit_test(test_grid_gather_scatter),
        cmocka_unit_test(test_grid_gradient_fd),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
