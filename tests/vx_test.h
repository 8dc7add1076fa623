/* vx_test.h - helpers shared by the cmocka tests: cmocka includes, a seeded random
 * generator (fresh seed per run, printed so a failure can be replayed with VX_SEED),
 * temp directories and small file writers. */
#ifndef VX_TEST_H
#define VX_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "vx_common.h"

static uint64_t vx_test_rng_state;

static inline void vx_test_seed(void) {
    const char *s = getenv("VX_SEED");
    vx_test_rng_state = s ? strtoull(s, NULL, 10) : ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20));
    fprintf(stderr, "random seed %llu (set VX_SEED to replay)\n", (unsigned long long)vx_test_rng_state);
}

/* uniform in [0, 1) (splitmix64) */
static inline double vx_test_rand(void) { return vx_rand01(&vx_test_rng_state); }

static inline double vx_test_uniform(double lo, double hi) { return lo + (hi - lo) * vx_test_rand(); }

/* a fresh temporary directory for this test binary */
static inline const char *vx_test_tmpdir(void) {
    static char dir[256];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/voxray-test-XXXXXX");
        if (!mkdtemp(dir)) { perror("mkdtemp"); exit(1); }
    }
    return dir;
}

/* Tests of real files read them from ../shared/data (the shared, read-only test data).
 * When a file is absent the running test stops with a visible "skipped: ..." line and
 * counts as skipped, not failed. */
static inline void vx_test_need_file(const char *path) {
    if (access(path, R_OK) == 0) return;
    print_message("skipped: %s not found (the shared test data ../shared/data is absent)\n", path);
    skip();
}

static inline void vx_test_write(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static inline void vx_test_write_text(const char *path, const char *text) {
    vx_test_write(path, text, strlen(text));
}

#endif
