/* fuzz_sparse.c - libFuzzer target for voxray's sparse grid .npz (sparse_io.c): each input
 * is written as a .npz file and opened with vx_sparse_load; a grid that loads is read at
 * every lattice point through vx_sparse_voxel (tests/fuzz/run_fuzz.sh builds and runs it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sparse_grid.h"
#include "vx_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/vxfuzz-%ld.sparse.npz", dir ? dir : "/tmp", (long)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    (void)vx_sparse_is_file(path);
    vx_grid g;
    if (vx_sparse_load(path, &g) == 0) {
        volatile float s = 0; /* reads past the table or the pool would show */
        for (int z = 0; z < g.nz; z++)
            for (int y = 0; y < g.ny; y++)
                for (int x = 0; x < g.nx; x++) s += vx_sparse_voxel(g.sparse, x, y, z)[g.nc - 1];
        (void)s;
        vx_grid_free(&g);
    } else if (strchr(vx_errmsg(), '\n') || !vx_errmsg()[0]) {
        abort(); /* an error must be one non-empty line */
    }
    remove(path);
    return 0;
}
