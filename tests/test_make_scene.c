/* test_make_scene.c - the procedural sample scenes: same bytes on every run and thread
 * count, shapes and decoders, value sanity per scene (orbs are separate blobs, the shell
 * is mostly empty, sh-glass changes colour with the view, the phantom's known values),
 * the SH projection helper, and `voxray make-scene` on disk and with bad arguments. */
#include "vx_test.h"

#include <math.h>
#include <omp.h>
#include <sys/stat.h>

#include "commands.h"
#include "decode.h"
#include "make_scene.h"
#include "npy.h"
#include "scene.h"
#include "vx_common.h"

static const char *names[] = {"orbs", "shell", "sh-glass", "cloud", "phantom"};
static const int channels[] = {4, 4, 28, 4, 1};

static void build(const char *name, int res, vx_scene *s) {
    memset(s, 0, sizeof *s);
    int rc = vx_make_scene(name, res, &s->grid, s);
    if (rc) fprintf(stderr, "%s\n", vx_errmsg());
    assert_int_equal(rc, 0);
}

static float at(const vx_grid *g, int x, int y, int z, int c) {
    return g->data[(((size_t)z * g->ny + y) * g->nx + x) * g->nc + c];
}

/* ---- determinism and shapes ------------------------------------------------------------ */

static void test_same_bytes_any_threads(void **state) {
    (void)state;
    int saved = omp_get_max_threads();
    for (int i = 0; i < 5; i++) {
        vx_scene a, b;
        omp_set_num_threads(1);
        build(names[i], 20, &a);
        omp_set_num_threads(saved > 1 ? saved : 2);
        build(names[i], 20, &b);
        size_t n = vx_grid_count(&a.grid);
        assert_int_equal(n, vx_grid_count(&b.grid));
        assert_memory_equal(a.grid.data, b.grid.data, n * sizeof(float));
        assert_memory_equal(&a.dec, &b.dec, sizeof a.dec);
        vx_grid_free(&a.grid);
        vx_grid_free(&b.grid);
    }
    omp_set_num_threads(saved);
}

static void test_shapes_decoders_finite(void **state) {
    (void)state;
    for (int i = 0; i < 5; i++) {
        vx_scene s;
        build(names[i], 17, &s);
        assert_int_equal(s.grid.nx, 17);
        assert_int_equal(s.grid.ny, 17);
        assert_int_equal(s.grid.nz, 17);
        assert_int_equal(s.grid.nc, channels[i]);
        assert_int_equal(vx_decoder_channels(&s.dec), channels[i]);
        assert_int_equal(vx_decoder_validate(&s.dec, s.grid.nc, names[i]), 0);
        assert_string_equal(s.name, names[i]);
        assert_true(s.has_camera);
        assert_true(s.step > 0.0f);
        assert_true(s.dec.density_scale > 0.0f);
        assert_int_equal(s.grid.align_corners, 1);
        /* lattice corners on [-1, 1]^3 */
        double lo[3], hi[3];
        vx_grid_world_bounds(&s.grid, lo, hi);
        for (int a = 0; a < 3; a++) {
            assert_true(fabs(lo[a] + 1.0) < 1e-9);
            assert_true(fabs(hi[a] - 1.0) < 1e-9);
        }
        size_t n = vx_grid_count(&s.grid), nonzero = 0;
        for (size_t k = 0; k < n; k++) assert_true(isfinite(s.grid.data[k]));
        for (size_t k = 0; k < n; k += s.grid.nc) {
            assert_true(s.grid.data[k] >= 0.0f); /* channel 0 (density / phantom value) */
            nonzero += s.grid.data[k] > 0.0f;
        }
        assert_true(nonzero > n / s.grid.nc / 50); /* not empty */
        vx_grid_free(&s.grid);
    }
}

static void test_bbox_resolution_independent(void **state) {
    (void)state;
    /* densities are world-unit quantities: the value at the box centre does not depend on
     * the resolution (odd resolutions put a lattice point there; the phantom's edges are
     * antialiased over two lattice spacings and the left ventricle passes 0.04 from the
     * centre, so it needs finer lattices to be off that edge) */
    for (int i = 0; i < 5; i++) {
        vx_scene a, b;
        int r = i == 4 ? 65 : 33, m = r / 2;
        build(names[i], r, &a);
        build(names[i], 2 * r - 1, &b);
        assert_float_equal(a.dec.density_scale, b.dec.density_scale, 0.0f);
        for (int c = 0; c < a.grid.nc; c++)
            assert_float_equal(at(&a.grid, m, m, m, c), at(&b.grid, 2 * m, 2 * m, 2 * m, c), 1e-5f);
        vx_grid_free(&a.grid);
        vx_grid_free(&b.grid);
    }
}

/* ---- per-scene sanity ------------------------------------------------------------------ */

/* Number of 6-connected components of voxels with density > 0. */
static int count_blobs(const vx_grid *g) {
    size_t n = (size_t)g->nx * g->ny * g->nz;
    int *label = calloc(n, sizeof *label);
    size_t *stack = malloc(n * sizeof *stack);
    assert_non_null(label);
    assert_non_null(stack);
    int blobs = 0;
    for (size_t seed = 0; seed < n; seed++) {
        if (label[seed] || g->data[seed * g->nc] <= 0.0f) continue;
        blobs++;
        size_t top = 0;
        stack[top++] = seed;
        label[seed] = blobs;
        while (top) {
            size_t v = stack[--top];
            int x = (int)(v % g->nx), y = (int)(v / g->nx % g->ny), z = (int)(v / ((size_t)g->nx * g->ny));
            const int d[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
            for (int k = 0; k < 6; k++) {
                int a = x + d[k][0], b = y + d[k][1], c = z + d[k][2];
                if (a < 0 || b < 0 || c < 0 || a >= g->nx || b >= g->ny || c >= g->nz) continue;
                size_t u = ((size_t)c * g->ny + b) * g->nx + a;
                if (label[u] || g->data[u * g->nc] <= 0.0f) continue;
                label[u] = blobs;
                stack[top++] = u;
            }
        }
    }
    free(label);
    free(stack);
    return blobs;
}

static void test_orbs_are_separate_blobs(void **state) {
    (void)state;
    vx_scene s;
    build("orbs", 64, &s);
    assert_int_equal(count_blobs(&s.grid), 7);
    /* colours in [0, 1] and distinct between blobs: the centre orb is gold (red > blue) */
    assert_true(at(&s.grid, 32, 32, 32, 0) > 0.9f);
    assert_true(at(&s.grid, 32, 32, 32, 1) > at(&s.grid, 32, 32, 32, 3) + 0.3f);
    for (size_t k = 0; k < vx_grid_count(&s.grid); k++) {
        if (k % 4 == 0) continue;
        assert_true(s.grid.data[k] >= 0.0f && s.grid.data[k] <= 1.0f);
    }
    vx_grid_free(&s.grid);
}

static void test_shell_mostly_empty(void **state) {
    (void)state;
    vx_scene s;
    build("shell", 64, &s);
    size_t n = (size_t)64 * 64 * 64, zero = 0;
    for (size_t k = 0; k < n; k++) zero += s.grid.data[k * 4] == 0.0f;
    assert_true(zero > n * 8 / 10);
    assert_true(zero < n * 99 / 100);
    /* hollow: the centre and the corners are empty, a point on the radius is not
     * everywhere empty (the windows cut some of it) */
    assert_float_equal(at(&s.grid, 32, 32, 32, 0), 0.0f, 0.0f);
    assert_float_equal(at(&s.grid, 0, 0, 0, 0), 0.0f, 0.0f);
    assert_true(count_blobs(&s.grid) >= 1);
    vx_grid_free(&s.grid);
}

static void test_sh_glass_view_dependent(void **state) {
    (void)state;
    vx_scene s;
    build("sh-glass", 48, &s);
    assert_int_equal(s.dec.type, VX_DEC_SH);
    assert_int_equal(s.dec.sh_degree, 2);
    assert_int_equal(s.dec.color_act, VX_CACT_PLENOXELS);
    /* every voxel with real density shows a different colour from opposite directions
     * along at least one axis */
    const vx_vec3 dirs[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    int dense = 0, differs = 0;
    for (size_t v = 0; v < (size_t)48 * 48 * 48; v++) {
        const float *raw = s.grid.data + v * 28;
        if (raw[0] < 0.5f) continue;
        dense++;
        float best = 0.0f;
        for (int k = 0; k < 3; k++) {
            float a[3], b[3];
            vx_decode(&s.dec, raw, dirs[k], a);
            vx_decode(&s.dec, raw, vx_scale(dirs[k], -1.0f), b);
            float d = fabsf(a[0] - b[0]) + fabsf(a[1] - b[1]) + fabsf(a[2] - b[2]);
            if (d > best) best = d;
        }
        differs += best > 0.1f;
    }
    assert_true(dense > 100);
    assert_int_equal(differs, dense);
    /* and the colour over all directions stays in a sensible range */
    for (int t = 0; t < 200; t++) {
        size_t v = (size_t)(vx_test_rand() * 48 * 48 * 48);
        vx_vec3 d = vx_norm(vx_v3((float)vx_test_uniform(-1, 1), (float)vx_test_uniform(-1, 1),
                                  (float)vx_test_uniform(-1, 1)));
        float rgb[3];
        vx_decode(&s.dec, s.grid.data + v * 28, d, rgb);
        for (int c = 0; c < 3; c++) assert_true(rgb[c] >= 0.0f && rgb[c] < 2.0f);
    }
    vx_grid_free(&s.grid);
}

static void test_cloud_partly_transparent(void **state) {
    (void)state;
    vx_scene s;
    build("cloud", 65, &s);
    /* optical depth along each central axis: some, but never opaque */
    double h = 2.0 / 64;
    for (int axis = 0; axis < 3; axis++) {
        double tau = 0.0;
        for (int i = 0; i < 65; i++) {
            int x = axis == 0 ? i : 32, y = axis == 1 ? i : 32, z = axis == 2 ? i : 32;
            tau += at(&s.grid, x, y, z, 0) * s.dec.density_scale * h;
        }
        assert_true(tau > 0.3);
        assert_true(tau < 8.0);
    }
    /* soft colours: nothing pure black or saturated to zero */
    for (size_t k = 0; k < vx_grid_count(&s.grid); k++)
        if (k % 4) assert_true(s.grid.data[k] > 0.2f && s.grid.data[k] <= 1.0f);
    vx_grid_free(&s.grid);
}

static void test_phantom_values(void **state) {
    (void)state;
    vx_scene s;
    build("phantom", 65, &s);
    assert_int_equal(s.dec.type, VX_DEC_SCALAR);
    assert_true(s.dec.tf_n >= 2);
    /* centre: skull ellipsoid 1 minus brain ellipsoid 0.8 = 0.2 */
    assert_float_equal(at(&s.grid, 32, 32, 32, 0), 0.2f, 1e-6f);
    /* corners and the middle of each face lie outside the head */
    assert_float_equal(at(&s.grid, 0, 0, 0, 0), 0.0f, 0.0f);
    assert_float_equal(at(&s.grid, 64, 32, 32, 0), 0.0f, 0.0f);
    assert_float_equal(at(&s.grid, 32, 64, 32, 0), 0.0f, 0.0f);
    assert_float_equal(at(&s.grid, 32, 32, 0, 0), 0.0f, 0.0f);
    /* deep inside the large ellipsoid at (0, .35, -.15): 0.2 + 0.1 */
    assert_float_equal(at(&s.grid, 32, 43, 27, 0), 0.3f, 1e-6f);
    /* inside the right ventricle (0.22, 0, 0): 1 - 0.8 - 0.2 = 0 */
    assert_float_equal(at(&s.grid, 39, 32, 32, 0), 0.0f, 1e-6f);
    /* the skull (value 1) is the maximum */
    float mn, mx;
    vx_grid_range(&s.grid, 0, &mn, &mx);
    assert_true(mn >= 0.0f);
    assert_true(mx <= 1.0f + 1e-6f && mx > 0.9f);
    /* the transfer function makes the brain and the small features visible */
    float o[4];
    vx_tf_eval(&s.dec, vx_window(&s.dec, 0.3f), o);
    assert_true(o[3] > 1.0f);
    vx_tf_eval(&s.dec, vx_window(&s.dec, 0.2f), o);
    assert_true(o[3] > 0.0f);
    vx_tf_eval(&s.dec, vx_window(&s.dec, 0.0f), o);
    assert_float_equal(o[3], 0.0f, 0.0f);
    vx_grid_free(&s.grid);
}

/* ---- the SH helper ---------------------------------------------------------------------- */

static void test_sh2_from_quadratic(void **state) {
    (void)state;
    for (int t = 0; t < 50; t++) {
        double c = vx_test_uniform(-1, 1), lin[3], q[9];
        for (int i = 0; i < 3; i++) lin[i] = vx_test_uniform(-1, 1);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j <= i; j++) q[3 * i + j] = q[3 * j + i] = vx_test_uniform(-1, 1);
        float k[9];
        vx_sh2_from_quadratic(c, lin, q, k);
        for (int r = 0; r < 20; r++) {
            vx_vec3 d = vx_norm(vx_v3((float)vx_test_uniform(-1, 1), (float)vx_test_uniform(-1, 1),
                                      (float)vx_test_uniform(-1, 1)));
            double dv[3] = {d.x, d.y, d.z}, f = c;
            for (int i = 0; i < 3; i++) {
                f += lin[i] * dv[i];
                for (int j = 0; j < 3; j++) f += q[3 * i + j] * dv[i] * dv[j];
            }
            float b[16], sum = 0.0f;
            assert_int_equal(vx_sh_basis(2, d, b), 9);
            for (int i = 0; i < 9; i++) sum += k[i] * b[i];
            assert_float_equal(sum, (float)f, 2e-5f);
        }
    }
}

/* ---- the command ------------------------------------------------------------------------ */

static int run(int argc, const char **argv) {
    return vx_cmd_make_scene(argc, (char **)argv);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_cmd_bad_args(void **state) {
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/bad", vx_test_tmpdir());
    const char *a1[] = {"make-scene"};
    assert_int_equal(run(1, a1), 2);
    const char *a2[] = {"make-scene", "teapot", "-o", dir};
    assert_int_equal(run(4, a2), 2);
    const char *a3[] = {"make-scene", "orbs"};
    assert_int_equal(run(2, a3), 2);
    const char *a4[] = {"make-scene", "orbs", "-o", dir, "--res", "7"};
    assert_int_equal(run(6, a4), 2);
    const char *a5[] = {"make-scene", "orbs", "-o", dir, "--res", "1025"};
    assert_int_equal(run(6, a5), 2);
    const char *a6[] = {"make-scene", "orbs", "-o", dir, "--res", "12x"};
    assert_int_equal(run(6, a6), 2);
    const char *a7[] = {"make-scene", "orbs", "-o", dir, "--bogus"};
    assert_int_equal(run(5, a7), 2);
    const char *a8[] = {"make-scene", "orbs", "shell", "-o", dir};
    assert_int_equal(run(5, a8), 2);
    const char *a9[] = {"make-scene", "orbs", "-o"};
    assert_int_equal(run(3, a9), 2);
    const char *a10[] = {"make-scene", "orbs", "-o", dir, "--res"};
    assert_int_equal(run(5, a10), 2);
    assert_false(exists(dir)); /* usage errors write nothing */
    const char *h[] = {"make-scene", "--help"};
    assert_int_equal(run(2, h), 0);

    /* in-memory API errors name the problem */
    vx_scene s;
    memset(&s, 0, sizeof s);
    assert_int_equal(vx_make_scene("teapot", 32, &s.grid, &s), -1);
    assert_non_null(strstr(vx_errmsg(), "teapot"));
    assert_non_null(strstr(vx_errmsg(), "sh-glass"));
    assert_int_equal(vx_make_scene("orbs", 4, &s.grid, &s), -1);
    assert_non_null(strstr(vx_errmsg(), "4"));
    assert_int_equal(vx_make_scene(NULL, 32, &s.grid, &s), -1);
}

static void test_cmd_unwritable_leaves_nothing(void **state) {
    (void)state;
    char file[512], dir[600];
    snprintf(file, sizeof file, "%s/plainfile", vx_test_tmpdir());
    vx_test_write_text(file, "x");
    snprintf(dir, sizeof dir, "%s/sub", file); /* a directory below a regular file */
    const char *a[] = {"make-scene", "orbs", "-o", dir, "--res", "8"};
    assert_int_equal(run(6, a), 1);
    remove(file);
}

static void read_all(const char *path, unsigned char **buf, size_t *len) {
    assert_int_equal(vx_read_file(path, (size_t)1 << 30, buf, len), 0);
}

static void test_cmd_writes_loadable_scene(void **state) {
    (void)state;
    char d1[512], d2[512], p1[4096], p2[4096];
    snprintf(d1, sizeof d1, "%s/a/phantom", vx_test_tmpdir());
    snprintf(d2, sizeof d2, "%s/b", vx_test_tmpdir());
    for (int i = 0; i < 5; i++) {
        const char *a1[] = {"make-scene", names[i], "-o", d1, "--res", "12"};
        const char *a2[] = {"make-scene", names[i], "--res", "12", "--output", d2};
        assert_int_equal(run(6, a1), 0);
        assert_int_equal(run(6, a2), 0);
        /* same bytes from two runs */
        const char *files[] = {"grid.npy", "scene.json"};
        for (int f = 0; f < 2; f++) {
            unsigned char *b1, *b2;
            size_t n1, n2;
            snprintf(p1, sizeof p1, "%s/%s", d1, files[f]);
            snprintf(p2, sizeof p2, "%s/%s", d2, files[f]);
            read_all(p1, &b1, &n1);
            read_all(p2, &b2, &n2);
            assert_int_equal(n1, n2);
            assert_memory_equal(b1, b2, n1);
            free(b1);
            free(b2);
        }
        /* the manifest loads back to the scene built in memory */
        vx_scene disk, mem;
        memset(&disk, 0, sizeof disk);
        int rc = vx_scene_load(d1, NULL, &disk);
        if (rc) fprintf(stderr, "%s\n", vx_errmsg());
        assert_int_equal(rc, 0);
        build(names[i], 12, &mem);
        assert_int_equal(disk.grid.nc, mem.grid.nc);
        assert_memory_equal(disk.grid.data, mem.grid.data, vx_grid_count(&mem.grid) * sizeof(float));
        assert_int_equal(disk.dec.type, mem.dec.type);
        assert_int_equal(disk.dec.density_act, mem.dec.density_act);
        assert_int_equal(disk.dec.color_act, mem.dec.color_act);
        assert_int_equal(disk.dec.sh_degree, mem.dec.sh_degree);
        assert_float_equal(disk.dec.density_scale, mem.dec.density_scale, 0.0f);
        assert_int_equal(disk.dec.tf_n, mem.dec.tf_n);
        for (int k = 0; k < mem.dec.tf_n; k++)
            for (int c = 0; c < 5; c++) assert_float_equal(disk.dec.tf[k][c], mem.dec.tf[k][c], 0.0f);
        for (int c = 0; c < 3; c++) {
            assert_float_equal(disk.background[c], mem.background[c], 0.0f);
            assert_float_equal(disk.eye[c], mem.eye[c], 1e-6);
        }
        assert_float_equal(disk.step, mem.step, 0.0f);
        assert_true(disk.has_camera);
        assert_float_equal(disk.fov_deg, mem.fov_deg, 1e-9);
        vx_scene_free(&disk);
        vx_grid_free(&mem.grid);
    }
    /* --half stores float16 that reads back close to the float32 grid */
    const char *ah[] = {"make-scene", "cloud", "-o", d2, "--res", "12", "--half"};
    assert_int_equal(run(7, ah), 0);
    vx_grid g;
    memset(&g, 0, sizeof g);
    snprintf(p2, sizeof p2, "%s/grid.npy", d2);
    assert_int_equal(vx_npy_load_grid(p2, &g), 0);
    assert_int_equal(g.src_dtype, VX_DT_F16);
    vx_scene mem;
    build("cloud", 12, &mem);
    for (size_t k = 0; k < vx_grid_count(&g); k++)
        assert_float_equal(g.data[k], mem.grid.data[k], 1e-3f * (1.0f + fabsf(mem.grid.data[k])));
    vx_grid_free(&g);
    vx_grid_free(&mem.grid);
    /* no temporary files left behind */
    snprintf(p1, sizeof p1, "rm -f %s/grid.npy %s/scene.json %s/grid.npy %s/scene.json && rmdir %s %s/a %s",
             d1, d1, d2, d2, d1, vx_test_tmpdir(), d2);
    assert_int_equal(system(p1), 0);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_any_threads),
        cmocka_unit_test(test_shapes_decoders_finite),
        cmocka_unit_test(test_bbox_resolution_independent),
        cmocka_unit_test(test_orbs_are_separate_blobs),
        cmocka_unit_test(test_shell_mostly_empty),
        cmocka_unit_test(test_sh_glass_view_dependent),
        cmocka_unit_test(test_cloud_partly_transparent),
        cmocka_unit_test(test_phantom_values),
        cmocka_unit_test(test_sh2_from_quadratic),
        cmocka_unit_test(test_cmd_bad_args),
        cmocka_unit_test(test_cmd_unwritable_leaves_nothing),
        cmocka_unit_test(test_cmd_writes_loadable_scene),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(vx_test_tmpdir());
    return rc;
}
