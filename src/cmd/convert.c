/* cmd/convert.c - `voxray convert IN OUTDIR`: open any volume voxray reads and write its own
 * OUTDIR/grid.npy + OUTDIR/scene.json (placement, decoder, camera) so it re-opens fast.
 * main.c dispatches here; the manifest fields are those of docs/FORMAT.md. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "formats.h"
#include "npy.h"
#include "scene.h"
#include "sparse_grid.h"
#include "vx_common.h"

static const char *vx__usage =
    "usage: voxray convert IN OUTDIR [--raw X,Y,Z,dtype[,endian]] [--spacing sx,sy,sz]\n"
    "                      [--volume N] [--preset NAME] [--half]\n"
    "                      [--sparse [--threshold T] [--compress deflate|none] | --dense]\n"
    "Writes OUTDIR/grid.npy and OUTDIR/scene.json (open it with `voxray render OUTDIR`).\n"
    "--sparse writes OUTDIR/grid.sparse.npz instead: 8^3 bricks where the scene's decoder can\n"
    "give density (--threshold T also drops bricks whose cells reach at most T; default 0\n"
    "renders exactly as the dense grid), deflated unless --compress none; --half stores\n"
    "float16. --dense writes grid.npy from any scene, sparse ones included. With either,\n"
    "IN may be any scene (manifest, directory, .npy, .npz, volume file) and its placement,\n"
    "decoder, background and camera are kept.\n";

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
    static const char *types[] = {"rgba", "sh", "scalar"};
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
    }
    return o;
}

/* The manifest object: grid file, placement, decoder, background, a name. */
static cJSON *vx__manifest_root(const vx_grid *g, const vx_decoder *d, const char *name, const char *grid_file) {
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
    double bg[3] = {0, 0, 0};
    cJSON_AddItemToObject(root, "background", vx__vec(bg, 3));
    return root;
}

static char *vx__manifest(const vx_grid *g, const vx_decoder *d, const char *name) {
    cJSON *root = vx__manifest_root(g, d, name, "grid.npy");
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* The manifest of a loaded scene: placement, decoder, background, step, camera. */
static char *vx__scene_manifest(const vx_scene *s, const char *grid_file) {
    cJSON *root = vx__manifest_root(&s->grid, &s->dec, s->name, grid_file);
    double bg[3];
    for (int c = 0; c < 3; c++) { /* the shortest decimal that reads back as the same float */
        char num[32];
        snprintf(num, sizeof num, "%.7g", s->background[c]);
        bg[c] = strtod(num, NULL);
    }
    cJSON_ReplaceItemInObject(root, "background", vx__vec(bg, 3));
    cJSON_AddNumberToObject(root, "step", s->step);
    if (s->has_camera) {
        cJSON *cam = cJSON_CreateObject();
        cJSON_AddItemToObject(cam, "eye", vx__vec(s->eye, 3));
        cJSON_AddItemToObject(cam, "target", vx__vec(s->target, 3));
        cJSON_AddItemToObject(cam, "up", vx__vec(s->up, 3));
        cJSON_AddNumberToObject(cam, "fov", s->fov_deg);
        cJSON_AddItemToObject(root, "camera", cam);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* convert --sparse / --dense: any scene in, its own storage out. */
static int vx__convert_scene(const char *in, const char *out, const vx_load_opts *lo, int sparse, double threshold,
                             int half, int deflate) {
    vx_scene s;
    if (vx_scene_load(in, lo, &s) != 0) {
        fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        return 1;
    }
    vx_grid sg;
    memset(&sg, 0, sizeof sg);
    const vx_grid *g = &s.grid;
    int rc = 0;
    if (sparse) {
        /* a sparse input is thinned again brick by brick, never made dense */
        if (s.grid.sparse) rc = vx_sparse_rethin_inplace(&s.grid, &s.dec, (float)threshold);
        else {
            rc = vx_sparse_from_dense(&s.grid, &s.dec, (float)threshold, &sg);
            g = &sg;
        }
    } else {
        rc = vx_grid_densify(&s.grid);
    }
    const char *file = sparse ? "grid.sparse.npz" : "grid.npy";
    char gpath[4096], json[4096], probe[4096];
    vx_path_join(out, file, gpath, sizeof gpath);
    vx_path_join(out, "scene.json", json, sizeof json);
    snprintf(probe, sizeof probe, "%s/.", out);
    if (rc == 0) rc = vx_mkdirs_for(probe);
    if (rc == 0) rc = sparse ? vx_sparse_write(gpath, g, half, deflate ? VX_SPARSE_DEFLATE : VX_SPARSE_STORE)
                             : vx_npy_write_grid(gpath, g, half);
    if (rc == 0) {
        char *text = vx__scene_manifest(&s, file);
        rc = text ? vx_write_file_atomic(json, text, strlen(text)) : vx_error("%s: cannot build the manifest", json);
        free(text);
        if (rc != 0) remove(gpath); /* no half-written output */
    }
    if (rc != 0) {
        fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
    } else if (sparse) {
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
               half ? "float16" : "float32", json);
    }
    vx_grid_free(&sg);
    vx_scene_free(&s);
    return rc ? 1 : 0;
}

static const char *vx__basename(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int vx_cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *preset = NULL;
    vx_load_opts lo;
    memset(&lo, 0, sizeof lo);
    int half = 0, sparse = 0, dense = 0, deflate = 1, sparse_only = 0;
    double threshold = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int need = !strcmp(a, "--raw") || !strcmp(a, "--spacing") || !strcmp(a, "--volume") ||
                   !strcmp(a, "--preset") || !strcmp(a, "--threshold") || !strcmp(a, "--compress");
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
        } else if (!strcmp(a, "--preset")) preset = lo.preset = argv[++i];
        else if (!strcmp(a, "--half")) half = 1;
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
    if (sparse || dense) return vx__convert_scene(in, out, &lo, sparse, threshold, half, deflate);

    vx_grid g;
    vx_decoder d;
    int has_dec = 0;
    memset(&g, 0, sizeof g);
    memset(&d, 0, sizeof d);
    if (vx_format_load(in, &lo, &g, &d, &has_dec) != 0) {
        fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        return 1;
    }
    if (!has_dec && vx_scalar_decoder_init(&d, &g, preset) != 0) {
        fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        vx_grid_free(&g);
        return 1;
    }

    char npy[4096], json[4096], probe[4096];
    vx_path_join(out, "grid.npy", npy, sizeof npy);
    vx_path_join(out, "scene.json", json, sizeof json);
    snprintf(probe, sizeof probe, "%s/.", out);
    int rc = vx_mkdirs_for(probe);
    char *text = NULL;
    if (rc == 0) rc = vx_npy_write_grid(npy, &g, half);
    if (rc == 0) {
        text = vx__manifest(&g, &d, vx__basename(in));
        rc = text ? vx_write_file_atomic(json, text, strlen(text))
                  : vx_error("%s: cannot build the manifest", json);
        if (rc != 0) remove(npy); /* no half-written output */
    }
    free(text);
    if (rc != 0) {
        fprintf(stderr, "voxray convert: %s\n", vx_errmsg());
        vx_grid_free(&g);
        return 1;
    }
    printf("wrote %s (%d x %d x %d x %d, %s) and %s\n", npy, g.nx, g.ny, g.nz, g.nc,
           half ? "float16" : "float32", json);
    vx_grid_free(&g);
    return 0;
}
