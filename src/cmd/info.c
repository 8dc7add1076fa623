/* cmd/info.c - `voxray info SCENE`: header facts (through formats.h for volume files),
 * dimensions, channels, dtype, memory, placement, decoder, per-channel value ranges
 * and the fraction of voxels whose decoded density is zero. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "formats.h"
#include "sparse_grid.h"
#include "vx_common.h"

typedef struct { const vx_decoder *d; int nc; size_t empty; } vx__empty_ctx;

/* Voxels whose own values decode to zero density (sparse: the background counts once per
 * voxel of every absent brick). */
static int vx__count_empty(void *p, const float *v, size_t n, size_t weight) {
    vx__empty_ctx *c = p;
    float rgb[3], raw[VX_MAX_CHANNELS];
    vx_vec3 dir = vx_v3(0, 0, 1);
    for (size_t i = 0; i < n; i++) {
        memcpy(raw, v + i * c->nc, sizeof(float) * (size_t)c->nc);
        if (vx_decode(c->d, raw, dir, rgb) <= 0.0f) c->empty += weight;
    }
    return 0;
}

static const char *vx__dec_name(const vx_decoder *d) {
    return d->type == VX_DEC_RGBA ? "rgba" : d->type == VX_DEC_SH ? "sh" : d->type == VX_DEC_MLP ? "mlp" : "scalar";
}

int vx_cmd_info(int argc, char **argv) {
    vx_cli_common c;
    vx_cli_common_init(&c);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: voxray info SCENE [--raw X,Y,Z,DTYPE[,le|be] --spacing sx,sy,sz --volume N]\n"
                   "Print a scene's grid facts: dimensions, channels, dtype, memory, placement,\n"
                   "decoder, value ranges and the fraction of empty voxels.\n");
            return 0;
        }
        int r = vx_cli_parse_common(&c, &i, argc, argv);
        if (r < 0) { fprintf(stderr, "voxray info: %s\n", vx_errmsg()); return 2; }
        if (r) continue;
        if (argv[i][0] == '-') { fprintf(stderr, "voxray info: unknown option '%s'\n", argv[i]); return 2; }
        if (c.scene_path) { fprintf(stderr, "voxray info: unexpected argument '%s'\n", argv[i]); return 2; }
        c.scene_path = argv[i];
    }
    if (!c.scene_path) { fprintf(stderr, "voxray info: no SCENE given\n"); return 2; }
    char facts[4096] = "";
    if (vx_sparse_is_file(c.scene_path))
        snprintf(facts, sizeof facts, "format:     voxray sparse grid (.npz of 8^3 bricks, docs/FORMAT.md)\n");
    else if (vx_format_recognized(c.scene_path, &c.load) && vx_format_describe(c.scene_path, &c.load, facts, sizeof facts)) {
        fprintf(stderr, "voxray: %s\n", vx_errmsg());
        return 1;
    }
    vx_scene s;
    if (vx_cli_load_scene(&c, &s)) { fprintf(stderr, "voxray: %s\n", vx_errmsg()); return 1; }
    const vx_grid *g = &s.grid;
    printf("scene:      %s (%s)\n", s.name, s.path);
    if (facts[0]) printf("%s%s", facts, facts[strlen(facts) - 1] == '\n' ? "" : "\n");
    size_t vox = (size_t)g->nx * g->ny * g->nz;
    printf("grid:       %d x %d x %d (x, y, z), %d channel%s, %s in the file\n", g->nx, g->ny, g->nz, g->nc,
           g->nc == 1 ? "" : "s", vx_dtype_name(g->src_dtype));
    if (g->sparse) {
        vx_sparse_stats st;
        vx_sparse_stats_of(g, &st);
        printf("memory:     %.1f MiB sparse (pool + table) vs %.1f MiB dense float32 (%zu voxels)\n",
               (double)st.bytes_sparse / (1 << 20), (double)st.bytes_dense / (1 << 20), vox);
        printf("sparse:     %zu of %zu bricks of 8^3 (fill %.2f%%), background", st.bricks, st.table_entries,
               100.0 * st.fill);
        for (int c = 0; c < g->nc && c < 8; c++) printf(" %g", g->sparse->background[c]);
        printf("%s\n", g->nc > 8 ? " ..." : "");
        struct stat fs;
        if (stat(g->source, &fs) == 0)
            printf("file:       %s, %.1f MiB on disk (%s pool)\n", g->source, (double)fs.st_size / (1 << 20),
                   vx_dtype_name(g->src_dtype));
    } else {
        printf("memory:     %.1f MiB as float32 (%zu voxels)\n", (double)vox * g->nc * 4 / (1 << 20), vox);
    }
    double sp[3], lo[3], hi[3];
    vx_grid_spacing(g, sp);
    vx_grid_world_bounds(g, lo, hi);
    printf("spacing:    %g %g %g\n", sp[0], sp[1], sp[2]);
    printf("bounds:     [%g, %g] x [%g, %g] x [%g, %g] (align_corners %s)\n", lo[0], hi[0], lo[1], hi[1], lo[2], hi[2],
           g->align_corners ? "true" : "false");
    for (int r = 0; r < 3; r++)
        printf("%s [%10.5g %10.5g %10.5g %10.5g]\n", r ? "           " : "to world:  ", g->i2w[4 * r], g->i2w[4 * r + 1],
               g->i2w[4 * r + 2], g->i2w[4 * r + 3]);
    const vx_decoder *d = &s.dec;
    printf("decoder:    %s", vx__dec_name(d));
    if (d->type == VX_DEC_SH) printf(" degree %d", d->sh_degree);
    if (d->type == VX_DEC_MLP)
        printf(" %d-%d%s-3 (%d hidden layer%s, %d weights)", VX_MLP_IN, VX_MLP_WIDTH,
               vx_decoder_mlp_layers(d) == 2 ? "-64" : "", vx_decoder_mlp_layers(d),
               vx_decoder_mlp_layers(d) == 2 ? "s" : "", vx_mlp_weight_count(vx_decoder_mlp_layers(d)));
    if (vx_decoder_mlp_dir_mode(d) == VX_MLP_DIR_REFLECTED) printf(", the reflected direction");
    if (vx_decoder_mlp_dir_mode(d) == VX_MLP_DIR_BOTH) printf(", the view and the reflected direction");
    if (d->type == VX_DEC_SCALAR) printf(" window [%g, %g], %d control points", d->window_lo, d->window_hi, d->tf_n);
    printf(", density_scale %g\n", d->density_scale);
    for (int ch = 0; ch < g->nc; ch++) {
        float mn, mx;
        vx_grid_range(g, ch, &mn, &mx);
        printf("%s %2d: [%g, %g]\n", ch ? "           " : "channels:  ", ch, mn, mx);
    }
    vx__empty_ctx ec = {d, g->nc, 0};
    vx_grid_visit(g, vx__count_empty, &ec);
    printf("empty:      %.1f%% of voxels decode to zero density\n", 100.0 * (double)ec.empty / (double)vox);
    size_t kept, entries;
    if (!g->sparse && vx_sparse_count_kept(g, d, 0.0f, &kept, &entries) == 0)
        printf("as sparse:  convert --sparse keeps %zu of %zu bricks (%.2f%%): %.1f MiB vs %.1f MiB\n", kept, entries,
               entries ? 100.0 * (double)kept / (double)entries : 0.0,
               (double)(kept * VX_BRICK_VOXELS * (size_t)g->nc * 4 + entries * 4) / (1 << 20),
               (double)vox * g->nc * 4 / (1 << 20));
    vx_scene_free(&s);
    return 0;
}
