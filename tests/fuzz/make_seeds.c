/* make_seeds.c - writes the fuzz seed corpus: small valid files of every format and
 * variant (from tests/fmt_fixtures.h) into DIR/<format>/. run_fuzz.sh builds and runs it. */
#include <sys/stat.h>

#include "fmt_fixtures.h"
#include "sparse_grid.h"
#include <zip.h>

static char dir[512];

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
    return 0;
}
