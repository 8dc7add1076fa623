/* test_sparse.c - the sparse grid's data layer: dense -> sparse -> dense is exact, the
 * brick lookup equals the dense value at every lattice point, the drop rule keeps every
 * brick next to density, range/quantile agree on both storages, the .npz round trip
 * (float32 exact, float16 within half precision), every malformed file refused with one
 * line naming the file and the member, make-scene --sparse equals from_dense of the
 * dense scene, and the CUDA renderer's apron blocks (sparse_apron.h) hold every voxel the
 * bricks do and give the same trilinear values. */
#include "vx_test.h"

#include <math.h>
#include <zip.h>

#include "make_scene.h"
#include "npy.h"
#include "march.h"
#include "scene.h"
#include "sparse_apron.h"
#include "sparse_grid.h"
#include "vx_common.h"

/* ---- helpers ---------------------------------------------------------------------------------- */

/* A random grid with empty regions: blobs of density in a zero field, channels 1.. random
 * where density is alive and 0 elsewhere; a few isolated voxels. */
static void random_grid(vx_grid *g, int nx, int ny, int nz, int nc) {
    assert_int_equal(vx_grid_alloc(g, nx, ny, nz, nc, "random"), 0);
    memset(g->data, 0, vx_grid_count(g) * sizeof(float));
    double cx = vx_test_uniform(0, nx), cy = vx_test_uniform(0, ny), cz = vx_test_uniform(0, nz);
    double r = vx_test_uniform(2, 6);
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++) {
                double d = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz));
                float *v = g->data + (((size_t)z * ny + y) * nx + x) * nc;
                if (d < r || vx_test_rand() < 0.002) {
                    v[0] = (float)vx_test_uniform(0.01, 5);
                    for (int c = 1; c < nc; c++) v[c] = (float)vx_test_uniform(-2, 2);
                } else if (vx_test_rand() < 0.01) {
                    v[0] = (float)vx_test_uniform(-3, 0); /* negative density: dead under relu */
                }
            }
}

static const vx_decoder *rgba_dec(void) {
    static vx_decoder d;
    memset(&d, 0, sizeof d);
    d.type = VX_DEC_RGBA;
    d.density_scale = 1.0f;
    return &d;
}

static void assert_same_grid(const vx_grid *a, const vx_grid *b) {
    assert_int_equal(a->nx, b->nx); assert_int_equal(a->ny, b->ny);
    assert_int_equal(a->nz, b->nz); assert_int_equal(a->nc, b->nc);
    for (int z = 0; z < a->nz; z++)
        for (int y = 0; y < a->ny; y++)
            for (int x = 0; x < a->nx; x++)
                assert_memory_equal(vx_grid_voxel(a, x, y, z), vx_grid_voxel(b, x, y, z), sizeof(float) * (size_t)a->nc);
}

static void tmp_path(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", vx_test_tmpdir(), name); }

/* ---- dense <-> sparse ------------------------------------------------------------------------- */

static void test_roundtrip_exact(void **state) {
    (void)state;
    static const int ncs[] = {1, 4, 28, 49};
    static const int sizes[][3] = {{8, 8, 8}, {13, 9, 21}, {1, 17, 5}, {30, 24, 17}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) {
            vx_grid d, s, back;
            random_grid(&d, sizes[k][0], sizes[k][1], sizes[k][2], ncs[i]);
            assert_int_equal(vx_sparse_from_dense(&d, NULL, 0.0f, &s), 0);
            assert_null(s.data);
            assert_non_null(s.sparse);
            assert_same_grid(&d, &s); /* vx_sparse_voxel at every lattice point */
            assert_int_equal(vx_sparse_to_dense(&s, &back), 0);
            assert_memory_equal(d.data, back.data, vx_grid_count(&d) * sizeof(float));
            /* only-background bricks are gone, every other one is there */
            const vx_sparse *sp = s.sparse;
            for (int bz = 0; bz < sp->bn[2]; bz++)
                for (int by = 0; by < sp->bn[1]; by++)
                    for (int bx = 0; bx < sp->bn[0]; bx++) {
                        int nonzero = 0;
                        for (int z = bz * 8; z < bz * 8 + 8 && z < d.nz; z++)
                            for (int y = by * 8; y < by * 8 + 8 && y < d.ny; y++)
                                for (int x = bx * 8; x < bx * 8 + 8 && x < d.nx; x++)
                                    for (int c = 0; c < d.nc; c++)
                                        nonzero |= d.data[(((size_t)z * d.ny + y) * d.nx + x) * d.nc + c] != sp->background[c];
                        assert_int_equal(nonzero, sp->table[((size_t)bz * sp->bn[1] + by) * sp->bn[0] + bx] >= 0);
                    }
            /* statistics agree on both storages */
            for (int c = 0; c < d.nc; c += 7) {
                float a0, a1, b0, b1;
                vx_grid_range(&d, c, &a0, &a1);
                vx_grid_range(&s, c, &b0, &b1);
                assert_true(a0 == b0 && a1 == b1);
            }
            assert_true(vx_grid_quantile(&d, 0.5) == vx_grid_quantile(&s, 0.5));
            assert_true(vx_grid_quantile(&d, 0.99) == vx_grid_quantile(&s, 0.99));
            vx_grid_free(&d); vx_grid_free(&s); vx_grid_free(&back);
            assert_null(s.sparse);
        }
}

/* Thinning a sparse grid again equals thinning its dense form. */
static void test_rethin(void **state) {
    (void)state;
    static const int ncs[] = {1, 4, 28};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            vx_grid d, s, dd, want, got;
            random_grid(&d, 17 + 5 * k, 24, 9 + 7 * k, ncs[i]);
            assert_int_equal(vx_sparse_from_dense(&d, NULL, 0.0f, &s), 0);
            s.sparse->background[0] = k == 2 ? 0.5f : 0.0f; /* a live background keeps more */
            assert_int_equal(vx_sparse_to_dense(&s, &dd), 0);
            vx_decoder dec = *rgba_dec();
            if (ncs[i] == 1) { dec.type = VX_DEC_SCALAR; dec.tf_n = 2; dec.window_lo = 0; dec.window_hi = 5;
                               float tf[2][5] = {{0, 0, 0, 0, 0}, {1, 1, 1, 1, 3}}; memcpy(dec.tf, tf, sizeof tf); }
            if (ncs[i] == 28) { dec.type = VX_DEC_SH; dec.sh_degree = 2; }
            float thr = k == 1 ? 1.0f : 0.0f;
            assert_int_equal(vx_sparse_from_dense_bg(&dd, &dec, thr, s.sparse->background, &want), 0);
            assert_int_equal(vx_sparse_rethin(&s, &dec, thr, &got), 0);
            assert_int_equal(want.sparse->nbricks, got.sparse->nbricks);
            assert_memory_equal(want.sparse->table, got.sparse->table,
                                sizeof(int32_t) * (size_t)want.sparse->bn[0] * want.sparse->bn[1] * want.sparse->bn[2]);
            if (want.sparse->nbricks)
                assert_memory_equal(want.sparse->pool, got.sparse->pool,
                                    want.sparse->nbricks * VX_BRICK_VOXELS * (size_t)ncs[i] * sizeof(float));
            assert_true(got.sparse->nbricks <= s.sparse->nbricks);
            if (k == 1 && s.sparse->nbricks >= 2) { /* a pool out of table order: swap two bricks */
                vx_sparse *q = s.sparse;
                size_t bs = VX_BRICK_VOXELS * (size_t)q->nc, t0 = 0, t1;
                while (q->table[t0] != 0) t0++;
                for (t1 = 0; q->table[t1] != 1; t1++) {}
                float *tmp = malloc(bs * sizeof(float));
                memcpy(tmp, q->pool, bs * sizeof(float));
                memcpy(q->pool, q->pool + bs, bs * sizeof(float));
                memcpy(q->pool + bs, tmp, bs * sizeof(float));
                free(tmp);
                q->table[t0] = 1;
                q->table[t1] = 0;
            }
            assert_int_equal(vx_sparse_rethin_inplace(&s, &dec, thr), 0); /* in place: the same */
            assert_int_equal(s.sparse->nbricks, got.sparse->nbricks);
            assert_memory_equal(s.sparse->table, got.sparse->table,
                                sizeof(int32_t) * (size_t)want.sparse->bn[0] * want.sparse->bn[1] * want.sparse->bn[2]);
            if (got.sparse->nbricks)
                assert_memory_equal(s.sparse->pool, got.sparse->pool,
                                    got.sparse->nbricks * VX_BRICK_VOXELS * (size_t)ncs[i] * sizeof(float));
            vx_grid_free(&d); vx_grid_free(&s); vx_grid_free(&dd); vx_grid_free(&want); vx_grid_free(&got);
        }
}

/* Dilated per-brick ranges equal a direct scan of the dense grid. */
static void test_brick_ranges(void **state) {
    (void)state;
    for (int k = 0; k < 3; k++) {
        vx_grid d, s;
        random_grid(&d, 21 + k, 17, 30 - 3 * k, 4);
        assert_int_equal(vx_sparse_from_dense(&d, NULL, 0.0f, &s), 0);
        const vx_sparse *sp = s.sparse;
        size_t n = (size_t)sp->bn[0] * sp->bn[1] * sp->bn[2];
        float *lo = malloc(n * sizeof(float)), *hi = malloc(n * sizeof(float));
        vx_sparse_brick_ranges(&s, lo, hi);
        for (size_t t = 0; t < n; t++) {
            int bx = (int)(t % sp->bn[0]), by = (int)(t / sp->bn[0] % sp->bn[1]), bz = (int)(t / sp->bn[0] / sp->bn[1]);
            float l = INFINITY, h = -INFINITY;
            for (int z = bz * 8 - 1; z <= bz * 8 + 8; z++)
                for (int y = by * 8 - 1; y <= by * 8 + 8; y++)
                    for (int x = bx * 8 - 1; x <= bx * 8 + 8; x++) {
                        if (x < 0 || y < 0 || z < 0 || x >= d.nx || y >= d.ny || z >= d.nz) continue;
                        float v = d.data[(((size_t)z * d.ny + y) * d.nx + x) * 4];
                        l = fminf(l, v);
                        h = fmaxf(h, v);
                    }
            assert_true(lo[t] == l && hi[t] == h);
        }
        free(lo); free(hi);
        vx_grid_free(&d); vx_grid_free(&s);
    }
}

static void test_scalar_background(void **state) {
    (void)state;
    vx_grid d, s, back;
    assert_int_equal(vx_grid_alloc(&d, 20, 19, 18, 1, "ct"), 0);
    for (size_t i = 0; i < vx_grid_count(&d); i++) d.data[i] = -1000.0f; /* air */
    d.data[5 * 20 * 19 + 7 * 20 + 9] = 400.0f;                             /* bone */
    assert_int_equal(vx_sparse_from_dense(&d, NULL, 0.0f, &s), 0);
    assert_true(s.sparse->background[0] == -1000.0f); /* the minimum */
    assert_int_equal(s.sparse->nbricks, 1);
    assert_int_equal(vx_sparse_to_dense(&s, &back), 0);
    assert_memory_equal(d.data, back.data, vx_grid_count(&d) * sizeof(float));
    vx_sparse_stats st;
    vx_sparse_stats_of(&s, &st);
    assert_int_equal(st.table_entries, 27);
    assert_int_equal(st.bricks, 1);
    assert_true(st.bytes_sparse == 512 * 4 + 27 * 4 && st.bytes_dense == 20 * 19 * 18 * 4);
    vx_grid_free(&d); vx_grid_free(&s); vx_grid_free(&back);
}

/* The decoder rule: a brick goes only when no cell touching it can have density. */
static void test_drop_rule_keeps_neighbours(void **state) {
    (void)state;
    for (int trial = 0; trial < 20; trial++) {
        vx_grid d, s;
        assert_int_equal(vx_grid_alloc(&d, 27, 26, 25, 4, "rule"), 0);
        for (size_t i = 0; i < vx_grid_count(&d); i++) d.data[i] = (i % 4) ? 0.5f : -1.0f; /* dead, coloured */
        /* one live voxel, often on a brick face */
        int x = (int)vx_test_uniform(0, 27), y = (int)vx_test_uniform(0, 26), z = (int)vx_test_uniform(0, 25);
        if (trial % 2) x = (x / 8) * 8 + (trial % 4 == 1 ? 0 : 7 < 26 - (x / 8) * 8 ? 7 : 0);
        if (x > 26) x = 26;
        d.data[(((size_t)z * 26 + y) * 27 + x) * 4] = 2.0f;
        assert_int_equal(vx_sparse_from_dense(&d, rgba_dec(), 0.0f, &s), 0);
        const vx_sparse *sp = s.sparse;
        /* every brick that holds a lattice point within one voxel of (x, y, z) is kept */
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int px = x + dx, py = y + dy, pz = z + dz;
                    if (px < 0 || py < 0 || pz < 0 || px >= 27 || py >= 26 || pz >= 25) continue;
                    assert_true(sp->table[((size_t)(pz / 8) * sp->bn[1] + py / 8) * sp->bn[0] + px / 8] >= 0);
                }
        /* and nothing farther: bricks with no lattice point within one voxel go */
        for (int bz = 0; bz < sp->bn[2]; bz++)
            for (int by = 0; by < sp->bn[1]; by++)
                for (int bx = 0; bx < sp->bn[0]; bx++) {
                    int near = x >= bx * 8 - 1 && x <= bx * 8 + 8 && y >= by * 8 - 1 && y <= by * 8 + 8 &&
                               z >= bz * 8 - 1 && z <= bz * 8 + 8;
                    assert_int_equal(near, sp->table[((size_t)bz * sp->bn[1] + by) * sp->bn[0] + bx] >= 0);
                }
        /* kept bricks hold the dense values; dropped ones read as background 0 */
        for (int k = 0; k < 27 * 26 * 25; k++) {
            int qx = k % 27, qy = k / 27 % 26, qz = k / 27 / 26;
            const float *v = vx_grid_voxel(&s, qx, qy, qz), *w = vx_grid_voxel(&d, qx, qy, qz);
            int kept = sp->table[((size_t)(qz / 8) * sp->bn[1] + qy / 8) * sp->bn[0] + qx / 8] >= 0;
            if (kept) assert_memory_equal(v, w, 16);
            else assert_true(v[0] == 0.0f && v[1] == 0.0f);
        }
        vx_grid_free(&d); vx_grid_free(&s);
    }
    /* threshold: sigma <= T drops */
    vx_grid d, s;
    assert_int_equal(vx_grid_alloc(&d, 16, 16, 16, 4, "thr"), 0);
    memset(d.data, 0, vx_grid_count(&d) * sizeof(float));
    d.data[0] = 0.25f;
    assert_int_equal(vx_sparse_from_dense(&d, rgba_dec(), 0.3f, &s), 0);
    assert_int_equal(s.sparse->nbricks, 0);
    vx_grid_free(&s);
    assert_int_equal(vx_sparse_from_dense(&d, rgba_dec(), 0.2f, &s), 0);
    assert_int_equal(s.sparse->nbricks, 1);
    vx_grid_free(&s); vx_grid_free(&d);
    /* the rule itself */
    assert_int_equal(vx_sparse_keep(NULL, 0, 0, 1, 0, 0), 0);
    assert_int_equal(vx_sparse_keep(NULL, 0, 0, 0, 0, 0), 1);
    assert_int_equal(vx_sparse_keep(rgba_dec(), 0, 0, 0, -5, 0), 0);
    assert_int_equal(vx_sparse_keep(rgba_dec(), 0, 1, 0, -5, 0), 1); /* a live background keeps */
}

static void test_alloc_checks(void **state) {
    (void)state;
    vx_sparse s;
    assert_int_equal(vx_sparse_alloc(&s, 0, 8, 8, 4, 0, "a"), -1);
    assert_non_null(strstr(vx_errmsg(), "outside 1..65536"));
    assert_int_equal(vx_sparse_alloc(&s, 8, 8, 8, 65, 0, "a"), -1);
    assert_non_null(strstr(vx_errmsg(), "channels"));
    assert_int_equal(vx_sparse_alloc(&s, 8, 8, 8, 4, 2, "a"), -1);
    assert_non_null(strstr(vx_errmsg(), "table has only 1"));
    assert_int_equal(vx_sparse_alloc(&s, 65536, 65536, 65536, 64, 0, "a"), -1); /* a 2 TiB table */
    assert_non_null(strstr(vx_errmsg(), "brick table"));
    assert_int_equal(vx_sparse_alloc(&s, 16384, 16384, 16384, 64, (size_t)1 << 26, "a"), -1);
    assert_non_null(strstr(vx_errmsg(), "GiB allowed for a brick pool"));
    assert_int_equal(vx_sparse_alloc(&s, 9, 8, 8, 4, 2, "a"), 0);
    assert_true(s.bn[0] == 2 && s.bn[1] == 1 && s.bn[2] == 1 && s.table[0] == -1 && s.table[1] == -1);
    vx_sparse_free(&s);
}

/* ---- files ------------------------------------------------------------------------------------- */

static void test_file_roundtrip(void **state) {
    (void)state;
    static const int ncs[] = {1, 4, 28};
    for (int i = 0; i < 3; i++)
        for (int half = 0; half <= 1; half++)
            for (int comp = 0; comp <= 1; comp++) {
                vx_grid d, s, r;
                random_grid(&d, 19, 10, 12, ncs[i]);
                assert_int_equal(vx_sparse_from_dense(&d, NULL, 0.0f, &s), 0);
                char p[512];
                tmp_path(p, sizeof p, "rt.sparse.npz");
                assert_int_equal(vx_sparse_write(p, &s, half, comp ? VX_SPARSE_DEFLATE : VX_SPARSE_STORE), 0);
                assert_int_equal(vx_sparse_is_file(p), 1);
                assert_int_equal(vx_sparse_load(p, &r), 0);
                assert_non_null(r.sparse);
                assert_int_equal(r.src_dtype, half ? VX_DT_F16 : VX_DT_F32);
                assert_int_equal(r.sparse->nbricks, s.sparse->nbricks);
                assert_memory_equal(r.sparse->table, s.sparse->table,
                                    sizeof(int32_t) * (size_t)s.sparse->bn[0] * s.sparse->bn[1] * s.sparse->bn[2]);
                for (int z = 0; z < d.nz; z++)
                    for (int y = 0; y < d.ny; y++)
                        for (int x = 0; x < d.nx; x++)
                            for (int c = 0; c < d.nc; c++) {
                                float a = vx_grid_voxel(&s, x, y, z)[c], b = vx_grid_voxel(&r, x, y, z)[c];
                                if (!half) assert_true(a == b);
                                else {
                                    assert_true(b == vx_half_to_float(vx_float_to_half(a)));
                                    assert_true(fabsf(a - b) <= fabsf(a) * (1.0f / 1024) + 6e-8f);
                                }
                            }
                vx_grid_free(&d); vx_grid_free(&s); vx_grid_free(&r);
            }
}

/* A scene loads from the .npz alone, from a manifest naming it, and via vx_scene_load. */
static void test_scene_load(void **state) {
    (void)state;
    vx_grid d, s;
    random_grid(&d, 16, 16, 16, 4);
    assert_int_equal(vx_sparse_from_dense(&d, NULL, 0.0f, &s), 0);
    char p[512], j[512];
    tmp_path(p, sizeof p, "grid.sparse.npz");
    tmp_path(j, sizeof j, "scene.json");
    assert_int_equal(vx_sparse_write(p, &s, 0, VX_SPARSE_DEFLATE), 0);
    vx_test_write_text(j, "{\"grid\": \"grid.sparse.npz\", \"bbox_min\": [0, 0, 0], \"bbox_max\": [2, 2, 2]}");
    vx_scene sc;
    assert_int_equal(vx_scene_load(p, NULL, &sc), 0);
    assert_non_null(sc.grid.sparse);
    assert_int_equal(sc.dec.type, VX_DEC_RGBA);
    assert_int_equal(sc.z_up, 0);
    vx_scene_free(&sc);
    assert_int_equal(vx_scene_load(j, NULL, &sc), 0);
    assert_non_null(sc.grid.sparse);
    assert_true(sc.grid.i2w[0] == 2.0 / 15);
    assert_same_grid(&d, &sc.grid);
    vx_scene_free(&sc);
    assert_int_equal(vx_scene_load(vx_test_tmpdir(), NULL, &sc), 0);
    vx_scene_free(&sc);
    vx_grid_free(&d); vx_grid_free(&s);
}

/* ---- bad files -------------------------------------------------------------------------------- */

/* Write a zip of .npy members: names[i] with header dict dicts[i] and payload. */
typedef struct { const char *name, *dict; const void *data; size_t len; } member;

static void npy_bytes(const member *m, unsigned char **out, size_t *len) {
    size_t dl = strlen(m->dict), total = 10 + dl + 1, pad = (64 - total % 64) % 64, hl = dl + pad + 1;
    *len = 10 + hl + m->len;
    *out = malloc(*len);
    memcpy(*out, "\x93NUMPY\x01\x00", 8);
    (*out)[8] = (unsigned char)hl;
    (*out)[9] = (unsigned char)(hl >> 8);
    memcpy(*out + 10, m->dict, dl);
    memset(*out + 10 + dl, ' ', pad);
    (*out)[10 + hl - 1] = '\n';
    if (m->len) memcpy(*out + 10 + hl, m->data, m->len);
}

static void write_zip(const char *path, const member *ms, int n) {
    remove(path);
    int err;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    assert_non_null(z);
    for (int i = 0; i < n; i++) {
        unsigned char *b;
        size_t len;
        npy_bytes(&ms[i], &b, &len);
        zip_source_t *src = zip_source_buffer(z, b, len, 1);
        assert_true(zip_file_add(z, ms[i].name, src, 0) >= 0);
    }
    assert_int_equal(zip_close(z), 0);
}

/* A valid 10x9x8, nc 2 grid with 2 bricks, which each case then breaks in one way. */
static int64_t g_shape[4] = {8, 9, 10, 2}, g_one = 1, g_eight = 8;
static float g_bg[2] = {0, 0};
static int32_t g_table[4] = {-1, 0, 1, -1};
static float g_pool[2 * 512 * 2];

static int bad_case(const char *file, const member *ms, int n, const char *want) {
    char p[512];
    tmp_path(p, sizeof p, file);
    write_zip(p, ms, n);
    vx_grid g;
    int rc = vx_sparse_load(p, &g);
    if (rc == 0) { vx_grid_free(&g); fprintf(stderr, "%s: loaded\n", file); return 0; }
    const char *m = vx_errmsg();
    if (!strstr(m, p) || !strstr(m, want) || strchr(m, '\n')) {
        fprintf(stderr, "%s: message '%s' lacks '%s'\n", file, m, want);
        return 0;
    }
    return 1;
}

#define BASE_MEMBERS                                                                                      \
    {"format.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_one, 8},                    \
    {"shape.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", g_shape, 32},                 \
    {"brick.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_eight, 8},                   \
    {"background.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", g_bg, 8}

static void test_bad_files(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof g_pool / sizeof *g_pool; i++) g_pool[i] = (float)(i % 7);
    const char *T = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 2), }";
    const char *P = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 8, 8, 8, 2), }";
    {   /* the valid file loads */
        member ms[] = {BASE_MEMBERS, {"table.npy", T, g_table, 16}, {"pool.npy", P, g_pool, sizeof g_pool}};
        char p[512];
        tmp_path(p, sizeof p, "good.npz");
        write_zip(p, ms, 6);
        vx_grid g;
        assert_int_equal(vx_sparse_load(p, &g), 0);
        assert_true(vx_grid_voxel(&g, 8, 0, 0)[1] == g_pool[1]);
        assert_true(vx_grid_voxel(&g, 0, 0, 0)[1] == 0.0f);
        vx_grid_free(&g);
    }
    int32_t t_out[4] = {-1, 0, 2, -1}, t_dup[4] = {-1, 0, 0, -1}, t_neg[4] = {-2, 0, 1, -1}, t_unused[4] = {-1, 0, -1, -1};
    float nanpool[sizeof g_pool / sizeof *g_pool];
    memcpy(nanpool, g_pool, sizeof nanpool);
    nanpool[700] = NAN;
    int64_t shape_bad[4] = {8, 9, 10, 65};
    int64_t ver2 = 2, brick4 = 4;
    struct { const char *file, *want; member ms[6]; int n; } cases[] = {
        {"missing_pool.npz", "pool.npy: missing", {BASE_MEMBERS, {"table.npy", T, g_table, 16}}, 5},
        {"out.npz", "entry 2 at brick (0, 1, 0) is outside -1..1",
         {BASE_MEMBERS, {"table.npy", T, t_out, 16}, {"pool.npy", P, g_pool, sizeof g_pool}}, 6},
        {"neg.npz", "entry -2", {BASE_MEMBERS, {"table.npy", T, t_neg, 16}, {"pool.npy", P, g_pool, sizeof g_pool}}, 6},
        {"dup.npz", "pool brick 0 is used twice",
         {BASE_MEMBERS, {"table.npy", T, t_dup, 16}, {"pool.npy", P, g_pool, sizeof g_pool}}, 6},
        {"unused.npz", "1 of the 2 pool bricks are not used",
         {BASE_MEMBERS, {"table.npy", T, t_unused, 16}, {"pool.npy", P, g_pool, sizeof g_pool}}, 6},
        {"short_pool.npz", "pool.npy: shape needs",
         {BASE_MEMBERS, {"table.npy", T, g_table, 16}, {"pool.npy", P, g_pool, sizeof g_pool - 4}}, 6},
        {"short_table.npz", "table.npy: shape needs",
         {BASE_MEMBERS, {"table.npy", T, g_table, 12}, {"pool.npy", P, g_pool, sizeof g_pool}}, 6},
        {"table_dtype.npz", "table.npy: dtype float32",
         {BASE_MEMBERS, {"table.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }", g_table, 16},
          {"pool.npy", P, g_pool, sizeof g_pool}}, 6},
        {"table_shape.npz", "expected int32 (1, 2, 2)",
         {BASE_MEMBERS, {"table.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", g_table, 16},
          {"pool.npy", P, g_pool, sizeof g_pool}}, 6},
        {"pool_dtype.npz", "pool.npy: dtype uint8",
         {BASE_MEMBERS, {"table.npy", T, g_table, 16},
          {"pool.npy", "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 8, 8, 8, 2), }", g_pool, 2048}}, 6},
        {"pool_shape.npz", "pool.npy: dtype float32 with 5 dimensions",
         {BASE_MEMBERS, {"table.npy", T, g_table, 16},
          {"pool.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 8, 8, 8, 3), }", g_pool, sizeof g_pool}}, 6},
        {"pool_big.npz", "5 bricks but the table has only 4",
         {BASE_MEMBERS, {"table.npy", T, g_table, 16},
          {"pool.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 8, 8, 8, 2), }", g_pool, sizeof g_pool}}, 6},
        {"nan.npz", "pool.npy: brick 0, voxel 350, channel 0 is not finite",
         {BASE_MEMBERS, {"table.npy", T, g_table, 16}, {"pool.npy", P, nanpool, sizeof nanpool}}, 6},
        {"version.npz", "version 2 is not supported",
         {{"format.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &ver2, 8}}, 1},
        {"brick4.npz", "brick edge 4",
         {{"format.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_one, 8},
          {"brick.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &brick4, 8}}, 2},
        {"channels.npz", "65 channels",
         {{"format.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_one, 8},
          {"brick.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_eight, 8},
          {"shape.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", shape_bad, 32}}, 3},
        {"shape_dtype.npz", "shape.npy: dtype float64",
         {{"format.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_one, 8},
          {"brick.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_eight, 8},
          {"shape.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", shape_bad, 32}}, 3},
        {"bg_shape.npz", "background.npy: dtype float32 with 1 dimensions (expected float32 (2,))",
         {{"format.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_one, 8},
          {"shape.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", g_shape, 32},
          {"brick.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_eight, 8},
          {"background.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", g_pool, 12}}, 4},
        {"bad_magic.npz", "not an .npy array",
         {{"format.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &g_one, 8}}, 0},
    };
    int ok = 0, n = (int)(sizeof cases / sizeof *cases);
    for (int i = 0; i < n; i++) {
        if (cases[i].n == 0) continue;
        ok += bad_case(cases[i].file, cases[i].ms, cases[i].n, cases[i].want);
    }
    assert_int_equal(ok, n - 1);

    /* a member whose bytes are not an .npy; a truncated zip; a corrupt deflate stream */
    char p[512], q[512];
    tmp_path(p, sizeof p, "magic.npz");
    {
        int err;
        zip_t *z = zip_open(p, ZIP_CREATE | ZIP_TRUNCATE, &err);
        static const char junk[] = "this is not numpy data at all";
        zip_file_add(z, "format.npy", zip_source_buffer(z, junk, sizeof junk, 0), 0);
        assert_int_equal(zip_close(z), 0);
        vx_grid g;
        assert_int_equal(vx_sparse_load(p, &g), -1);
        assert_non_null(strstr(vx_errmsg(), "format.npy: not an .npy array"));
    }
    vx_grid d, s, g;
    random_grid(&d, 20, 20, 20, 4);
    assert_int_equal(vx_sparse_from_dense(&d, NULL, 0.0f, &s), 0);
    tmp_path(p, sizeof p, "whole.npz");
    assert_int_equal(vx_sparse_write(p, &s, 0, VX_SPARSE_DEFLATE), 0);
    unsigned char *buf;
    size_t len;
    assert_int_equal(vx_read_file(p, 1 << 26, &buf, &len), 0);
    tmp_path(q, sizeof q, "truncated.npz");
    vx_test_write(q, buf, len * 2 / 3);
    assert_int_equal(vx_sparse_load(q, &g), -1);
    assert_non_null(strstr(vx_errmsg(), q));
    assert_null(strchr(vx_errmsg(), '\n'));
    /* flip bytes in the middle of the pool's deflate stream */
    size_t at = len / 2;
    for (size_t k = 0; k < 64; k++) buf[at + k] ^= 0x5a;
    tmp_path(q, sizeof q, "corrupt.npz");
    vx_test_write(q, buf, len);
    assert_int_equal(vx_sparse_load(q, &g), -1);
    assert_non_null(strstr(vx_errmsg(), q));
    assert_null(strchr(vx_errmsg(), '\n'));
    free(buf);
    /* float16 range */
    s.sparse->pool[3] = 1e6f;
    assert_int_equal(vx_sparse_write(p, &s, 1, VX_SPARSE_DEFLATE), -1);
    assert_non_null(strstr(vx_errmsg(), "float16"));
    vx_grid_free(&d); vx_grid_free(&s);
}

/* ---- make-scene --sparse ------------------------------------------------------------------------ */

/* Equal to from_dense of the dense scene, byte for byte: every scene at small sizes, the ones
 * with a density bound (shell, orbs) also across several 64-point tiles, with a threshold. */
static void test_make_scene_sparse(void **state) {
    (void)state;
    static const char *names[] = {"shell", "orbs", "sh-glass", "cloud", "phantom"};
    static const int res[] = {40, 64, 41, 57, 137, 137};
    for (int r = 0; r < 6; r++)
        for (int i = 0; i < 5; i++) {
            if (r >= 1 && (i == 3 || i == 2)) continue; /* keep the test short */
            if (r >= 2 && i == 4) continue;
            float thr = r == 5 ? 0.3f : 0.0f;
            vx_scene sd, ss;
            memset(&sd, 0, sizeof sd);
            memset(&ss, 0, sizeof ss);
            assert_int_equal(vx_make_scene(names[i], res[r], &sd.grid, &sd), 0);
            assert_int_equal(vx_make_scene_sparse(names[i], res[r], thr, &ss.grid, &ss), 0);
            vx_grid want;
            float bg[VX_SPARSE_MAX_CHANNELS] = {0};
            assert_int_equal(vx_sparse_from_dense_bg(&sd.grid, &sd.dec, thr, bg, &want), 0);
            const vx_sparse *a = want.sparse, *b = ss.grid.sparse;
            assert_non_null(b);
            assert_int_equal(a->nbricks, b->nbricks);
            assert_memory_equal(a->table, b->table, sizeof(int32_t) * (size_t)a->bn[0] * a->bn[1] * a->bn[2]);
            if (a->nbricks)
                assert_memory_equal(a->pool, b->pool, a->nbricks * VX_BRICK_VOXELS * (size_t)a->nc * sizeof(float));
            assert_memory_equal(a->background, b->background, sizeof(float) * (size_t)a->nc);
            assert_memory_equal(sd.grid.i2w, ss.grid.i2w, sizeof sd.grid.i2w);
            assert_memory_equal(&sd.dec, &ss.dec, sizeof sd.dec);
            fprintf(stderr, "%s %d (threshold %g): %zu of %d bricks\n", names[i], res[r], thr, a->nbricks,
                    a->bn[0] * a->bn[1] * a->bn[2]);
            if (i < 2) assert_true(a->nbricks < (size_t)a->bn[0] * a->bn[1] * a->bn[2]);
            vx_grid_free(&want);
            vx_grid_free(&sd.grid);
            vx_grid_free(&ss.grid);
        }
}

/* ---- building from a source, tile by tile -------------------------------------------------------- */

typedef struct {
    const vx_grid *g;
    long long points;  /* lattice points row() was asked for */
    int exact_empty;   /* 0: empty() never proves anything */
} grid_source;

static void grid_row(void *user, int x0, int n, int y, int z, float *out) {
    grid_source *gs = user;
    const vx_grid *g = gs->g;
    assert_true(x0 >= 0 && n >= 1 && x0 + n <= g->nx && y >= 0 && y < g->ny && z >= 0 && z < g->nz);
    memcpy(out, g->data + (((size_t)z * g->ny + y) * g->nx + x0) * g->nc, sizeof(float) * (size_t)n * g->nc);
#pragma omp atomic
    gs->points += n;
}

static int grid_empty(void *user, const int lo[3], const int hi[3]) {
    const grid_source *gs = user;
    const vx_grid *g = gs->g;
    assert_true(lo[0] >= 0 && lo[1] >= 0 && lo[2] >= 0 && hi[0] < g->nx && hi[1] < g->ny && hi[2] < g->nz);
    if (!gs->exact_empty) return 0;
    for (int z = lo[2]; z <= hi[2]; z++)
        for (int y = lo[1]; y <= hi[1]; y++)
            for (int x = lo[0]; x <= hi[0]; x++)
                if (g->data[(((size_t)z * g->ny + y) * g->nx + x) * g->nc] != 0.0f) return 0;
    return 1;
}

/* vx_sparse_builder_source over a dense grid equals vx_sparse_from_dense_bg of it: sizes
 * across several 64-point tiles and not multiples of 8, with and without a decoder, several
 * thresholds, a background whose density is alive (the bound must then go unused). */
static void test_builder_source(void **state) {
    (void)state;
    static const int sizes[][4] = {{130, 9, 70, 4}, {65, 66, 67, 1}, {8, 137, 17, 28}, {200, 3, 12, 4}};
    static const float thresholds[] = {0.0f, 0.5f, 3.0f};
    for (int k = 0; k < 4; k++) {
        vx_grid d;
        random_grid(&d, sizes[k][0], sizes[k][1], sizes[k][2], sizes[k][3]);
        for (size_t i = 0; i < vx_grid_count(&d) / d.nc; i++) /* a large empty part: x past 2/3 */
            if ((int)(i % (size_t)d.nx) > 2 * d.nx / 3) memset(d.data + i * d.nc, 0, sizeof(float) * (size_t)d.nc);
        for (int variant = 0; variant < 8; variant++) {
            const vx_decoder *dec = variant < 6 ? rgba_dec() : NULL;
            float thr = thresholds[variant % 3], bg[VX_SPARSE_MAX_CHANNELS] = {0};
            int exact = variant != 1, live_bg = variant == 5 || variant == 7;
            if (live_bg) for (int c = 0; c < d.nc; c++) bg[c] = c ? 0.25f : 4.0f;
            vx_grid want;
            assert_int_equal(vx_sparse_from_dense_bg(&d, dec, thr, bg, &want), 0);
            grid_source gs = {&d, 0, exact};
            vx_sparse_source src = {&gs, grid_row, grid_empty};
            vx_sparse got;
            vx_sparse_builder b;
            assert_int_equal(vx_sparse_builder_init(&b, &got, d.nx, d.ny, d.nz, d.nc, bg, dec, thr, "source test"), 0);
            assert_int_equal(vx_sparse_builder_source(&b, &src), 0);
            assert_int_equal(vx_sparse_builder_finish(&b), 0);
            const vx_sparse *a = want.sparse;
            assert_int_equal(a->nbricks, got.nbricks);
            assert_memory_equal(a->table, got.table, sizeof(int32_t) * (size_t)a->bn[0] * a->bn[1] * a->bn[2]);
            if (a->nbricks)
                assert_memory_equal(a->pool, got.pool, a->nbricks * VX_BRICK_VOXELS * (size_t)a->nc * sizeof(float));
            assert_memory_equal(a->background, got.background, sizeof(float) * (size_t)a->nc);
            /* the bound spares the empty third, unless it cannot be used */
            long long all = (long long)d.nx * d.ny * d.nz;
            if (!(exact && dec && !live_bg)) assert_true(gs.points >= all);
            else if (d.nx > 16) assert_true(gs.points < all * 4 / 5);
            /* counting only: the same table, no pool */
            vx_sparse cnt;
            assert_int_equal(vx_sparse_builder_init(&b, &cnt, d.nx, d.ny, d.nz, d.nc, bg, dec, thr, "source test"), 0);
            b.count_only = 1;
            assert_int_equal(vx_sparse_builder_source(&b, &src), 0);
            assert_int_equal(cnt.nbricks, a->nbricks);
            assert_null(cnt.pool);
            assert_memory_equal(a->table, cnt.table, sizeof(int32_t) * (size_t)a->bn[0] * a->bn[1] * a->bn[2]);
            vx_sparse_free(&cnt);
            vx_sparse_free(&got);
            vx_grid_free(&want);
        }
        vx_grid_free(&d);
    }
}

/* ---- the apron layout (the CUDA upload's form) ------------------------------------------- */

/* A random sparse grid straight from its parts: each brick present with probability pfill,
 * random values, a random background (not 0: absent bricks must read it). */
static void random_sparse(vx_sparse *s, int nx, int ny, int nz, int nc, double pfill) {
    int bn[3] = {(nx + 7) / 8, (ny + 7) / 8, (nz + 7) / 8};
    size_t ntab = (size_t)bn[0] * bn[1] * bn[2];
    int32_t *present = malloc(ntab * sizeof *present);
    size_t nb = 0;
    for (size_t t = 0; t < ntab; t++) present[t] = vx_test_rand() < pfill ? (int32_t)nb++ : -1;
    assert_int_equal(vx_sparse_alloc(s, nx, ny, nz, nc, nb, "random sparse"), 0);
    memcpy(s->table, present, ntab * sizeof *present);
    for (size_t i = 0; i < nb * VX_BRICK_VOXELS * (size_t)nc; i++) s->pool[i] = (float)vx_test_uniform(-2, 2);
    for (int c = 0; c < nc; c++) s->background[c] = (float)vx_test_uniform(-1, 1);
    free(present);
}

static void test_apron_layout(void **state) {
    (void)state;
    static const int shapes[][5] = { /* nx, ny, nz, grid channels, channels kept */
        {8, 8, 8, 4, 4}, {17, 9, 23, 4, 4}, {1, 13, 20, 5, 5}, {21, 1, 1, 28, 28},
        {12, 30, 7, 1, 1}, {16, 16, 16, 6, 4}, {2, 2, 2, 3, 1}, {33, 17, 9, 28, 28},
    };
    for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
        int n[3] = {shapes[q][0], shapes[q][1], shapes[q][2]}, nc = shapes[q][3], keep = shapes[q][4];
        for (int f = 0; f < 3; f++) {
            vx_sparse s;
            random_sparse(&s, n[0], n[1], n[2], nc, f == 0 ? 0.0 : f == 1 ? 0.3 : 1.0);
            vx_apron a;
            assert_int_equal(vx_apron_plan(&s, n[0], n[1], n[2], keep, &a, "apron test"), 0);
            size_t ntab = (size_t)s.bn[0] * s.bn[1] * s.bn[2], bsize = (size_t)VX_APRON_VOXELS * keep;
            size_t nall = a.nblocks + 1, half = nall / 2;
            float *pool = malloc(nall * bsize * sizeof(float));
            vx_apron_fill_cpu(&s, &a, 0, half, pool); /* in two chunks, as the upload does */
            vx_apron_fill_cpu(&s, &a, half, nall - half, pool + half * bsize);
            /* a block exactly for every brick that is present or has a present high neighbour */
            size_t want = 0;
            for (int bz = 0; bz < s.bn[2]; bz++)
                for (int by = 0; by < s.bn[1]; by++)
                    for (int bx = 0; bx < s.bn[0]; bx++) {
                        int need = 0;
                        for (int k = 0; k < 8; k++) {
                            int x = bx + (k & 1), y = by + (k >> 1 & 1), z = bz + (k >> 2);
                            if (x < s.bn[0] && y < s.bn[1] && z < s.bn[2])
                                need |= s.table[((size_t)z * s.bn[1] + y) * s.bn[0] + x] >= 0;
                        }
                        want += (size_t)need;
                    }
            assert_int_equal(a.nblocks, want);
            /* every block voxel of every brick (those pointing at the background block too) is
             * the lattice point it stands for, clamped to the lattice */
            size_t checked = 0;
            for (size_t t = 0; t < ntab; t++) {
                int32_t slot = a.table[t];
                assert_true(slot >= 0 && (size_t)slot <= a.nblocks);
                int b[3] = {(int)(t % s.bn[0]), (int)(t / s.bn[0] % s.bn[1]), (int)(t / ((size_t)s.bn[0] * s.bn[1]))};
                const float *blk = pool + (size_t)slot * bsize;
                for (int lz = 0; lz < VX_APRON; lz++)
                    for (int ly = 0; ly < VX_APRON; ly++)
                        for (int lx = 0; lx < VX_APRON; lx++) {
                            int x = vx_mini(8 * b[0] + lx, n[0] - 1), y = vx_mini(8 * b[1] + ly, n[1] - 1);
                            int z = vx_mini(8 * b[2] + lz, n[2] - 1);
                            const float *got = blk + (size_t)vx_apron_voxel(lx, ly, lz) * keep;
                            if (memcmp(got, vx_sparse_voxel(&s, x, y, z), sizeof(float) * (size_t)keep))
                                fail_msg("%dx%dx%d: brick %zu voxel (%d,%d,%d) differs from lattice point (%d,%d,%d)",
                                         n[0], n[1], n[2], t, lx, ly, lz, x, y, z);
                            checked++;
                        }
            }
            assert_int_equal(checked, ntab * VX_APRON_VOXELS);
            /* the renderer's cell arithmetic (sparse.h) gives the brick lookup's trilinear
             * value bit for bit, at random points, on the faces and past them */
            for (int r = 0; r < 2000; r++) {
                vx_vec3 p = vx_v3((float)vx_test_uniform(-0.5, n[0] - 0.5), (float)vx_test_uniform(-0.5, n[1] - 0.5),
                                  (float)vx_test_uniform(-0.5, n[2] - 0.5));
                if (r % 4 == 1) p.x = (float)(n[0] - 1);
                if (r % 4 == 2) p.y = (float)(n[1] - 1);
                if (r % 4 == 3) p.z = (float)n[2] + 3.0f;
                float want_v[64], got_v[64];
                vx_trilinear_fetch_grid(NULL, &s, n[0], n[1], n[2], nc, keep, p, want_v);
                vx_cell c;
                vx_trilinear_cell(n[0], n[1], n[2], p, &c);
                const float *p0 = pool + (size_t)a.table[vx_sparse_brick_index(s.bn, c.x[0], c.y[0], c.z[0])] * bsize +
                                  vx_apron_cell(keep, c.x[0], c.y[0], c.z[0]);
                const float *v[8];
                for (int k = 0; k < 8; k++) v[k] = p0 + vx_apron_corner(keep, k);
                vx_cell_blend(&c, v, keep, got_v);
                if (memcmp(got_v, want_v, sizeof(float) * (size_t)keep))
                    fail_msg("%dx%dx%d: trilinear at (%g, %g, %g) differs from the bricks'", n[0], n[1], n[2], p.x, p.y, p.z);
            }
            free(pool);
            vx_apron_free(&a);
            vx_sparse_free(&s);
        }
    }
    /* refused: more channels than the grid has, a lattice that does not match the table */
    vx_sparse s;
    vx_apron a;
    random_sparse(&s, 9, 9, 9, 2, 0.5);
    assert_int_equal(vx_apron_plan(&s, 9, 9, 9, 3, &a, "apron test"), -1);
    assert_int_equal(vx_apron_plan(&s, 17, 9, 9, 2, &a, "apron test"), -1);
    assert_non_null(strstr(vx_errmsg(), "apron test"));
    vx_sparse_free(&s);
}

int main(void) {
    vx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_exact),   cmocka_unit_test(test_rethin),
        cmocka_unit_test(test_scalar_background), cmocka_unit_test(test_brick_ranges),
        cmocka_unit_test(test_drop_rule_keeps_neighbours), cmocka_unit_test(test_alloc_checks),
        cmocka_unit_test(test_file_roundtrip),    cmocka_unit_test(test_scene_load),
        cmocka_unit_test(test_bad_files),         cmocka_unit_test(test_make_scene_sparse),
        cmocka_unit_test(test_builder_source),    cmocka_unit_test(test_apron_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
