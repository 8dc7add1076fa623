/* cmd/make_scene.c - `voxray make-scene NAME -o DIR`: parses the command line and writes a
 * procedural sample scene built by make_scene.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "make_scene.h"
#include "vx_common.h"

static void vx__usage(FILE *f) {
    fprintf(f,
            "usage: voxray make-scene NAME -o DIR [--res N] [--half]\n"
            "\n"
            "Write a deterministic procedural sample scene: DIR/grid.npy and DIR/scene.json.\n"
            "\n"
            "  NAME          one of: %s\n"
            "                  orbs      rgba: coloured soft spheres\n"
            "                  shell     rgba: a thin shell with windows, most of the box empty\n"
            "                  sh-glass  sh degree 2: a glassy torus whose colour changes with the view\n"
            "                  cloud     rgba: fractal noise, partly transparent everywhere\n"
            "                  phantom   scalar: the 3-D modified Shepp-Logan head phantom\n"
            "  -o, --output DIR  directory to write (created if missing)\n"
            "  --res N       lattice points per axis, %d..%d (default %d)\n"
            "  --half        store the grid as float16 instead of float32\n"
            "  -h, --help    this text\n",
            vx_make_scene_names(), VX_MAKE_SCENE_RES_MIN, VX_MAKE_SCENE_RES_MAX,
            VX_MAKE_SCENE_RES_DEFAULT);
}

static int vx__usage_error(const char *msg) {
    fprintf(stderr, "voxray make-scene: %s (see voxray make-scene --help)\n", msg);
    return 2;
}

int vx_cmd_make_scene(int argc, char **argv) {
    const char *name = NULL, *dir = NULL;
    int res = VX_MAKE_SCENE_RES_DEFAULT, half = 0;
    char msg[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            vx__usage(stdout);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) return vx__usage_error("-o needs a directory");
            dir = argv[++i];
        } else if (!strcmp(a, "--res")) {
            if (i + 1 >= argc) return vx__usage_error("--res needs a number");
            if (vx_parse_int("--res", argv[++i], VX_MAKE_SCENE_RES_MIN, VX_MAKE_SCENE_RES_MAX, &res))
                return vx__usage_error(vx_errmsg());
        } else if (!strcmp(a, "--half")) {
            half = 1;
        } else if (a[0] == '-' && a[1]) {
            snprintf(msg, sizeof msg, "unknown option '%s'", a);
            return vx__usage_error(msg);
        } else if (!name) {
            name = a;
        } else {
            snprintf(msg, sizeof msg, "unexpected argument '%s'", a);
            return vx__usage_error(msg);
        }
    }
    if (!name) return vx__usage_error("which scene? NAME is one of: orbs, shell, sh-glass, cloud, phantom");
    if (!vx_make_scene_known(name)) {
        snprintf(msg, sizeof msg, "unknown scene '%s' (known: %s)", name, vx_make_scene_names());
        return vx__usage_error(msg);
    }
    if (!dir) return vx__usage_error("-o DIR is required");

    vx_scene s;
    memset(&s, 0, sizeof s);
    if (vx_make_scene(name, res, &s.grid, &s) || vx_make_scene_write(dir, &s.grid, &s, half)) {
        fprintf(stderr, "voxray make-scene: %s\n", vx_errmsg());
        vx_grid_free(&s.grid);
        return 1;
    }
    char gpath[4096], jpath[4096];
    vx_path_join(dir, "grid.npy", gpath, sizeof gpath);
    vx_path_join(dir, "scene.json", jpath, sizeof jpath);
    double mib = (double)vx_grid_count(&s.grid) * (half ? 2.0 : 4.0) / (1024.0 * 1024.0);
    printf("make-scene: wrote %s (%d x %d x %d x %d %s, %.1f MiB) and %s\n", gpath, res, res, res,
           s.grid.nc, half ? "float16" : "float32", mib, jpath);
    vx_grid_free(&s.grid);
    return 0;
}
