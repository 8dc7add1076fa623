/* test_scene.c - scene manifests: the documented example loads with every field
 * honoured, defaults by channel count, and every malformed or inconsistent manifest
 * fails with one line naming the file and the field. */
#include "vx_test.h"

#include <math.h>

#include "npy.h"
#include "scene.h"
#include "vx_common.h"

static char g_dir[256];

/* grids: 4 channels, 28 channels (sh 2), 1 channel, and one with a NaN */
static void write_grids(void) {
    snprintf(g_dir, sizeof g_dir, "%s", vx_test_tmpdir());
    int ncs[3] = {4, 28, 1};
    const char *names[3] = {"rgba.npy", "sh.npy", "scalar.npy"};
    for (int k = 0; k < 3; k++) {
        vx_grid g;
        assert_int_equal(vx_grid_alloc(&g, 6, 5, 4, ncs[k], "mem"), 0);
        for (size_t i = 0; i < vx_grid_count(&g); i++) g.data[i] = (float)vx_test_uniform(-1, 2);
        char p[512];
        snprintf(p, sizeof p, "%s/%s", g_dir, names[k]);
        assert_int_equal(vx_npy_write_grid(p, &g, 0), 0);
        if (k == 0) {
            g.data[17] = NAN;
            snprintf(p, sizeof p, "%s/nan.npy", g_dir);
            assert_int_equal(vx_npy_write_grid(p, &g, 0), 0);
        }
        vx_grid_free(&g);
    }
}

static int load_manifest(const char *name, const char *json, vx_scene *s, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s.json", g_dir, name);
    vx_test_write_text(path, json);
    vx_clear_error();
    return vx_scene_load(path, NULL, s);
}

static void test_example_manifest(void **state) {
    (void)state;
    char p[512];
    vx_scene s;
    int rc = load_manifest("example",
        "{\"grid\": \"rgba.npy\", \"bbox_min\": [-1, -2, -3], \"bbox_max\": [1, 2, 3], \"align_corners\": false,\n"
        " \"decoder\": {\"type\": \"rgba\", \"density_activation\": \"softplus\", \"color_activation\": \"sigmoid\",\n"
        "             \"density_scale\": 2.5},\n"
        " \"background\": [0.1, 0.2, 0.3], \"step\": 0.25, \"name\": \"demo\",\n"
        " \"camera\": {\"eye\": [2.5, 1.5, 2.5], \"target\": [0, 0, 0], \"up\": [0, 1, 0], \"fov\": 40}}", &s, p, sizeof p);
    if (rc) fail_msg("%s", vx_errmsg());
    assert_int_equal(s.dec.type, VX_DEC_RGBA);
    assert_int_equal(s.dec.density_act, VX_DACT_SOFTPLUS);
    assert_int_equal(s.dec.color_act, VX_CACT_SIGMOID);
    assert_float_equal(s.dec.density_scale, 2.5, 0);
    assert_float_equal(s.background[2], 0.3, 1e-7);
    assert_float_equal(s.step, 0.25, 0);
    assert_string_equal(s.name, "demo");
    assert_true(s.has_camera);
    assert_int_equal(s.grid.align_corners, 0);
    /* cell centred: x spacing 2/6, first sample at -1 + 1/6 */
    assert_float_equal(s.grid.i2w[0], 2.0 / 6, 1e-12);
    assert_float_equal(s.grid.i2w[3], -1 + 1.0 / 6, 1e-12);
    double lo[3], hi[3];
    vx_grid_world_bounds(&s.grid, lo, hi);
    assert_float_equal(lo[1], -2, 1e-9);
    assert_float_equal(hi[2], 3, 1e-9);
    vx_scene_free(&s);

    rc = load_manifest("sh", "{\"grid\": \"sh.npy\", \"decoder\": {\"type\": \"sh\", \"degree\": 2}}", &s, p, sizeof p);
    if (rc) fail_msg("%s", vx_errmsg());
    assert_int_equal(s.dec.sh_degree, 2);
    assert_int_equal(s.dec.color_act, VX_CACT_PLENOXELS);
    vx_scene_free(&s);

    rc = load_manifest("scalar",
        "{\"grid\": \"scalar.npy\", \"index_to_world\": [[0,0,2,1],[0,3,0,0],[1,0,0,0],[0,0,0,1]],\n"
        " \"decoder\": {\"type\": \"scalar\", \"window\": [0, 1], \"transfer_function\": [[0,0,0,0,0],[1,1,1,1,5]]}}",
        &s, p, sizeof p);
    if (rc) fail_msg("%s", vx_errmsg());
    assert_int_equal(s.dec.tf_n, 2);
    assert_float_equal(s.dec.window_hi, 1, 0);
    assert_float_equal(s.dec.density_scale, 1, 0);
    assert_float_equal(s.grid.i2w[2], 2, 0);
    vx_scene_free(&s);

    rc = load_manifest("preset", "{\"grid\": \"scalar.npy\", \"decoder\": {\"type\": \"scalar\", \"preset\": \"ct-bone\"}}",
                       &s, p, sizeof p);
    if (rc) fail_msg("%s", vx_errmsg());
    assert_true(s.dec.window_hi > s.dec.window_lo);
    vx_scene_free(&s);
}

static void test_defaults_by_channels(void **state) {
    (void)state;
    const char *names[3] = {"rgba.npy", "sh.npy", "scalar.npy"};
    int types[3] = {VX_DEC_RGBA, VX_DEC_SH, VX_DEC_SCALAR};
    for (int k = 0; k < 3; k++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", g_dir, names[k]);
        vx_scene s;
        if (vx_scene_load(p, NULL, &s)) fail_msg("%s", vx_errmsg());
        assert_int_equal(s.dec.type, types[k]);
        assert_false(s.has_camera);
        assert_float_equal(s.step, 0.5, 0);
        double eye[3], target[3], up[3], fov;
        vx_scene_default_camera(&s, eye, target, up, &fov);
        assert_true(sqrt(eye[0] * eye[0] + eye[1] * eye[1] + eye[2] * eye[2]) > 2.0); /* outside the box */
        vx_scene_free(&s);
    }
}

typedef struct { const char *name, *json, *expect; } bad_manifest;

static void test_bad_manifests(void **state) {
    (void)state;
    static const bad_manifest cases[] = {
        {"json", "{\"grid\": \"rgba.npy\",", "not valid JSON"},
        {"array", "[1, 2]", "must be a JSON object"},
        {"nogrid", "{\"step\": 0.5}", "'grid' is missing"},
        {"missing", "{\"grid\": \"nothere.npy\"}", "cannot be opened"},
        {"gridtype", "{\"grid\": 5}", "'grid' must be a non-empty string"},
        {"unknown", "{\"grid\": \"rgba.npy\", \"colour\": 1}", "unknown field 'colour'"},
        {"unknowndec", "{\"grid\": \"rgba.npy\", \"decoder\": {\"type\": \"rgba\", \"gamma\": 2}}", "unknown field 'decoder.gamma'"},
        {"dectype", "{\"grid\": \"rgba.npy\", \"decoder\": {\"type\": \"nerf\"}}", "'decoder.type' = 'nerf'"},
        {"notype", "{\"grid\": \"rgba.npy\", \"decoder\": {}}", "'decoder.type' is missing"},
        {"channels", "{\"grid\": \"sh.npy\", \"decoder\": {\"type\": \"rgba\"}}", "needs 4 channels but the grid has 28"},
        {"shdeg", "{\"grid\": \"sh.npy\", \"decoder\": {\"type\": \"sh\", \"degree\": 1}}", "needs 13 channels"},
        {"shdeg4", "{\"grid\": \"sh.npy\", \"decoder\": {\"type\": \"sh\", \"degree\": 4}}", "outside [0, 3]"},
        {"act", "{\"grid\": \"rgba.npy\", \"decoder\": {\"type\": \"rgba\", \"density_activation\": \"tanh\"}}", "density_activation' = 'tanh'"},
        {"cact", "{\"grid\": \"rgba.npy\", \"decoder\": {\"type\": \"rgba\", \"color_activation\": \"plenoxels\"}}", "not valid for the rgba decoder"},
        {"scale", "{\"grid\": \"rgba.npy\", \"decoder\": {\"type\": \"rgba\", \"density_scale\": -1}}", "density_scale' = -1"},
        {"bbox1", "{\"grid\": \"rgba.npy\", \"bbox_min\": [0, 0, 0]}", "must be given together"},
        {"bbox2", "{\"grid\": \"rgba.npy\", \"bbox_min\": [0, 0, 0], \"bbox_max\": [1, 0, 1]}", "bbox_max[1] must be greater"},
        {"bbox3", "{\"grid\": \"rgba.npy\", \"bbox_min\": [0, 0], \"bbox_max\": [1, 1]}", "array of 3 numbers"},
        {"both", "{\"grid\": \"rgba.npy\", \"bbox_min\": [0,0,0], \"bbox_max\": [1,1,1], \"index_to_world\": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}", "not both"},
        {"singular", "{\"grid\": \"rgba.npy\", \"index_to_world\": [[1,0,0,0],[2,0,0,0],[0,0,1,0],[0,0,0,1]]}", "singular"},
        {"lastrow", "{\"grid\": \"rgba.npy\", \"index_to_world\": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,1,1]]}", "last row"},
        {"bg", "{\"grid\": \"rgba.npy\", \"background\": [0, 2, 0]}", "'background[1]' = 2"},
        {"bgnum", "{\"grid\": \"rgba.npy\", \"background\": [0, \"a\", 0]}", "'background[1]' must be a number"},
        {"step", "{\"grid\": \"rgba.npy\", \"step\": 0}", "'step' = 0"},
        {"inf", "{\"grid\": \"rgba.npy\", \"step\": 1e999}", "'step' is not finite"},
        {"cam", "{\"grid\": \"rgba.npy\", \"camera\": {\"target\": [0,0,0]}}", "'camera.eye' is missing"},
        {"camfov", "{\"grid\": \"rgba.npy\", \"camera\": {\"eye\": [3,0,0], \"fov\": 200}}", "'camera.fov' = 200"},
        {"camkey", "{\"grid\": \"rgba.npy\", \"camera\": {\"eye\": [3,0,0], \"zoom\": 2}}", "unknown field 'camera.zoom'"},
        {"tfboth", "{\"grid\": \"scalar.npy\", \"decoder\": {\"type\": \"scalar\", \"preset\": \"grey\", \"transfer_function\": [[0,0,0,0,0],[1,1,1,1,1]]}}", "not both"},
        {"tfshort", "{\"grid\": \"scalar.npy\", \"decoder\": {\"type\": \"scalar\", \"transfer_function\": [[0,0,0,0,0]]}}", "2..32 control points"},
        {"tforder", "{\"grid\": \"scalar.npy\", \"decoder\": {\"type\": \"scalar\", \"transfer_function\": [[0.5,0,0,0,0],[0.2,1,1,1,1]]}}", "sorted"},
        {"tfpoint", "{\"grid\": \"scalar.npy\", \"decoder\": {\"type\": \"scalar\", \"transfer_function\": [[0,0,0,0],[1,1,1,1,1]]}}", "transfer_function[0]' must be an array of 5"},
        {"preset", "{\"grid\": \"scalar.npy\", \"decoder\": {\"type\": \"scalar\", \"preset\": \"rainbow\"}}", "preset 'rainbow' is unknown"},
        {"window", "{\"grid\": \"scalar.npy\", \"decoder\": {\"type\": \"scalar\", \"window\": [2, 1]}}", "lo < hi"},
        {"windowrgba", "{\"grid\": \"rgba.npy\", \"decoder\": {\"type\": \"rgba\", \"window\": [0, 1]}}", "only apply to the scalar decoder"},
        {"nan", "{\"grid\": \"nan.npy\"}", "must be finite"},
        {"align", "{\"grid\": \"rgba.npy\", \"align_corners\": 1}", "'align_corners' must be true or false"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char p[512];
        vx_scene s;
        if (load_manifest(cases[i].name, cases[i].json, &s, p, sizeof p) == 0) fail_msg("case %s loaded", cases[i].name);
        const char *m = vx_errmsg();
        if (!strstr(m, cases[i].expect)) fail_msg("case %s: '%s' lacks '%s'", cases[i].name, m, cases[i].expect);
        if (!strstr(m, cases[i].name) && !strstr(m, g_dir)) fail_msg("case %s: '%s' names no file", cases[i].name, m);
        if (strchr(m, '\n')) fail_msg("case %s: message has a newline", cases[i].name);
    }
}

int main(void) {
    vx_test_seed();
    write_grids();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_manifest),
        cmocka_unit_test(test_defaults_by_channels),
        cmocka_unit_test(test_bad_manifests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
