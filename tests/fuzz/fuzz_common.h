/* fuzz_common.h - shared body of the libFuzzer targets: write the input to a private
 * temp file with the format's extension, then open and describe it through formats.h.
 * Any crash, leak, UB or oversized malloc is a finding; errors are expected. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats.h"
#include "vx_common.h"

static int fuzz_volume(const uint8_t *data, size_t size, const char *ext, const char *raw_spec) {
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/vxfuzz-%ld%s", dir ? dir : "/tmp", (long)getpid(), ext);
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    vx_load_opts o;
    memset(&o, 0, sizeof o);
    o.raw_spec = raw_spec;
    vx_grid g;
    vx_decoder d;
    int has = 0;
    memset(&g, 0, sizeof g);
    if (vx_format_load(path, &o, &g, &d, &has) == 0) {
        /* touch every voxel so reads past the data would show */
        volatile float s = 0;
        for (size_t i = 0; i < vx_grid_count(&g); i++) s += g.data[i];
        (void)s;
        vx_grid_free(&g);
    } else if (strchr(vx_errmsg(), '\n') || !vx_errmsg()[0]) {
        abort(); /* an error must be one non-empty line */
    }
    char buf[4096];
    (void)vx_format_describe(path, &o, buf, sizeof buf);
    remove(path);
    return 0;
}

#endif
