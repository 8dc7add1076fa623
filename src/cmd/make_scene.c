/* cmd/make_scene.c - `voxray make-scene NAME -o DIR`: parses the command line and writes a
 * procedural sample scene built by make_scene.c. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "make_scene.h"
#include "sparse_grid.h"
#include "vx_common.h"

static void vx__usage(FILE *f) {
    fprintf(f,
            "usage: voxray make-scene NAME -o DIR [--res N] [--half]\n"
            "                         [--sparse [--threshold T] [--compress deflate|none]] [--max-memory SIZE]\n"
            "\n"
            "Write a deterministic procedural sample scene: DIR/grid.npy and DIR/scene.json\n"
            "(DIR/grid.sparse.npz with --sparse).\n"
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
            "  --sparse      8^3 bricks where the scene can have density, built brick by brick\n"
            "                without the dense grid: shell and orbs up to --res %d, the others\n"
            "                up to %d (cloud is fog everywhere, phantom a solid head, sh-glass a\n"
            "                solid torus: they barely thin out)\n"
            "  --threshold T drop bricks whose cells can reach density at most T (default 0:\n"
            "                renders exactly as the dense grid)\n"
            "  --compress M  zip members deflated (default) or stored (none)\n"
            "  --max-memory SIZE  memory the grid may take, e.g. 64G (default: half of this\n"
            "                machine's memory, at most 16G; a 4096^3 sparse shell needs ~60G)\n"
            "  -h, --help    this text\n",
            vx_make_scene_names(), VX_MAKE_SCENE_RES_MIN, VX_MAKE_SCENE_RES_MAX,
            VX_MAKE_SCENE_RES_DEFAULT, VX_MAKE_SCENE_SPARSE_RES_MAX, VX_MAKE_SCENE_RES_MAX);
}

static int vx__usage_error(const char *msg) {
    fprintf(stderr, "voxray make-scene: %s (see voxray make-scene --help)\n", msg);
    return 2;
}

int vx_cmd_make_scene(int argc, char **argv) {
    const char *name = NULL, *dir = NULL;
    int res = VX_MAKE_SCENE_RES_DEFAULT, half = 0, sparse = 0, deflate = 1;
    double threshold = 0.0;
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
            if (vx_parse_int("--res", argv[++i], VX_MAKE_SCENE_RES_MIN, VX_MAKE_SCENE_SPARSE_RES_MAX, &res))
                return vx__usage_error(vx_errmsg());
        } else if (!strcmp(a, "--half")) {
            half = 1;
        } else if (!strcmp(a, "--sparse")) {
            sparse = 1;
        } else if (!strcmp(a, "--threshold")) {
            if (i + 1 >= argc) return vx__usage_error("--threshold needs a number");
            if (vx_parse_double("--threshold", argv[++i], 0.0, 1e30, &threshold)) return vx__usage_error(vx_errmsg());
            sparse |= 2; /* only with --sparse: checked below */
        } else if (!strcmp(a, "--compress")) {
            if (i + 1 >= argc) return vx__usage_error("--compress needs deflate or none");
            const char *m = argv[++i];
            if (strcmp(m, "deflate") && strcmp(m, "none"))
                return vx__usage_error("--compress: expected deflate or none");
            deflate = !strcmp(m, "deflate");
            sparse |= 4;
        } else if (!strcmp(a, "--max-memory")) {
            size_t b;
            if (i + 1 >= argc) return vx__usage_error("--max-memory needs a size such as 512M or 64G");
            if (vx_parse_bytes(argv[++i], &b) || b == 0) {
                snprintf(msg, sizeof msg, "--max-memory: '%s' is not a size such as 512M or 64G", argv[i]);
                return vx__usage_error(msg);
            }
            vx_mem_budget_set(b);
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
    if (sparse > 1 && !(sparse & 1)) return vx__usage_error("--threshold and --compress need --sparse");
    if (!sparse && res > VX_MAKE_SCENE_RES_MAX) {
        snprintf(msg, sizeof msg, "--res %d: dense scenes stop at %d (--sparse goes to %d for shell and orbs)", res,
                 VX_MAKE_SCENE_RES_MAX, VX_MAKE_SCENE_SPARSE_RES_MAX);
        return vx__usage_error(msg);
    }
    if (sparse && res > VX_MAKE_SCENE_RES_MAX && strcmp(name, "shell") && strcmp(name, "orbs")) {
        snprintf(msg, sizeof msg, "--res %d: sparse %s stops at %d (it fills much of the box); shell and orbs go to %d",
                 res, name, VX_MAKE_SCENE_RES_MAX, VX_MAKE_SCENE_SPARSE_RES_MAX);
        return vx__usage_error(msg);
    }

    vx_scene s;
    memset(&s, 0, sizeof s);
    double t0 = vx_now();
    int rc = sparse ? vx_make_scene_sparse(name, res, (float)threshold, &s.grid, &s) : vx_make_scene(name, res, &s.grid, &s);
    double t_build = vx_now() - t0;
    if (rc || vx_make_scene_write_ex(dir, &s.grid, &s, half, deflate)) {
        fprintf(stderr, "voxray make-scene: %s\n", vx_errmsg());
        vx_grid_free(&s.grid);
        return 1;
    }
    char gpath[4096], jpath[4096];
    vx_path_join(dir, sparse ? "grid.sparse.npz" : "grid.npy", gpath, sizeof gpath);
    vx_path_join(dir, "scene.json", jpath, sizeof jpath);
    if (sparse) {
        vx_sparse_stats st;
        vx_sparse_stats_of(&s.grid, &st);
        struct stat fs;
        double file_mib = stat(gpath, &fs) == 0 ? (double)fs.st_size / (1024.0 * 1024.0) : 0.0;
        printf("make-scene: wrote %s (%d^3 x %d %s, %zu of %zu bricks = %.2f%%, %.1f MiB on disk, %.1f MiB in memory "
               "vs %.1f MiB dense; built in %.1f s, written in %.1f s) and %s\n",
               gpath, res, s.grid.nc, half ? "float16" : "float32", st.bricks, st.table_entries, 100.0 * st.fill,
               file_mib, (double)st.bytes_sparse / (1024.0 * 1024.0), (double)st.bytes_dense / (1024.0 * 1024.0),
               t_build, vx_now() - t0 - t_build, jpath);
        vx_grid_free(&s.grid);
        return 0;
    }
    double mib = (double)vx_grid_count(&s.grid) * (half ? 2.0 : 4.0) / (1024.0 * 1024.0);
    printf("make-scene: wrote %s (%d x %d x %d x %d %s, %.1f MiB) and %s\n", gpath, res, res, res,
           s.grid.nc, half ? "float16" : "float32", mib, jpath);
    vx_grid_free(&s.grid);
    return 0;
}
