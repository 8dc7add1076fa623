/* fuzz_common.h - shared body of the libFuzzer targets: write the input to a private
 * temp file with the format's extension, then open and describe it through formats.h
 * (or the scene loader, camera paths, the CPU renderer: fuzz_scene.h). Any crash, leak,
 * UB, hang or oversized malloc is a finding; errors are expected. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats.h"
#include "vx_common.h"

/* Write the input to TMPDIR/vxfuzz-PID/name; returns the path (static) or NULL. */
static const char *fuzz_write(const uint8_t *data, size_t size, const char *name) {
    static char dir[256], path[512];
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/vxfuzz-%ld", t ? t : "/tmp", (long)getpid());
        mkdir(dir, 0700);
        vx_mem_budget_set((size_t)256 << 20); /* inside libFuzzer's -rss_limit_mb */
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    return path;
}

/* An error must be one non-empty line. */
static void fuzz_check_error(void) {
    if (strchr(vx_errmsg(), '\n') || !vx_errmsg()[0]) abort();
}

static int fuzz_volume(const uint8_t *data, size_t size, const char *ext, const char *raw_spec) {
    char name[32];
    snprintf(name, sizeof name, "input%s", ext);
    const char *path = fuzz_write(data, size, name);
    if (!path) return 0;
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
    } else {
        fuzz_check_error();
    }
    char buf[4096];
    (void)vx_format_describe(path, &o, buf, sizeof buf);
    remove(path);
    return 0;
}

#endif
