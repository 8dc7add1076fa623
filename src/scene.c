/* scene.c - opens a scene: a JSON manifest (docs/FORMAT.md), a directory holding
 * scene.json, a bare .npy grid, or any volume format formats.h reads; then validates the
 * decoder against the grid and fills in defaults. Unknown manifest fields are errors. */
#include "scene.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats.h"
#include "mlp.h"
#include "npy.h"
#include "piece.h"
#include "sparse_grid.h"
#include "vx_common.h"

static int vx__ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcasecmp(s + n - k, suffix);
}

static int vx__is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- JSON helpers: every accessor names the manifest and the field ------------------- */

static int vx__check_keys(const cJSON *obj, const char *const *allowed, const char *file, const char *ctx) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (int i = 0; allowed[i]; i++) if (!strcmp(it->string, allowed[i])) ok = 1;
        if (!ok && strcmp(it->string, "comment") != 0)
            return vx_error("%s: unknown field '%s%s'", file, ctx, it->string);
    }
    return 0;
}

static int vx__num(const cJSON *v, const char *file, const char *field, double lo, double hi, double *out) {
    if (!cJSON_IsNumber(v)) return vx_error("%s: '%s' must be a number", file, field);
    double x = v->valuedouble;
    if (!isfinite(x)) return vx_error("%s: '%s' is not finite", file, field);
    if (x < lo || x > hi) return vx_error("%s: '%s' = %g is outside [%g, %g]", file, field, x, lo, hi);
    *out = x;
    return 0;
}

static int vx__vec(const cJSON *v, const char *file, const char *field, int n, double lo, double hi, double *out) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
        return vx_error("%s: '%s' must be an array of %d numbers", file, field, n);
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char name[64];
        snprintf(name, sizeof name, "%s[%d]", field, i);
        if (vx__num(e, file, name, lo, hi, out + i)) return -1;
    }
    return 0;
}

static int vx__str(const cJSON *v, const char *file, const char *field, const char **out) {
    if (!cJSON_IsString(v) || !v->valuestring[0]) return vx_error("%s: '%s' must be a non-empty string", file, field);
    *out = v->valuestring;
    return 0;
}

static int vx__pick(const char *s, const char *const *names, const char *file, const char *field, int *out) {
    for (int i = 0; names[i]; i++) if (!strcmp(s, names[i])) { *out = i; return 0; }
    char list[256] = "";
    for (int i = 0; names[i]; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 3);
        if (names[i + 1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    return vx_error("%s: '%s' = '%s' is not one of %s", file, field, s, list);
}

/* ---- decoder ------------------------------------------------------------------------------ */

static int vx__parse_decoder(const cJSON *j, const char *file, vx_scene *s) {
    static const char *keys[] = {"type", "density_activation", "color_activation", "density_scale", "degree",
                                 "window", "transfer_function", "preset", "shading", "layers", "weights", "direction",
                                 NULL};
    static const char *types[] = {"rgba", "sh", "scalar", "mlp", NULL};
    static const char *dacts[] = {"relu", "softplus", "exp", "none", NULL};
    vx_decoder *d = &s->dec;
    const char *str = NULL;
    int type;
    if (!cJSON_IsObject(j)) return vx_error("%s: 'decoder' must be an object", file);
    if (vx__check_keys(j, keys, file, "decoder.")) return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!t) return vx_error("%s: 'decoder.type' is missing (rgba, sh, scalar or mlp)", file);
    if (vx__str(t, file, "decoder.type", &str) || vx__pick(str, types, file, "decoder.type", &type)) return -1;
    memset(d, 0, sizeof *d);
    d->type = type;
    d->density_scale = 1.0f;

    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "density_activation"))) {
        if (type == VX_DEC_SCALAR) return vx_error("%s: 'decoder.density_activation' does not apply to the scalar decoder", file);
        if (vx__str(v, file, "decoder.density_activation", &str) ||
            vx__pick(str, dacts, file, "decoder.density_activation", &d->density_act)) return -1;
    }
    if (type == VX_DEC_RGBA) d->color_act = VX_CACT_CLAMP;
    if (type == VX_DEC_SH) d->color_act = VX_CACT_PLENOXELS;
    if (type == VX_DEC_MLP) d->color_act = VX_CACT_SIGMOID;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "color_activation"))) {
        if (vx__str(v, file, "decoder.color_activation", &str)) return -1;
        if (type == VX_DEC_RGBA && !strcmp(str, "clamp")) d->color_act = VX_CACT_CLAMP;
        else if (type != VX_DEC_SCALAR && !strcmp(str, "sigmoid")) d->color_act = VX_CACT_SIGMOID;
        else if (type == VX_DEC_SH && !strcmp(str, "plenoxels")) d->color_act = VX_CACT_PLENOXELS;
        else return vx_error("%s: 'decoder.color_activation' = '%s' is not valid for the %s decoder (%s)", file, str,
                             types[type], type == VX_DEC_RGBA ? "clamp, sigmoid" : type == VX_DEC_SH ? "plenoxels, sigmoid" :
                             type == VX_DEC_MLP ? "sigmoid" : "none apply");
    }
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers"), *weights = cJSON_GetObjectItemCaseSensitive(j, "weights");
    if (type != VX_DEC_MLP && (layers || weights))
        return vx_error("%s: 'decoder.layers' and 'decoder.weights' only apply to the mlp decoder", file);
    if (type == VX_DEC_MLP) {
        double nl = 2;
        if (layers && vx__num(layers, file, "decoder.layers", 1, 2, &nl)) return -1;
        if (nl != floor(nl)) return vx_error("%s: 'decoder.layers' must be 1 or 2", file);
        int nlayers = (int)nl;
        if (!weights) return vx_error("%s: 'decoder.weights' is missing (the mlp's .npy, relative to the manifest)", file);
        char dir[1024], wpath[2048];
        if (vx__str(weights, file, "decoder.weights", &str)) return -1;
        vx_dirname(file, dir, sizeof dir);
        if (vx_path_join(dir, str, wpath, sizeof wpath)) return -1;
        free(s->mlp);
        s->mlp = NULL;
        if (vx_mlp_load(wpath, nlayers, &s->mlp)) {
            char m2[1024];
            snprintf(m2, sizeof m2, "%s", vx_errmsg());
            return vx_error("%s: decoder.weights: %s", file, m2);
        }
        vx_decoder_set_mlp(d, nlayers, s->mlp);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "direction"))) { /* the network's direction input */
        static const char *dirs[] = {"view", "reflected", "view+reflected", NULL}; /* VX_MLP_DIR_*, vx_mlp_dir_name */
        if (type != VX_DEC_MLP) return vx_error("%s: 'decoder.direction' only applies to the mlp decoder", file);
        if (vx__str(v, file, "decoder.direction", &str) || vx__pick(str, dirs, file, "decoder.direction", &d->shade))
            return -1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "degree"))) {
        double deg;
        if (type != VX_DEC_SH) return vx_error("%s: 'decoder.degree' only applies to the sh decoder", file);
        if (vx__num(v, file, "decoder.degree", 0, 3, &deg)) return -1;
        if (deg != floor(deg)) return vx_error("%s: 'decoder.degree' must be an integer 0..3", file);
        d->sh_degree = (int)deg;
    } else if (type == VX_DEC_SH) {
        /* degree from the channel count */
        int nc = s->grid.nc, deg = -1;
        for (int k = 0; k <= 3; k++) if (1 + 3 * (k + 1) * (k + 1) == nc) deg = k;
        if (deg < 0) return vx_error("%s: sh decoder: %d channels is not 1 + 3(d+1)^2 for d in 0..3", file, nc);
        d->sh_degree = deg;
    }

    int explicit_scale = 0;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "density_scale"))) {
        double ds;
        if (vx__num(v, file, "decoder.density_scale", 0, 1e9, &ds)) return -1;
        d->density_scale = (float)ds;
        explicit_scale = 1;
    }

    const cJSON *win = cJSON_GetObjectItemCaseSensitive(j, "window");
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(j, "transfer_function");
    const cJSON *preset = cJSON_GetObjectItemCaseSensitive(j, "preset");
    const cJSON *shading = cJSON_GetObjectItemCaseSensitive(j, "shading");
    if (type != VX_DEC_SCALAR && (win || tf || preset || shading))
        return vx_error("%s: 'window', 'transfer_function', 'preset' and 'shading' only apply to the scalar decoder", file);
    if (shading && !cJSON_IsBool(shading)) return vx_error("%s: 'decoder.shading' must be true or false", file);
    if (type == VX_DEC_SCALAR) {
        if (tf && preset) return vx_error("%s: give either 'decoder.transfer_function' or 'decoder.preset', not both", file);
        if (s->grid.nc != 1) return vx_error("%s: scalar decoder needs 1 channel but the grid has %d", file, s->grid.nc);
        float scale = d->density_scale;
        const char *pname = "default";
        if (preset && vx__str(preset, file, "decoder.preset", &pname)) return -1;
        if (vx_scalar_decoder_init(d, &s->grid, pname)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", vx_errmsg());
            return vx_error("%s: decoder.preset: %s", file, msg);
        }
        if (explicit_scale) d->density_scale = scale;
        else if (tf) d->density_scale = 1.0f;
        if (win) {
            double w[2];
            if (vx__vec(win, file, "decoder.window", 2, -1e30, 1e30, w)) return -1;
            if (!(w[1] > w[0])) return vx_error("%s: 'decoder.window' needs lo < hi", file);
            d->window_lo = (float)w[0];
            d->window_hi = (float)w[1];
        }
        if (tf) {
            if (!cJSON_IsArray(tf)) return vx_error("%s: 'decoder.transfer_function' must be an array of [v, r, g, b, sigma]", file);
            int n = cJSON_GetArraySize(tf);
            if (n < 2 || n > VX_TF_MAX)
                return vx_error("%s: 'decoder.transfer_function' needs 2..%d control points, has %d", file, VX_TF_MAX, n);
            int i = 0;
            for (const cJSON *p = tf->child; p; p = p->next, i++) {
                char name[64];
                double q[5];
                snprintf(name, sizeof name, "decoder.transfer_function[%d]", i);
                if (vx__vec(p, file, name, 5, -1e30, 1e30, q)) return -1;
                for (int k = 0; k < 5; k++) d->tf[i][k] = (float)q[k];
            }
            d->tf_n = n;
        }
        if (shading) d->shade = cJSON_IsTrue(shading);
    }
    return 0;
}

/* ---- manifest ----------------------------------------------------------------------------- */

static int vx__load_grid_file(const char *path, const vx_load_opts *o, vx_scene *s, int *has_dec) {
    *has_dec = 0;
    if (vx__ends_with(path, ".npy"))
        return o->piece ? vx_piece_load_npy(path, o->piece, &s->grid) : vx_npy_load_grid(path, &s->grid);
    if (vx_sparse_is_file(path)) return vx_sparse_load_piece(path, o->piece, &s->grid); /* voxray's own sparse .npz */
    return vx_format_load(path, o, &s->grid, &s->dec, has_dec);
}

static int vx__parse_manifest(const char *file, const vx_load_opts *o, vx_scene *s) {
    static const char *keys[] = {"name", "grid", "bbox_min", "bbox_max", "index_to_world", "align_corners",
                                 "decoder", "background", "step", "camera", NULL};
    unsigned char *text;
    size_t len;
    if (vx_read_file(file, 16u << 20, &text, &len)) return -1;
    if (vx_json_refuse_nul((const char *)text, len, file)) { free(text); return -1; }
    cJSON *root = cJSON_ParseWithLength((const char *)text, len);
    long bad_at = root || !cJSON_GetErrorPtr() ? -1L : (long)(cJSON_GetErrorPtr() - (const char *)text);
    free(text);
    if (!root) return vx_error("%s: not valid JSON (near byte %ld)", file, bad_at);
    int rc = -1;
    const cJSON *v;
    const char *str = NULL;
    if (!cJSON_IsObject(root)) { vx_error("%s: the manifest must be a JSON object", file); goto done; }
    if (vx__check_keys(root, keys, file, "")) goto done;

    v = cJSON_GetObjectItemCaseSensitive(root, "grid");
    if (!v) { vx_error("%s: 'grid' is missing (the grid file, relative to the manifest)", file); goto done; }
    if (vx__str(v, file, "grid", &str)) goto done;
    char dir[1024], gpath[2048];
    vx_dirname(file, dir, sizeof dir);
    if (vx_path_join(dir, str, gpath, sizeof gpath)) goto done;
    {
        FILE *probe = vx_fopen_read(gpath);
        if (!probe) { char m2[1024]; snprintf(m2, sizeof m2, "%s", vx_errmsg()); vx_error("%s: 'grid' names a file that cannot be opened: %s", file, m2); goto done; }
        fclose(probe);
    }
    int has_dec;
    if (o && o->piece) { /* the reflected direction's probes read behind a piece's low faces */
        const cJSON *dj = cJSON_GetObjectItemCaseSensitive(root, "decoder");
        const cJSON *dd = cJSON_IsObject(dj) ? cJSON_GetObjectItemCaseSensitive(dj, "direction") : NULL;
        o->piece->lo_margin = cJSON_IsString(dd) && (!strcmp(dd->valuestring, vx_mlp_dir_name(VX_MLP_DIR_REFLECTED)) ||
                                                     !strcmp(dd->valuestring, vx_mlp_dir_name(VX_MLP_DIR_BOTH)));
    }
    if (vx__load_grid_file(gpath, o, s, &has_dec)) goto done;

    if ((v = cJSON_GetObjectItemCaseSensitive(root, "name"))) {
        if (vx__str(v, file, "name", &str)) goto done;
        snprintf(s->name, sizeof s->name, "%s", str);
    }

    int align = s->grid.align_corners;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "align_corners"))) {
        if (!cJSON_IsBool(v)) { vx_error("%s: 'align_corners' must be true or false", file); goto done; }
        align = cJSON_IsTrue(v);
    }
    const cJSON *bmin = cJSON_GetObjectItemCaseSensitive(root, "bbox_min");
    const cJSON *bmax = cJSON_GetObjectItemCaseSensitive(root, "bbox_max");
    const cJSON *aff = cJSON_GetObjectItemCaseSensitive(root, "index_to_world");
    if ((bmin || bmax) && aff) { vx_error("%s: give either bbox_min/bbox_max or index_to_world, not both", file); goto done; }
    if (!bmin != !bmax) { vx_error("%s: bbox_min and bbox_max must be given together", file); goto done; }
    if (bmin) {
        double lo[3], hi[3];
        if (vx__vec(bmin, file, "bbox_min", 3, -1e12, 1e12, lo) || vx__vec(bmax, file, "bbox_max", 3, -1e12, 1e12, hi)) goto done;
        for (int a = 0; a < 3; a++)
            if (!(hi[a] > lo[a])) { vx_error("%s: bbox_max[%d] must be greater than bbox_min[%d]", file, a, a); goto done; }
        vx_grid_set_bbox(&s->grid, lo, hi, align);
    } else if (aff) {
        if (!cJSON_IsArray(aff) || cJSON_GetArraySize(aff) != 4) { vx_error("%s: 'index_to_world' must be a 4x4 array (rows)", file); goto done; }
        double m[16];
        int r = 0;
        for (const cJSON *row = aff->child; row; row = row->next, r++) {
            char name[32];
            snprintf(name, sizeof name, "index_to_world[%d]", r);
            if (vx__vec(row, file, name, 4, -1e12, 1e12, m + 4 * r)) goto done;
        }
        if (m[12] != 0 || m[13] != 0 || m[14] != 0 || m[15] != 1) { vx_error("%s: 'index_to_world' last row must be [0, 0, 0, 1]", file); goto done; }
        memcpy(s->grid.i2w, m, sizeof(double) * 12);
        s->grid.align_corners = align;
    } else {
        s->grid.align_corners = align;
    }
    float w2i[12];
    if (vx_grid_world_to_index(&s->grid, w2i)) { char m2[1024]; snprintf(m2, sizeof m2, "%s", vx_errmsg()); vx_error("%s: %s", file, m2); goto done; }

    if ((v = cJSON_GetObjectItemCaseSensitive(root, "decoder"))) {
        if (vx__parse_decoder(v, file, s)) goto done;
    } else if (!has_dec && vx_scene_default_decoder(s)) {
        char m2[1024]; snprintf(m2, sizeof m2, "%s", vx_errmsg()); vx_error("%s: %s", file, m2); goto done;
    }
    if (vx_decoder_validate(&s->dec, s->grid.nc, file)) goto done;

    if ((v = cJSON_GetObjectItemCaseSensitive(root, "background"))) {
        double bg[3];
        if (vx__vec(v, file, "background", 3, 0, 1, bg)) goto done;
        for (int c = 0; c < 3; c++) s->background[c] = (float)bg[c];
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "step"))) {
        double st;
        if (vx__num(v, file, "step", 1e-3, 16, &st)) goto done;
        s->step = (float)st;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "camera"))) {
        static const char *ckeys[] = {"eye", "target", "up", "fov", NULL};
        if (!cJSON_IsObject(v)) { vx_error("%s: 'camera' must be an object", file); goto done; }
        if (vx__check_keys(v, ckeys, file, "camera.")) goto done;
        const cJSON *c;
        if (!(c = cJSON_GetObjectItemCaseSensitive(v, "eye"))) { vx_error("%s: 'camera.eye' is missing", file); goto done; }
        if (vx__vec(c, file, "camera.eye", 3, -1e12, 1e12, s->eye)) goto done;
        if ((c = cJSON_GetObjectItemCaseSensitive(v, "target")) && vx__vec(c, file, "camera.target", 3, -1e12, 1e12, s->target)) goto done;
        if ((c = cJSON_GetObjectItemCaseSensitive(v, "up")) && vx__vec(c, file, "camera.up", 3, -1e12, 1e12, s->up)) goto done;
        if ((c = cJSON_GetObjectItemCaseSensitive(v, "fov")) && vx__num(c, file, "camera.fov", 1, 179, &s->fov_deg)) goto done;
        s->has_camera = 1;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

/* ---- public ---------------------------------------------------------------------------- */

int vx_scene_default_decoder(vx_scene *s) {
    int nc = s->grid.nc;
    memset(&s->dec, 0, sizeof s->dec);
    if (nc == 1) return vx_scalar_decoder_init(&s->dec, &s->grid, NULL);
    s->dec.density_scale = 1.0f;
    if (nc == 4) { s->dec.type = VX_DEC_RGBA; return 0; }
    for (int d = 0; d <= 3; d++) {
        if (1 + 3 * (d + 1) * (d + 1) == nc) {
            s->dec.type = VX_DEC_SH;
            s->dec.sh_degree = d;
            s->dec.color_act = VX_CACT_PLENOXELS;
            return 0;
        }
    }
    return vx_error("%s: %d channels match no default decoder (1 scalar, 4 rgba, 4/13/28/49 sh); "
                    "write a manifest with a 'decoder'", s->grid.source, nc);
}

int vx_scene_load(const char *path, const vx_load_opts *opts, vx_scene *s) {
    static const vx_load_opts none;
    const vx_load_opts *o = opts ? opts : &none;
    memset(s, 0, sizeof *s);
    s->background[0] = s->background[1] = s->background[2] = 1.0f;
    s->step = 0.5f;
    s->up[1] = 1.0;
    s->fov_deg = 40.0;
    char file[1000];
    if (strlen(path) > sizeof file - sizeof "/scene.json")
        return vx_error("%.80s...: path is longer than %zu bytes", path, sizeof file - sizeof "/scene.json");
    if (vx__is_dir(path)) snprintf(file, sizeof file, "%s/scene.json", path);
    else snprintf(file, sizeof file, "%s", path);
    snprintf(s->path, sizeof s->path, "%s", file);
    {
        /* scene name: manifest dir or file stem */
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s", vx__is_dir(path) ? path : file);
        size_t n = strlen(tmp);
        while (n > 1 && tmp[n - 1] == '/') tmp[--n] = 0;
        const char *base = strrchr(tmp, '/');
        base = base ? base + 1 : tmp;
        size_t bl = strlen(base) < sizeof s->name - 1 ? strlen(base) : sizeof s->name - 1;
        memcpy(s->name, base, bl); /* names longer than the field are cut */
        s->name[bl] = 0;
        if (!vx__is_dir(path)) { char *dot = strchr(s->name, '.'); if (dot && dot != s->name) *dot = 0; }
    }
    int rc;
    if (o->raw_spec) {
        int has_dec;
        rc = vx__load_grid_file(file, o, s, &has_dec);
        if (!rc && !has_dec) rc = vx_scene_default_decoder(s);
        s->z_up = 1;
    } else if (vx__ends_with(file, ".json")) {
        rc = vx__parse_manifest(file, o, s);
    } else {
        int has_dec;
        rc = vx__load_grid_file(file, o, s, &has_dec);
        if (!rc && !has_dec) rc = vx_scene_default_decoder(s);
        s->z_up = !vx__ends_with(file, ".npy") && !s->grid.sparse; /* medical and NeRF data: +Z is up */
        if (!rc) {
            float w2i[12];
            rc = vx_grid_world_to_index(&s->grid, w2i);
        }
        if (!rc) rc = vx_decoder_validate(&s->dec, s->grid.nc, file);
    }
    if (!rc && o->preset) {
        if (s->dec.type != VX_DEC_SCALAR) rc = vx_error("%s: --preset applies only to scalar volumes", file);
        else rc = vx_tf_preset(&s->dec, o->preset);
    }
    if (!rc && s->grid.align_corners && (s->grid.nx < 2 || s->grid.ny < 2 || s->grid.nz < 2))
        rc = vx_error("%s: align_corners needs at least 2 samples per axis (grid is %dx%dx%d)", file,
                      s->grid.nx, s->grid.ny, s->grid.nz);
    if (!rc && !s->grid.sparse) { /* the sparse reader checks its values itself */
        size_t n = vx_grid_count(&s->grid);
        for (size_t i = 0; i < n; i++)
            if (!(fabsf(s->grid.data[i]) <= VX_MAX_GRID_VALUE)) { /* also NaN */
                rc = vx_error("%s: grid value %zu (voxel %zu, channel %zu) is %g; values must be finite and "
                              "within +-%g (sums of larger ones overflow float)", s->grid.source, i,
                              i / (size_t)s->grid.nc, i % (size_t)s->grid.nc, s->grid.data[i], VX_MAX_GRID_VALUE);
                break;
            }
    }
    if (!rc) vx_scene_find_content(s);
    if (rc) vx_scene_free(s);
    return rc;
}

void vx_scene_free(vx_scene *s) {
    vx_grid_free(&s->grid);
    free(s->mlp);
    s->mlp = NULL;
    if (s->dec.type == VX_DEC_MLP) vx_decoder_set_mlp(&s->dec, vx_decoder_mlp_layers(&s->dec), NULL);
}

void vx_scene_find_content(vx_scene *s) {
    const vx_grid *g = &s->grid;
    s->has_content = 0;
    if (s->dec.type != VX_DEC_SCALAR || !g->data) return;
    /* per-axis profiles of decoded density: the box holding all but 0.2% of the density
     * on each side, so that faint noise in the air does not stretch it to the grid */
    int n[3] = {g->nx, g->ny, g->nz};
    double *prof[3];
    prof[0] = vx_calloc((size_t)(n[0] + n[1] + n[2]), sizeof(double), "content profile");
    if (!prof[0]) { vx_clear_error(); return; }
    prof[1] = prof[0] + n[0];
    prof[2] = prof[1] + n[1];
    float rgb[3], raw[VX_MAX_CHANNELS] = {0};
    vx_vec3 dir = vx_v3(0, 0, 1);
    double total = 0;
    size_t i = 0;
    for (int z = 0; z < g->nz; z++)
        for (int y = 0; y < g->ny; y++)
            for (int x = 0; x < g->nx; x++, i++) {
                raw[0] = g->data[i * (size_t)g->nc];
                float sigma = vx_decode(&s->dec, raw, dir, rgb);
                if (!(sigma > 0.0f)) continue;
                prof[0][x] += sigma; prof[1][y] += sigma; prof[2][z] += sigma;
                total += sigma;
            }
    float blo[3], bhi[3];
    vx_grid_index_box(g, blo, bhi);
    double ilo[3], ihi[3];
    int smaller = 0;
    for (int a = 0; a < 3 && total > 0; a++) {
        int lo = 0, hi = n[a] - 1;
        for (double acc = 0; lo < n[a] - 1 && (acc += prof[a][lo]) < 0.002 * total; lo++) {}
        for (double acc = 0; hi > lo && (acc += prof[a][hi]) < 0.002 * total; hi--) {}
        ilo[a] = fmax(lo - 1.0, blo[a]);
        ihi[a] = fmin(hi + 1.0, bhi[a]);
        smaller |= ilo[a] > blo[a] || ihi[a] < bhi[a];
    }
    free(prof[0]);
    if (!(total > 0) || !smaller) return; /* nothing visible, or all of it: the grid box */
    for (int a = 0; a < 3; a++) { s->content_lo[a] = INFINITY; s->content_hi[a] = -INFINITY; }
    for (int c = 0; c < 8; c++) {
        double p[3] = {c & 1 ? ihi[0] : ilo[0], c & 2 ? ihi[1] : ilo[1], c & 4 ? ihi[2] : ilo[2]};
        for (int a = 0; a < 3; a++) {
            const double *m = g->i2w + 4 * a;
            double w = m[0] * p[0] + m[1] * p[1] + m[2] * p[2] + m[3];
            s->content_lo[a] = fmin(s->content_lo[a], w);
            s->content_hi[a] = fmax(s->content_hi[a], w);
        }
    }
    s->has_content = 1;
}

void vx_scene_default_camera(const vx_scene *s, double eye[3], double target[3], double up[3], double *fov_deg) {
    double lo[3], hi[3];
    vx_grid_world_bounds(&s->grid, lo, hi);
    if (s->has_content) {
        memcpy(lo, s->content_lo, sizeof lo);
        memcpy(hi, s->content_hi, sizeof hi);
    }
    for (int a = 0; a < 3; a++) target[a] = 0.5 * (lo[a] + hi[a]);
    double fov = 40.0, az = 35.0 * M_PI / 180.0, el = 25.0 * M_PI / 180.0, dir[3];
    if (s->z_up) { /* look from the front (+Y, anterior in RAS), Z up */
        dir[0] = cos(el) * sin(az); dir[1] = cos(el) * cos(az); dir[2] = sin(el);
        up[0] = 0; up[1] = 0; up[2] = 1;
    } else {
        dir[0] = cos(el) * sin(az); dir[1] = sin(el); dir[2] = cos(el) * cos(az);
        up[0] = 0; up[1] = 1; up[2] = 0;
    }
    /* camera basis: back = dir, right = up x back, true up = back x right */
    double r[3] = {up[1] * dir[2] - up[2] * dir[1], up[2] * dir[0] - up[0] * dir[2], up[0] * dir[1] - up[1] * dir[0]};
    double rl = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int a = 0; a < 3; a++) r[a] /= rl;
    double u[3] = {dir[1] * r[2] - dir[2] * r[1], dir[2] * r[0] - dir[0] * r[2], dir[0] * r[1] - dir[1] * r[0]};
    /* the nearest distance at which all 8 box corners fall inside the field of view */
    double tn = tan(0.5 * fov * M_PI / 180.0), dist = 0;
    for (int c = 0; c < 8; c++) {
        double p[3] = {(c & 1 ? hi[0] : lo[0]) - target[0], (c & 2 ? hi[1] : lo[1]) - target[1],
                       (c & 4 ? hi[2] : lo[2]) - target[2]};
        double x = fabs(p[0] * r[0] + p[1] * r[1] + p[2] * r[2]), y = fabs(p[0] * u[0] + p[1] * u[1] + p[2] * u[2]);
        double z = p[0] * dir[0] + p[1] * dir[1] + p[2] * dir[2];
        dist = fmax(dist, z + fmax(x, y) / tn);
    }
    dist *= 1.05;
    for (int a = 0; a < 3; a++) eye[a] = target[a] + dist * dir[a];
    *fov_deg = fov;
}
