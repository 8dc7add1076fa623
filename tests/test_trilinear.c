/* test_trilinear.c - the CPU references of the standalone trilinear op (trilinear.h):
 * corners and centre by hand, adjointness of forward/backward and gather/scatter on
 * fresh random inputs, and agreement with march.h's fetch. Runs without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "march.h"
#include "trilinear.h"

static float frand(unsigned *s, float lo, float hi) {
    *s = *s * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(*s >> 8) / 16777216.0f;
}

static void test_cell_corners(void **state) {
    (void)state;
    float feats[8 * 2], out[2];
    for (int k = 0; k < 8; k++) { feats[k * 2] = (float)(k + 1); feats[k * 2 + 1] = -10.0f * (k + 1); }
    for (int k = 0; k < 8; k++) {
        float p[3] = {(k & 4) ? 1.0f : -1.0f, (k & 2) ? 1.0f : -1.0f, (k & 1) ? 1.0f : -1.0f};
        vx_trilinear_forward_cpu(feats, p, out, 1, 2);
        assert_float_equal(out[0], (float)(k + 1), 1e-6);
        assert_float_equal(out[1], -10.0f * (k + 1), 1e-5);
    }
    float c[3] = {0, 0, 0};
    vx_trilinear_forward_cpu(feats, c, out, 1, 2);
    assert_float_equal(out[0], 4.5f, 1e-6); /* mean of 1..8 */
    /* x = 1 selects corners 4..7 only: mean of 5..8 at the face centre */
    float fx[3] = {1, 0, 0};
    vx_trilinear_forward_cpu(feats, fx, out, 1, 2);
    assert_float_equal(out[0], 6.5f, 1e-6);
}

/* <dout, F(feats)> == <B(dout), feats> for random inputs: backward is forward's adjoint. */
static void test_cell_adjoint(void **state) {
    (void)state;
    unsigned s = (unsigned)time(NULL);
    int n = 97, f = 13;
    float *feats = malloc(sizeof(float) * n * 8 * f), *pts = malloc(sizeof(float) * n * 3);
    float *out = malloc(sizeof(float) * n * f), *dout = malloc(sizeof(float) * n * f);
    float *dfeats = malloc(sizeof(float) * n * 8 * f);
    for (int i = 0; i < n * 8 * f; i++) feats[i] = frand(&s, -1, 1);
    for (int i = 0; i < n * 3; i++) pts[i] = frand(&s, -1, 1);
    for (int i = 0; i < n * f; i++) dout[i] = frand(&s, -1, 1);
    vx_trilinear_forward_cpu(feats, pts, out, n, f);
    vx_trilinear_backward_cpu(dout, pts, dfeats, n, f);
    double a = 0, b = 0;
    for (int i = 0; i < n * f; i++) a += (double)dout[i] * out[i];
    for (int i = 0; i < n * 8 * f; i++) b += (double)dfeats[i] * feats[i];
    assert_true(fabs(a - b) < 1e-4 * (1 + fabs(a)));
    /* weights sum to one: constant features interpolate to themselves */
    for (int i = 0; i < n * 8 * f; i++) feats[i] = 3.25f;
    vx_trilinear_forward_cpu(feats, pts, out, n, f);
    for (int i = 0; i < n * f; i++) assert_float_equal(out[i], 3.25f, 1e-5);
    free(feats); free(pts); free(out); free(dout); free(dfeats);
}

static void fill_desc(vx_grid_desc *g, int nx, int ny, int nz, int nc) {
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    /* world = 0.5 * index + 1 per axis, so index = 2 * (world - 1) */
    float m[12] = {2, 0, 0, -2, 0, 2, 0, -2, 0, 0, 2, -2};
    for (int i = 0; i < 12; i++) g->w2i[i] = m[i];
}

static void test_grid_gather(void **state) {
    (void)state;
    unsigned s = (unsigned)time(NULL) ^ 0x9e3779b9u;
    vx_grid_desc g;
    fill_desc(&g, 7, 5, 6, 3);
    size_t cnt = (size_t)7 * 5 * 6 * 3;
    float *grid = malloc(sizeof(float) * cnt);
    /* a linear field is reproduced exactly inside the lattice */
    for (int z = 0; z < 6; z++) for (int y = 0; y < 5; y++) for (int x = 0; x < 7; x++)
        for (int c = 0; c < 3; c++) grid[(((size_t)z * 5 + y) * 7 + x) * 3 + c] = 1.5f * x - 2.0f * y + 0.25f * z + c;
    int m = 200;
    float *pts = malloc(sizeof(float) * m * 3), *out = malloc(sizeof(float) * m * 3), ref[3];
    for (int i = 0; i < m; i++) {
        pts[i * 3] = frand(&s, 1.0f, 1.0f + 0.5f * 6);
        pts[i * 3 + 1] = frand(&s, 1.0f, 1.0f + 0.5f * 4);
        pts[i * 3 + 2] = frand(&s, 1.0f, 1.0f + 0.5f * 5);
    }
    vx_grid_gather_cpu(&g, grid, pts, m, out);
    for (int i = 0; i < m; i++) {
        float x = 2 * (pts[i * 3] - 1), y = 2 * (pts[i * 3 + 1] - 1), z = 2 * (pts[i * 3 + 2] - 1);
        for (int c = 0; c < 3; c++) assert_float_equal(out[i * 3 + c], 1.5f * x - 2.0f * y + 0.25f * z + c, 1e-4);
        /* the renderer's fetch agrees */
        vx_trilinear_fetch(grid, 7, 5, 6, 3, vx_v3(x, y, z), ref);
        for (int c = 0; c < 3; c++) assert_float_equal(out[i * 3 + c], ref[c], 1e-4);
    }
    /* outside the lattice: border clamp */
    float far[3] = {-100, -100, -100};
    vx_grid_gather_cpu(&g, grid, far, 1, out);
    for (int c = 0; c < 3; c++) assert_float_equal(out[c], (float)c, 1e-6);
    free(grid); free(pts); free(out);
}

/* <dout, gather(grid)> == <scatter(dout), grid>, points inside and outside. */
static void test_grid_scatter_adjoint(void **state) {
    (void)state;
    unsigned s = (unsigned)time(NULL) ^ 0x51ed270bu;
    vx_grid_desc g;
    fill_desc(&g, 6, 4, 5, 4);
    size_t cnt = (size_t)6 * 4 * 5 * 4;
    int m = 300;
    float *grid = malloc(sizeof(float) * cnt), *dgrid = calloc(cnt, sizeof(float));
    float *pts = malloc(sizeof(float) * m * 3), *out = malloc(sizeof(float) * m * 4), *dout = malloc(sizeof(float) * m * 4);
    for (size_t i = 0; i < cnt; i++) grid[i] = frand(&s, -1, 1);
    for (int i = 0; i < m * 3; i++) pts[i] = frand(&s, 0.0f, 4.5f);
    for (int i = 0; i < m * 4; i++) dout[i] = frand(&s, -1, 1);
    vx_grid_gather_cpu(&g, grid, pts, m, out);
    assert_int_equal(vx_grid_scatter_cpu(&g, dout, pts, m, dgrid), 0);
    double a = 0, b = 0;
    for (int i = 0; i < m * 4; i++) a += (double)dout[i] * out[i];
    for (size_t i = 0; i < cnt; i++) b += (double)dgrid[i] * grid[i];
    assert_true(fabs(a - b) < 1e-4 * (1 + fabs(a)));
    free(grid); free(dgrid); free(pts); free(out); free(dout);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cell_corners),
        cmocka_unit_test(test_cell_adjoint),
        cmocka_unit_test(test_grid_gather),
        cmocka_unit_test(test_grid_scatter_adjoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
