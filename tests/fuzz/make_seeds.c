/* make_seeds.c - writes the fuzz seed corpus: small valid files of every format and
 * variant (from tests/fmt_fixtures.h) into DIR/<format>/. run_fuzz.sh builds and runs it. */
#include <sys/stat.h>

#include "fmt_fixtures.h"
#include "npy.h"
#include "sparse_grid.h"
#include <zip.h>

static char dir[512];

#if defined(FUZZ_NVDB) || defined(FUZZ_VDB)
#include "nvdb.h"
#include "vdb.h"
/* A 10^3 fog scene (a ball of density 0..1, the rest 0) written by `write` as DIR/NAME. */
static int fx_seed_scene(const char *d, const char *name, int (*write)(const char *, const vx_scene *)) {
    vx_scene s;
    memset(&s, 0, sizeof s);
    vx_grid *g = &s.grid;
    g->nx = g->ny = g->nz = 10;
    g->nc = 1;
    g->data = calloc(1000, sizeof(float));
    if (!g->data) return -1;
    for (int i = 0; i < 1000; i++) {
        int x = i % 10 - 5, y = i / 10 % 10 - 5, z = i / 100 - 5;
        float r = sqrtf((float)(x * x + y * y + z * z));
        g->data[i] = r < 4 ? 1 - r / 4 : 0;
    }
    for (int k = 0; k < 3; k++) g->i2w[k * 5] = 0.1;
    vx_fog_decoder(&s.dec, 1.0f);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", d, name);
    int rc = write(path, &s);
    free(g->data);
    if (rc) fprintf(stderr, "make_seeds: %s\n", vx_errmsg());
    return rc;
}
#endif

static void group(const char *root, const char *name) {
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0777);
    fx_setup(0x5eed, dir);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: make_seeds DIR\n"); return 2; }
    mkdir(argv[1], 0777);
    static const vx_dtype types[] = {VX_DT_U8, VX_DT_I16, VX_DT_U32, VX_DT_F32, VX_DT_F64};
    char path[1024], spec[128];
    double i2w[12];
    for (int t = 0; t < 5; t++) {
        fx_vol v;
        fx_random(&v, 3, 2, 2, types[t]);
        group(argv[1], "nrrd");
        for (int big = 0; big < 2; big++)
            for (int gz = 0; gz < 2; gz++) fx_nrrd(&v, path, sizeof path, big, gz, 0, i2w);
        group(argv[1], "nifti");
        for (int big = 0; big < 2; big++)
            for (int mode = 0; mode < 2; mode++) fx_nifti(&v, path, sizeof path, big, mode, t % 3, 1 + t % 2, 0, i2w);
        group(argv[1], "metaimage");
        for (int big = 0; big < 2; big++) {
            fx_metaimage(&v, path, sizeof path, big, 0, i2w);
            fx_metaimage(&v, path, sizeof path, big, 1, i2w);
        }
        group(argv[1], "inr");
        for (int big = 0; big < 2; big++)
            for (int gz = 0; gz < 2; gz++) fx_inr(&v, path, sizeof path, big, gz, i2w);
        group(argv[1], "raw");
        fx_raw(&v, path, sizeof path, t % 2, spec, sizeof spec);
        {   /* the raw target takes "spec\npayload" */
            unsigned char *d;
            size_t n;
            if (vx_read_file(path, 1 << 20, &d, &n) == 0) {
                fx_write2(path, spec, strlen(spec), "\n", 1);
                FILE *f = fopen(path, "ab");
                fwrite(d, 1, n, f);
                fclose(f);
                free(d);
            }
        }
        fx_free(&v);
    }
    group(argv[1], "volpack");
    for (int big = 0; big < 2; big++) {
        fx_vol v;
        fx_random(&v, 4, 3, 2, VX_DT_U8);
        fx_den(&v, path, sizeof path, big, i2w);
        fx_free(&v);
    }
    group(argv[1], "plenoxels");
    for (int deg = 0; deg < 3; deg++) {
        fx_plenoxels p;
        fx_plenoxels_make(&p, 2, 3, 2, deg);
        fx_plenoxels_write(&p, path, sizeof path, NULL);
        fx_plenoxels_free(&p);
    }
    /* scene-level targets: .npy grids, manifests, camera paths, volumes to render */
    static const int ncs[] = {1, 4, 13};
    for (int r = 0; r < 2; r++) {
        group(argv[1], r ? "render" : "npy");
        for (int k = 0; k < 3; k++) {
            vx_grid g;
            if (vx_grid_alloc(&g, 3, 2, 2, ncs[k], "seed")) return 1;
            for (size_t i = 0; i < vx_grid_count(&g); i++) g.data[i] = (float)(i % 5) * 0.5f;
            snprintf(path, sizeof path, "%s/grid%d.npy", dir, k);
            vx_npy_write_grid(path, &g, k == 2);
            vx_grid_free(&g);
        }
    }
    for (int t = 0; t < 2; t++) { /* NRRDs to render */
        fx_vol v;
        fx_random(&v, 3, 3, 2, t ? VX_DT_F32 : VX_DT_U8);
        fx_nrrd(&v, path, sizeof path, 0, t, 0, i2w);
        fx_free(&v);
    }
    static const char *scenes[] = {
        "{\"grid\": \"grid.npy\"}",
        "{\"name\": \"s\", \"grid\": \"grid.npy\", \"bbox_min\": [-1, -1, -1], \"bbox_max\": [1, 2, 1], "
        "\"align_corners\": false, \"decoder\": {\"type\": \"rgba\", \"density_activation\": \"softplus\", "
        "\"density_scale\": 3}, \"background\": [0, 0, 0], \"step\": 0.25, "
        "\"camera\": {\"eye\": [3, 2, 1], \"target\": [0, 0, 0], \"up\": [0, 0, 1], \"fov\": 50}}",
        "{\"grid\": \"grid.npy\", \"index_to_world\": [[0.5, 0.1, 0, -1], [0, 0.5, 0, -1], [0, 0, 0.5, -1], [0, 0, 0, 1]]}",
        "{\"grid\": \"grid.npy\", \"decoder\": {\"type\": \"mlp\", \"layers\": 2, \"weights\": \"mlp.npy\"}}",
    };
    static const char *paths[] = {
        "{\"camera_angle_x\": 0.69, \"frames\": [{\"file_path\": \"./r_0\", \"transform_matrix\": "
        "[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 4], [0, 0, 0, 1]]}]}",
        "{\"camera_angle_x\": 1.2, \"frames\": [{\"transform_matrix\": [[0, 0, 1, 4], [0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 0, 1]]}, "
        "{\"transform_matrix\": [[-1, 0, 0, 0], [0, 0, 1, 4], [0, 1, 0, 0], [0, 0, 0, 1]]}]}",
    };
    group(argv[1], "scene");
    for (int k = 0; k < (int)(sizeof scenes / sizeof scenes[0]); k++) {
        snprintf(path, sizeof path, "%s/scene%d.json", dir, k);
        fx_write2(path, scenes[k], strlen(scenes[k]), NULL, 0);
    }
    group(argv[1], "transforms");
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/path%d.json", dir, k);
        fx_write2(path, paths[k], strlen(paths[k]), NULL, 0);
    }
    group(argv[1], "sparse"); /* small sparse grids: f32/f16, stored/deflated, 1 and 4 channels */
    for (int k = 0; k < 4; k++) {
        vx_grid d, s;
        int nc = k < 2 ? 1 : 4;
        if (vx_grid_alloc(&d, k < 2 ? 9 + k : 7, k < 2 ? 8 : 5, k < 2 ? 3 + 5 * k : 6 + k, nc, "seed")) return 1;
        for (size_t i = 0; i < vx_grid_count(&d); i++) d.data[i] = i % 97 < 20 ? (float)(i % 13) - 2.0f : 0.0f;
        if (vx_sparse_from_dense(&d, NULL, 0.0f, &s)) return 1;
        snprintf(path, sizeof path, "%s/seed%d.npz", dir, k);
        if (vx_sparse_write(path, &s, k & 1, k < 2 ? VX_SPARSE_STORE : VX_SPARSE_DEFLATE)) return 1;
        {   /* the same members cut by "@@@@", which the target zips itself */
            static const char *names[6] = {"format.npy", "shape.npy", "brick.npy", "background.npy", "table.npy", "pool.npy"};
            char mpath[1100];
            snprintf(mpath, sizeof mpath, "%s/members%d.bin", dir, k);
            FILE *out = fopen(mpath, "wb");
            int err;
            zip_t *z = zip_open(path, ZIP_RDONLY, &err);
            for (int m = 0; m < 6 && z && out; m++) {
                zip_stat_t st;
                zip_file_t *zf;
                if (zip_stat(z, names[m], 0, &st) || !(zf = zip_fopen(z, names[m], 0))) break;
                unsigned char *buf = malloc(st.size);
                zip_int64_t got = zip_fread(zf, buf, st.size);
                zip_fclose(zf);
                if (got > 0) fwrite(buf, 1, (size_t)got, out);
                if (m < 5) fwrite("@@@@", 1, 4, out);
                free(buf);
            }
            if (z) zip_discard(z);
            if (out) fclose(out);
        }
        vx_grid_free(&d);
        vx_grid_free(&s);
    }
#ifdef FUZZ_NVDB
    group(argv[1], "nvdb"); /* a small fog scene written by voxray's own .nvdb writer */
    if (fx_seed_scene(dir, "fog.nvdb", vx_nvdb_write)) return 1;
#endif
#ifdef FUZZ_VDB
    group(argv[1], "vdb");
    if (fx_seed_scene(dir, "fog.vdb", vx_vdb_write)) return 1;
#endif
    return 0;
}
