/* fuzz_sparse.c - libFuzzer target for voxray's sparse grid .npz (sparse_io.c). An input
 * that starts with "PK" is written as the .npz itself (zip-level damage). Any other input
 * is cut at "@@@@" into the six .npy members (format, shape, brick, background, table,
 * pool) and zipped here, so the CRCs are right and the mutations reach the .npy headers,
 * the table checks and the pool. A grid that loads is read at every lattice point through
 * vx_sparse_voxel (tests/fuzz/run_fuzz.sh builds and runs it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zip.h>

#include "sparse_grid.h"
#include "vx_common.h"

static const char *fuzz_members[6] = {"format.npy", "shape.npy", "brick.npy", "background.npy", "table.npy", "pool.npy"};

static int fuzz_write_members(const char *path, const uint8_t *data, size_t size) {
    int err;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!z) return -1;
    size_t at = 0;
    for (int m = 0; m < 6 && at <= size; m++) {
        const uint8_t *end = size - at >= 4 ? memmem(data + at, size - at, "@@@@", 4) : NULL;
        size_t len = end ? (size_t)(end - (data + at)) : size - at;
        zip_source_t *src = zip_source_buffer(z, data + at, len, 0);
        if (!src || zip_file_add(z, fuzz_members[m], src, 0) < 0) { zip_source_free(src); break; }
        zip_set_file_compression(z, (zip_uint64_t)m, m == 5 ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 1);
        if (!end) break;
        at += len + 4;
    }
    return zip_close(z) == 0 ? 0 : (zip_discard(z), -1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/vxfuzz-%ld.sparse.npz", dir ? dir : "/tmp", (long)getpid());
    }
    remove(path);
    if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
        FILE *f = fopen(path, "wb");
        if (!f) return 0;
        fwrite(data, 1, size, f);
        fclose(f);
    } else if (fuzz_write_members(path, data, size)) {
        return 0;
    }
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
