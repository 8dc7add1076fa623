/* main.c - `voxray COMMAND ...`: dispatches to the commands in commands.h and prints
 * the top-level help and version. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "vx_common.h"

static void vx__help(void) {
    printf("voxray %s - a NeRF-style voxel volume renderer\n\n"
           "usage: voxray COMMAND [options]   (voxray COMMAND --help for each)\n\n"
           "  render SCENE -o OUT.png   render frames to PNG (single, --turntable, --path)\n"
           "  view SCENE                interactive window\n"
           "  info SCENE                grid facts: dims, dtype, placement, ranges, empty space\n"
           "  make-scene NAME -o DIR    procedural sample scenes (orbs, shell, sh-glass, cloud, phantom;\n"
           "                            --sparse: 8^3 bricks, shell and orbs up to 4096^3)\n"
           "  convert IN OUT            any supported volume -> voxray .npy + scene.json\n"
           "                            (--sparse: grid.sparse.npz of 8^3 bricks; --dense: back)\n"
           "  fit DATASET -o DIR        optimise a voxel grid from posed photos (NeRF synthetic)\n"
           "  eval SCENE DATASET        PSNR/SSIM of a scene against a dataset split\n"
           "  bench kernels|render|fit  GPU benchmarks (needs CUDA)\n\n"
           "SCENE is a scene.json manifest, a directory holding one, a .npy grid, a sparse grid\n"
           ".npz, or a volume file (NRRD, NIfTI, MetaImage, INRIMAGE, VolPack .den, raw,\n"
           "Plenoxels .npz).\n",
           VX_VERSION);
}

int main(int argc, char **argv) {
    static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"render", vx_cmd_render}, {"view", vx_cmd_view}, {"info", vx_cmd_info},
        {"make-scene", vx_cmd_make_scene}, {"convert", vx_cmd_convert}, {"bench", vx_cmd_bench},
        {"fit", vx_cmd_fit}, {"eval", vx_cmd_eval}};
    if (argc >= 3 && !strcmp(argv[1], "help")) { /* voxray help CMD = voxray CMD --help */
        for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
            if (strcmp(argv[2], cmds[i].name)) continue;
            char *hargv[] = {argv[2], "--help", NULL};
            return cmds[i].fn(2, hargv);
        }
        fprintf(stderr, "voxray help: unknown command '%s'; try voxray --help\n", argv[2]);
        return 2;
    }
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        vx__help();
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("voxray %s\n", VX_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "voxray: unknown command '%s'; try voxray --help\n", argv[1]);
    return 2;
}
