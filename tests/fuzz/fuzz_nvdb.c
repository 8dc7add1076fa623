/* fuzz_nvdb.c - libFuzzer target for the NanoVDB reader (src/formats/nvdb.cpp): each input
 * is written as a .nvdb file, described, and loaded; a grid that loads is read
 * through its whole table and pool. run_fuzz.sh builds it when NanoVDB's headers are found (inputs up to
 * 400 kB: a NanoVDB tree with one leaf already takes ~300 kB uncompressed). */
#include "fuzz_common.h"
#include "nvdb.h"
#include "sparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write(data, size, "input.nvdb");
    if (!path) return 0;
    char buf[4096];
    if (vx_nvdb_describe(path, buf, sizeof buf)) fuzz_check_error();
    vx_grid g;
    vx_decoder d;
    int has = 0;
    if (vx_nvdb_load(path, NULL, &g, &d, &has) == 0) {
        /* every table entry and pool value (a loop over the lattice could be 65536^3) */
        const vx_sparse *sp = g.sparse;
        volatile float s = 0;
        size_t entries = (size_t)sp->bn[0] * sp->bn[1] * sp->bn[2];
        for (size_t i = 0; i < entries; i++)
            if (sp->table[i] >= 0) s += sp->pool[((size_t)sp->table[i] + 1) * VX_BRICK_VOXELS * g.nc - 1];
        for (size_t i = 0; i < sp->nbricks * VX_BRICK_VOXELS * (size_t)g.nc; i++) s += sp->pool[i];
        (void)s;
        vx_grid_free(&g);
    } else {
        fuzz_check_error();
    }
    remove(path);
    return 0;
}
