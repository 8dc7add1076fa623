/* test_outputs.c - the hardening helpers of issue 15 at module level: NaN-safe clamps,
 * the output set (staged commit, collisions), the non-blocking regular-file open, the
 * strict integer parse, and statistics of grids holding +-3e38. */
#include "vx_test.h"

#include <limits.h>
#include <math.h>
#include <sys/stat.h>

#include "grid.h"
#include "outputs.h"
#include "vx_math.h"
#include "../src/formats/vx_fmt.h"

static void test_clamp_nan(void **state) {
    (void)state;
    assert_true(vx_clampf(NAN, 0.0f, 3.0f) == 0.0f);
    assert_true(vx_clampf(-NAN, 1.0f, 3.0f) == 1.0f);
    assert_true(vx_clampf(INFINITY, 0.0f, 3.0f) == 3.0f);
    assert_true(vx_clampf(-INFINITY, 0.0f, 3.0f) == 0.0f);
    assert_true(vx_clampf(2.0f, 0.0f, 3.0f) == 2.0f);
}

static int exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

static void test_staged_all_or_nothing(void **state) {
    (void)state;
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/staged_a.bin", vx_test_tmpdir());
    snprintf(b, sizeof b, "%s/staged_b.bin", vx_test_tmpdir());
    vx_outputs_stage_begin();
    assert_int_equal(vx_write_file_atomic(a, "x", 1), 0);
    assert_false(exists(a)); /* not renamed yet */
    assert_int_equal(vx_outputs_stage_end(0), -1);
    assert_false(exists(a));
    vx_outputs_stage_begin();
    assert_int_equal(vx_write_file_atomic(a, "x", 1), 0);
    assert_int_equal(vx_write_file_atomic(b, "y", 1), 0);
    assert_int_equal(vx_outputs_stage_end(1), 0);
    assert_true(exists(a) && exists(b));
}

static void test_prepare_collisions(void **state) {
    (void)state;
    char a[512], a2[512], in[512], sub[512];
    snprintf(a, sizeof a, "%s/o.png", vx_test_tmpdir());
    snprintf(a2, sizeof a2, "%s/new/../o.png", vx_test_tmpdir());
    snprintf(in, sizeof in, "%s/staged_a.bin", vx_test_tmpdir());
    snprintf(sub, sizeof sub, "%s/staged_b.bin/x.png", vx_test_tmpdir());
    const char *flags[2] = {"-o", "--depth"};
    const char *o1[2] = {a, a2};
    assert_int_equal(vx_outputs_prepare(o1, flags, 2, NULL, 0, 1), -1);
    assert_non_null(strstr(vx_errmsg(), "same file"));
    const char *o2[2] = {a, in}, *ins[1] = {in};
    assert_int_equal(vx_outputs_prepare(o2, flags, 2, ins, 1, 1), -1);
    assert_non_null(strstr(vx_errmsg(), "overwrite the input"));
    const char *o3[2] = {a, sub};
    assert_int_equal(vx_outputs_prepare(o3, flags, 2, NULL, 0, 1), -1);
    assert_non_null(strstr(vx_errmsg(), "not a directory"));
    const char *o4[2] = {a, NULL};
    assert_int_equal(vx_outputs_prepare(o4, flags, 2, ins, 1, 1), 0);
}

static void test_fopen_fifo(void **state) {
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/fifo", vx_test_tmpdir());
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_null(vx_fopen_read(p)); /* returns at once instead of waiting for a writer */
    assert_non_null(strstr(vx_errmsg(), "not a regular file"));
    unlink(p);
}

static void test_strict_int(void **state) {
    (void)state;
    long long v;
    assert_int_equal(vx_fmt_int(" 3 ", 1, 16, &v), 0);
    assert_int_equal(v, 3);
    assert_int_equal(vx_fmt_int("4294967299", 1, 16, &v), -1);
    assert_int_equal(vx_fmt_int("99999999999999999999", 0, LLONG_MAX, &v), -1);
    assert_int_equal(vx_fmt_int("3x", 1, 16, &v), -1);
    assert_int_equal(vx_fmt_int("", 1, 16, &v), -1);
}

static void test_extreme_values(void **state) {
    (void)state;
    vx_grid g;
    assert_int_equal(vx_grid_alloc(&g, 4, 4, 4, 1, "extreme"), 0);
    for (size_t i = 0; i < 64; i++) g.data[i] = i % 2 ? 3e38f : -3e38f;
    float q = vx_grid_quantile(&g, 0.5); /* the bin index must not overflow an int */
    assert_true(isfinite(q));
    float w2i[12];
    double lo[3] = {-3e38, -3e38, -3e38}, hi[3] = {3e38, 3e38, 3e38};
    vx_grid_set_bbox(&g, lo, hi, 1);
    assert_int_equal(vx_grid_world_to_index(&g, w2i), -1);
    assert_non_null(strstr(vx_errmsg(), "placement"));
    vx_grid_free(&g);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clamp_nan),
        cmocka_unit_test(test_staged_all_or_nothing),
        cmocka_unit_test(test_prepare_collisions),
        cmocka_unit_test(test_fopen_fifo),
        cmocka_unit_test(test_strict_int),
        cmocka_unit_test(test_extreme_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
