/* cmd/convert.c - `voxray convert IN OUTDIR`: open any scene or volume voxray reads and write
 * its own OUTDIR/grid.npy (or grid.sparse.npz, bricks) + OUTDIR/scene.json (placement,
 * decoder, background, step, camera) so it re-opens fast and looks the same.
 * main.c dispatches here; the manifest fields are those of docs/FORMAT.md. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "formats.h"
#ifdef VX_HAVE_VDB
#include "formats/vdb.h"
#endif
#ifdef VX_HAVE_NANOVDB
#include "formats/nvdb.h"
#endif
#include "mlp.h"
#include "npy.h"
#include "outputs.h"
#include "scene.h"
#include "sparse_grid.h"
#include "vx_common.h"

static const char *vx__usage =
    "usage: voxray convert IN OUTDIR [--raw X,Y,Z,dtype[,endian]] [--spacing sx,sy,sz]\n"
    "                      [--volume N] [--preset NAME] [--half] [--allow-outside-data]\n"
    "                      [--max-memory SIZE] [--grid NAME]\n"
    "                      [--sparse [--threshold T] [--compress deflate|none] | --dense]\n"
    "Writes OUTDIR/grid.npy and OUTDIR/scene.json (open it with `voxray render OUTDIR`).\n"
    "--sparse writes OUTDIR/grid.sparse.npz instead: 8^3 bricks where the scene's decoder can\n"
    "give density (--threshold T also drops bricks whose cells reach at most T; default 0\n"
    "renders exactly as the dense grid), deflated unless --compress none; --half stores\n"
    "float16. --dense writes grid.npy from any scene, sparse ones included. Without either,\n"
    "a sparse scene stays sparse. The placement, decoder, background, step and camera of the\n"
    "direct render are kept.\n"
    "OUT ending in .vdb writes an OpenVDB file instead: a `density` fog grid and, for rgba\n"
    "and sh scenes, a Vec3f `color` grid (docs/FORMATS.md); OUT ending in .nvdb writes a\n"
    "NanoVDB file with the `density` grid alone.\n";

static const char *vx__dact_name(int a) {
    switch (a) {
    case VX_DACT_SOFTPLUS: return "softplus";
    case VX_DACT_EXP: return "exp";
    case VX_DACT_NONE: return "none";
    default: return "relu";
    }
}

static const char *vx__cact_name(int a) {
    switch (a) {
    case VX_CACT_SIGMOID: return "sigmoid";
    case VX_CACT_PLENOXELS: return "plenoxels";
    default: return "clamp";
    }
}

static cJSON *vx__vec(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *vx__decoder_json(const vx_decoder *d) {
    cJSON *o = cJSON_CreateObject();
    static const char *types[] = {"rgba", "sh", "scalar", "mlp"};
    cJSON_AddStringToObject(o, "type", types[d->type]);
    cJSON_AddNumberToObject(o, "density_scale", d->density_scale);
    if (d->type == VX_DEC_SCALAR) {
        double w[2] = {d->window_lo, d->window_hi};
        cJSON_AddItemToObject(o, "window", vx__vec(w, 2));
        cJSON *tf = cJSON_CreateArray();
        for (int i = 0; i < d->tf_n; i++) {
            double p[5];
            for (int k = 0; k < 5; k++) p[k] = d->tf[i][k];
            cJSON_AddItemToArray(tf, vx__vec(p, 5));
        }
        cJSON_AddItemToObject(o, "transfer_function", tf);
    } else {
        cJSON_AddStringToObject(o, "density_activation", vx__dact_name(d->density_act));
        cJSON_AddStringToObject(o, "color_activation", vx__cact_name(d->color_act));
        if (d->type == VX_DEC_SH) cJSON_AddNumberToObject(o, "degree", d->sh_degree);
        if (d->type == VX_DEC_MLP) {
            cJSON_AddNumberToObject(o, "layers", vx_decoder_mlp_layers(d));
            cJSON_AddStringToObject(o, "weights", "mlp.npy");
            if (vx_decoder_mlp_reflect(d)) cJSON_AddStringToObject(o, "direction", vx_mlp_dir_name(vx_decoder_mlp_dir_mode(d)));
        }
    }
    return o;
}

/* The manifest: grid file, placement, decoder, and the look of the direct render:
 * background, step and camera (the scene's, else the default one, Z-up for volumes). */
static char *vx__manifest(const vx_scene *s, const vx_grid *g, const char *name, const char *grid_file) {
    const vx_decoder *d = &s->dec;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", name);
    cJSON_AddStringToObject(root, "grid", grid_file);
    cJSON *m = cJSON_CreateArray();
    for (int r = 0; r < 4; r++) {
        double row[4] = {0, 0, 0, 1};
        if (r < 3) memcpy(row, g->i2w + 4 * r, sizeof row);
        cJSON_AddItemToArray(m, vx__vec(row, 4));
    }
    cJSON_AddItemToObject(root, "index_to_world", m);
    cJSON_AddBoolToObject(root, "align_corners", g->align_corners);
    cJSON_AddItemToObject(root, "decoder", vx__decoder_json(d));
    double bg[3] = {s->background[0], s->background[1], s->background[2]};
    cJSON_AddItemToObject(root, "background", vx__vec(bg, 3));
    cJSON_AddNumberToObject(root, "step", s->step);
    double eye[3], target[3], up[3], fov;
    vx_scene_default_camera(s, eye, target, up, &fov);
    if (s->has_camera) {
        memcpy(eye, s->eye, sizeof eye);
        memcpy(target, s->target, sizeof target);
        memcpy(up, s->up, sizeof up);
        fov = s->fov_deg;
    }
    cJSON *cam = cJSON_CreateObject();
    cJSON_AddItemToObject(cam, "eye", vx__vec(eye, 3));
    cJSON_AddItemToObject(cam, "target", vx__vec(target, 3));
    cJSON_AddItemToObject(cam, "up", vx__vec(up, 3));
    cJSON_AddNumberToObject(cam, "fov", fov);
    cJSON_AddItemToObject(root, "camera", cam);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

static const char *vx__basename(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int vx_cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    vx_load_opts lo;
    memset(&lo, 0, sizeof lo);
    int half = 0, sparse = 0, dense = 0, deflate = 1, sparse_only = 0;
    double threshold = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int need = !strcmp(a, "--raw") || !strcmp(a, "--spacing") || !strcmp(a, "--volume") ||
                   !strcmp(a, "--preset") || !strcmp(a, "--threshold") || !strcmp(a, "--compress") || !strcmp(a, "--grid");
        if (need && i + 1 >= argc) {
            fprintf(stderr, "voxray convert: %s needs a value\n%s", a, vx__usage);
            return 2;
        }
        if (!strcmp(a, "--raw")) lo.raw_spec = argv[++i];
        else if (!strcmp(a, "--spacing")) {
            if (vx_parse_vec3("--spacing", argv[++i], lo.spacing) != 0 || lo.spacing[0] <= 0 ||
                lo.spacing[1] <= 0 || lo.spacing[2] <= 0) {
                fprintf(stderr, "voxray convert: --spacing %s: expected three positive numbers\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--volume")) {
            if (vx_parse_int("--volume", argv[++i], 0, 1 << 20, &lo.volume_index) != 0) {
                fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
                return 2;
            }
        } else if (!strcmp(a, "--preset")) lo.preset = argv[++i];
        else if (!strcmp(a, "--grid")) lo.grid_name = argv[++i];
        else if (!strcmp(a, "--half")) half = 1;
        else if (!strcmp(a, "--allow-outside-data")) lo.allow_outside_data = 1;
        else if (!strcmp(a, "--max-memory") && i + 1 < argc) {
            size_t b;
            if (vx_parse_bytes(argv[++i], &b)) {
                fprintf(stderr, "voxray convert: --max-memory: '%s' is not a size such as 512M or 8G\n", argv[i]);
                return 2;
            }
            vx_mem_budget_set(b);
        }
        else if (!strcmp(a, "--sparse")) sparse = 1;
        else if (!strcmp(a, "--dense")) dense = 1;
        else if (!strcmp(a, "--threshold")) {
            sparse_only = 1;
            if (vx_parse_double("--threshold", argv[++i], 0.0, 1e30, &threshold) != 0) {
                fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
                return 2;
            }
        } else if (!strcmp(a, "--compress")) {
            sparse_only = 1;
            if (strcmp(argv[++i], "deflate") && strcmp(argv[i], "none")) {
                fprintf(stderr, "voxray convert: --compress %s: expected deflate or none\n", argv[i]);
                return 2;
            }
            deflate = !strcmp(argv[i], "deflate");
        }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(vx__usage, stdout); return 0; }
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "voxray convert: unknown flag %s\n%s", a, vx__usage);
            return 2;
        } else if (!in) in = a;
        else if (!out) out = a;
        else {
            fprintf(stderr, "voxray convert: unexpected argument %s\n%s", a, vx__usage);
            return 2;
        }
    }
    if (!in || !out) { fputs(vx__usage, stderr); return 2; }
    if (sparse && dense) { fprintf(stderr, "voxray convert: give --sparse or --dense, not both\n"); return 2; }
    if (sparse_only && !sparse) { fprintf(stderr, "voxray convert: --threshold and --compress need --sparse\n"); return 2; }

    /* the scene loader reads every input voxray renders (.npy and manifests included)
     * and gives the decoder, background and camera the direct render would use */
    vx_scene s;
    if (vx_scene_load(in, &lo, &s) != 0) {
        fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        return 1;
    }
    size_t outlen = strlen(out);
    if (outlen > 4 && !strcmp(out + outlen - 4, ".vdb")) {
#ifdef VX_HAVE_VDB
        const char *outs[1] = {out}, *flags[1] = {"OUT"}, *ins[2] = {in, s.grid.source};
        int wrc = vx_outputs_prepare(outs, flags, 1, ins, 2, 1) || vx_vdb_write(out, &s) ? -1 : 0;
#else
        int wrc = vx_error("%s: this voxray was built without OpenVDB (install libopenvdb-dev and rebuild)", out);
#endif
        if (wrc) fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        else printf("wrote %s\n", out);
        vx_scene_free(&s);
        return wrc ? 1 : 0;
    }
    if (outlen > 5 && !strcmp(out + outlen - 5, ".nvdb")) {
#ifdef VX_HAVE_NANOVDB
        const char *outs[1] = {out}, *flags[1] = {"OUT"}, *ins[2] = {in, s.grid.source};
        int wrc = vx_outputs_prepare(outs, flags, 1, ins, 2, 1) || vx_nvdb_write(out, &s) ? -1 : 0;
#else
        int wrc = vx_error("%s: this voxray was built without NanoVDB (install libnanovdb-dev and rebuild)", out);
#endif
        if (wrc) fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        else printf("wrote %s\n", out);
        vx_scene_free(&s);
        return wrc ? 1 : 0;
    }
    /* the storage written: --sparse thins to bricks (a sparse input brick by brick, never
     * made dense), --dense fills in, neither keeps the input's */
    vx_grid sg;
    memset(&sg, 0, sizeof sg);
    const vx_grid *g = &s.grid;
    int rc = 0;
    if (sparse && s.grid.sparse) rc = vx_sparse_rethin_inplace(&s.grid, &s.dec, (float)threshold);
    else if (sparse) {
        rc = vx_sparse_from_dense(&s.grid, &s.dec, (float)threshold, &sg);
        g = &sg;
    } else if (dense && s.grid.sparse) rc = vx_grid_densify(&s.grid);
    const char *file = g->sparse ? "grid.sparse.npz" : "grid.npy";

    char gpath[4096], json[4096], probe[4096], wpath[4096];
    vx_path_join(out, file, gpath, sizeof gpath);
    vx_path_join(out, "scene.json", json, sizeof json);
    vx_path_join(out, "mlp.npy", wpath, sizeof wpath); /* the mlp decoder's weights travel with the grid */
    int mlp = s.dec.type == VX_DEC_MLP;
    snprintf(probe, sizeof probe, "%s/.", out);
    char data_file[1024];
    vx_format_data_file(s.grid.source, &lo, data_file, sizeof data_file);
    const char *outs[3] = {gpath, json, wpath}, *flags[3] = {"OUTDIR", "OUTDIR", "OUTDIR"};
    const char *ins[4] = {in, s.path, s.grid.source, data_file[0] ? data_file : NULL};
    if (rc == 0) rc = vx_mkdirs_for(probe) || vx_outputs_prepare(outs, flags, mlp ? 3 : 2, ins, 4, 1) ? -1 : 0;
    char *text = NULL;
    if (rc == 0) {
        vx_outputs_stage_begin(); /* both files or neither */
        rc = g->sparse ? vx_sparse_write(gpath, g, half, deflate ? VX_SPARSE_DEFLATE : VX_SPARSE_STORE)
                       : vx_npy_write_grid(gpath, g, half);
        if (rc == 0 && mlp) rc = vx_mlp_save(wpath, vx_decoder_mlp_layers(&s.dec), vx_decoder_mlp_weights(&s.dec));
        if (rc == 0) {
            text = vx__manifest(&s, g, vx__basename(in), file);
            rc = text ? vx_write_file_atomic(json, text, strlen(text))
                      : vx_error("%s: cannot build the manifest", json);
        }
        rc = vx_outputs_stage_end(rc == 0);
    }
    free(text);
    if (rc != 0) {
        fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        vx_grid_free(&sg);
        vx_scene_free(&s);
        return 1;
    }
    if (g->sparse) {
        vx_sparse_stats st;
        vx_sparse_stats_of(g, &st);
        struct stat fs;
        double mib = stat(gpath, &fs) == 0 ? (double)fs.st_size / (1 << 20) : 0.0;
        printf("wrote %s (%d x %d x %d x %d, %s, %zu of %zu bricks = %.2f%%, %.1f MiB on disk, %.1f MiB in memory vs "
               "%.1f MiB dense) and %s\n", gpath, g->nx, g->ny, g->nz, g->nc, half ? "float16" : "float32", st.bricks,
               st.table_entries, 100.0 * st.fill, mib, (double)st.bytes_sparse / (1 << 20),
               (double)st.bytes_dense / (1 << 20), json);
    } else {
        printf("wrote %s (%d x %d x %d x %d, %s) and %s\n", gpath, g->nx, g->ny, g->nz, g->nc,
               half ? "float16" : vx_npy_grid_fits_int(g) ? vx_dtype_name(g->src_dtype) : "float32", json);
    }
    vx_grid_free(&sg);
    vx_scene_free(&s);
    return 0;
}
