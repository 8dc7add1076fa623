/* cli.c - flags shared by render, view and bench (scene loading, camera, decoder
 * overrides, render options) and the camera they describe. Values are checked here, so
 * every command reports a bad flag the same way: the flag, the value, what was wanted. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "make_scene.h"
#include "sparse_grid.h"
#include "vx_common.h"

void vx_cli_common_init(vx_cli_common *c) {
    memset(c, 0, sizeof *c);
    c->width = c->height = 800;
    vx_render_opts_default(&c->ropts);
    c->backend = VX_BACKEND_AUTO;
    c->shading = -1;
}

int vx_parse_double(const char *flag, const char *s, double lo, double hi, double *v) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x)) return vx_error("%s: '%s' is not a number", flag, s);
    if (x < lo || x > hi) return vx_error("%s: %g is outside [%g, %g]", flag, x, lo, hi);
    *v = x;
    return 0;
}

int vx_parse_int(const char *flag, const char *s, long lo, long hi, int *v) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno) return vx_error("%s: '%s' is not an integer", flag, s);
    if (x < lo || x > hi) return vx_error("%s: %ld is outside [%ld, %ld]", flag, x, lo, hi);
    *v = (int)x;
    return 0;
}

int vx_parse_list(const char *flag, const char *s, char *buf, size_t cap, char **items, int max, int *n) {
    if (snprintf(buf, cap, "%s", s) >= (int)cap) return vx_error("%s: '%.32s...' is too long", flag, s);
    char *p = buf;
    for (*n = 0;; p++) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p) return vx_error("%s: '%s' has an empty value", flag, s);
        if (*n == max) return vx_error("%s: '%s' has more than %d values", flag, s, max);
        items[(*n)++] = p;
        if (!comma) return 0;
        p = comma;
    }
}

int vx_parse_vec3(const char *flag, const char *s, double v[3]) {
    char buf[256], *it[3];
    int n;
    if (vx_parse_list(flag, s, buf, sizeof buf, it, 3, &n) || n != 3)
        return vx_error("%s: '%s' must be three numbers x,y,z", flag, s);
    for (int i = 0; i < 3; i++)
        if (vx_parse_double(flag, it[i], -1e12, 1e12, &v[i])) return -1;
    return 0;
}

int vx_parse_size(const char *flag, const char *s, int *w, int *h) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    char *x = strchr(buf, 'x');
    if (!x) return vx_error("%s: '%s' must be WIDTHxHEIGHT, e.g. 800x600", flag, s);
    *x = 0;
    if (vx_parse_int(flag, buf, 1, 16384, w) || vx_parse_int(flag, x + 1, 1, 16384, h)) return -1;
    return 0;
}

const char *vx_cli_common_help(void) {
    return "Scene and camera:\n"
           "  --size WxH              image size (default 800x800)\n"
           "  --eye x,y,z --target x,y,z --up x,y,z --fov DEG   pinhole camera (horizontal fov)\n"
           "  --azimuth DEG --elevation DEG --distance D        orbit about the grid centre\n"
           "  --raw X,Y,Z,DTYPE[,le|be]  read a headerless raw file (dtypes uint8 int8 uint16\n"
           "                          int16 uint32 int32 float32 float64)\n"
           "  --spacing sx,sy,sz      voxel spacing for --raw and files without one (.den)\n"
           "  --volume N              which volume of a 4-D file (default 0)\n"
           "  --grid NAME             which grid of a .vdb file (default density, else the first)\n"
           "  make-scene:NAME:RES     as SCENE: make-scene NAME --sparse --res RES built in\n"
           "                          memory, no file (big volumes: make-scene:shell:4096)\n"
           "  --max-memory SIZE       memory one grid may take, e.g. 512M or 32G (default: half\n"
           "                          of this machine's memory, at most 16G)\n"
           "  --allow-outside-data    read a detached header's data file even when it lies\n"
           "                          outside the header's directory\n"
           "Decoder:\n"
           "  --density-scale S       multiply density\n"
           "  --preset NAME           transfer function for scalar volumes\n"
           "                          (default, ct-bone, ct-soft, mri, grey, fire)\n"
           "  --window LO,HI          scalar value window\n"
           "  --shading on|off        scalar: light by the gradient (default on)\n"
           "Rendering:\n"
           "  --step S                segment length in voxels (default: the scene's, 0.5)\n"
           "  --stop T                early termination when transmittance < T (default 1e-4; 0 off)\n"
           "  --background r,g,b      background colour, 0..1\n"
           "  --backend auto|cpu|cuda (default auto)\n"
           "  --threads N             CPU threads (default: all cores)\n"
           "  --half                  CUDA: store the grid as float16\n"
           "  --mlp-tensor-cores      CUDA, mlp scenes: the network's hidden layers on the tensor\n"
           "                          cores (TF32 operands, FP32 sums; the default where the GPU\n"
           "                          has them, sm_80 and up; given, an error where it has not)\n"
           "  --no-mlp-tensor-cores   CUDA, mlp scenes: the network in FP32\n"
           "  --no-skip               disable empty-space skipping\n"
           "  --jitter SEED           offset each pixel's samples by a hash of (SEED, pixel):\n"
           "                          noise instead of ring artefacts (0: off, the default)\n";
}

/* value of a flag given as "--flag value" or "--flag=value" */
static const char *vx__value(const char *name, int *i, int argc, char **argv, int *matched) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    *matched = 0;
    if (strncmp(a, name, n)) return NULL;
    if (a[n] == '=') { *matched = 1; return a + n + 1; }
    if (a[n] != 0) return NULL;
    *matched = 1;
    if (*i + 1 >= argc) { vx_error("%s needs a value", name); return NULL; }
    return argv[++*i];
}

int vx_cli_parse_common(vx_cli_common *c, int *i, int argc, char **argv) {
    const char *a = argv[*i], *v;
    int m;
    double d;
    if (!strcmp(a, "--half")) { c->ropts.half = 1; return 1; }
    if (!strcmp(a, "--mlp-tensor-cores")) { c->ropts.mlp_tc = 1; return 1; }
    if (!strcmp(a, "--no-mlp-tensor-cores")) { c->ropts.mlp_tc = -1; return 1; }
    if (!strcmp(a, "--no-skip")) { c->ropts.no_skip = 1; return 1; }
    if (!strcmp(a, "--allow-outside-data")) { c->load.allow_outside_data = 1; return 1; }
#define VX_FLAG(name) (v = vx__value(name, i, argc, argv, &m), m)
    if (VX_FLAG("--size")) return v && !vx_parse_size("--size", v, &c->width, &c->height) ? 1 : -1;
    if (VX_FLAG("--eye")) { c->has_eye = 1; return v && !vx_parse_vec3("--eye", v, c->eye) ? 1 : -1; }
    if (VX_FLAG("--target")) { c->has_target = 1; return v && !vx_parse_vec3("--target", v, c->target) ? 1 : -1; }
    if (VX_FLAG("--up")) { c->has_up = 1; return v && !vx_parse_vec3("--up", v, c->up) ? 1 : -1; }
    if (VX_FLAG("--fov")) { c->has_fov = 1; return v && !vx_parse_double("--fov", v, 1, 179, &c->fov) ? 1 : -1; }
    if (VX_FLAG("--azimuth")) { c->has_azimuth = 1; return v && !vx_parse_double("--azimuth", v, -1e6, 1e6, &c->azimuth) ? 1 : -1; }
    if (VX_FLAG("--elevation")) { c->has_elevation = 1; return v && !vx_parse_double("--elevation", v, -89.9, 89.9, &c->elevation) ? 1 : -1; }
    if (VX_FLAG("--distance")) { c->has_distance = 1; return v && !vx_parse_double("--distance", v, 1e-9, 1e12, &c->distance) ? 1 : -1; }
    if (VX_FLAG("--step")) {
        if (!v || vx_parse_double("--step", v, 1e-3, 16, &d)) return -1;
        c->ropts.step = (float)d;
        return 1;
    }
    if (VX_FLAG("--stop")) {
        if (!v || vx_parse_double("--stop", v, 0, 0.999, &d)) return -1;
        c->ropts.stop = (float)d;
        return 1;
    }
    if (VX_FLAG("--background")) {
        double bg[3];
        if (!v || vx_parse_vec3("--background", v, bg)) return -1;
        for (int k = 0; k < 3; k++) {
            if (bg[k] < 0 || bg[k] > 1) return vx_error("--background: components must be in [0, 1]");
            c->ropts.background[k] = (float)bg[k];
        }
        c->ropts.has_background = 1;
        return 1;
    }
    if (VX_FLAG("--threads")) return v && !vx_parse_int("--threads", v, 1, 1024, &c->ropts.threads) ? 1 : -1;
    if (VX_FLAG("--backend")) return v && !vx_backend_parse(v, &c->backend) ? 1 : -1;
    if (VX_FLAG("--density-scale")) {
        if (!v || vx_parse_double("--density-scale", v, 0, 1e9, &d)) return -1;
        c->has_density_scale = 1;
        c->density_scale = (float)d;
        return 1;
    }
    if (VX_FLAG("--preset")) { /* an unknown name is a usage error, found before loading */
        vx_decoder probe;
        memset(&probe, 0, sizeof probe);
        if (!v || vx_tf_preset(&probe, v)) return -1;
        c->preset = v;
        c->load.preset = v;
        return 1;
    }
    if (VX_FLAG("--window")) {
        char buf[128], *comma;
        if (!v) return -1;
        snprintf(buf, sizeof buf, "%s", v);
        if (!(comma = strchr(buf, ','))) return vx_error("--window: '%s' must be LO,HI", v);
        *comma = 0;
        double lo, hi;
        if (vx_parse_double("--window", buf, -1e30, 1e30, &lo) || vx_parse_double("--window", comma + 1, -1e30, 1e30, &hi)) return -1;
        if (!(hi > lo)) return vx_error("--window: LO must be less than HI");
        c->has_window = 1;
        c->window[0] = (float)lo;
        c->window[1] = (float)hi;
        return 1;
    }
    if (VX_FLAG("--shading")) {
        if (!v) return -1;
        if (strcmp(v, "on") && strcmp(v, "off")) return vx_error("--shading: '%s' is not on or off", v);
        c->shading = !strcmp(v, "on");
        return 1;
    }
    if (VX_FLAG("--jitter")) {
        int seed;
        if (!v || vx_parse_int("--jitter", v, 0, 2147483647, &seed)) return -1;
        c->ropts.jitter = (unsigned)seed;
        return 1;
    }
    if (VX_FLAG("--raw")) { c->load.raw_spec = v; return v ? 1 : -1; }
    if (VX_FLAG("--grid")) { c->load.grid_name = v; return v ? 1 : -1; }
    if (VX_FLAG("--spacing")) {
        if (!v || vx_parse_vec3("--spacing", v, c->load.spacing)) return -1;
        for (int k = 0; k < 3; k++)
            if (!(c->load.spacing[k] > 0)) return vx_error("--spacing: components must be > 0");
        return 1;
    }
    if (VX_FLAG("--max-memory")) {
        size_t b;
        if (!v) return -1;
        if (vx_parse_bytes(v, &b)) return vx_error("--max-memory: '%s' is not a size such as 512M or 8G", v);
        vx_mem_budget_set(b);
        return 1;
    }
    if (VX_FLAG("--volume")) return v && !vx_parse_int("--volume", v, 0, 1 << 20, &c->load.volume_index) ? 1 : -1;
#undef VX_FLAG
    return 0;
}

/* "make-scene:NAME:RES": make-scene NAME --sparse --res RES built in memory, so a 4096^3
 * scene renders without writing (and reading back) tens of GB. */
static int vx__procedural_scene(const char *spec, vx_scene *s) {
    char name[64];
    const char *rest = spec + strlen(VX_CLI_PROCEDURAL), *colon = strchr(rest, ':');
    int res;
    if (!colon || colon == rest || (size_t)(colon - rest) >= sizeof name)
        return vx_error("%s: expected %sNAME:RES, e.g. %sshell:2048", spec, VX_CLI_PROCEDURAL, VX_CLI_PROCEDURAL);
    memcpy(name, rest, (size_t)(colon - rest));
    name[colon - rest] = 0;
    if (vx_parse_int(spec, colon + 1, VX_MAKE_SCENE_RES_MIN, VX_MAKE_SCENE_SPARSE_RES_MAX, &res)) return -1;
    memset(s, 0, sizeof *s);
    return vx_make_scene_sparse(name, res, 0.0f, &s->grid, s);
}

int vx_cli_load_scene(const vx_cli_common *c, vx_scene *s) {
    if (!c->scene_path) return vx_error("no scene given");
    if (!strncmp(c->scene_path, VX_CLI_PROCEDURAL, strlen(VX_CLI_PROCEDURAL))) {
        if (vx__procedural_scene(c->scene_path, s)) return -1;
    } else if (vx_scene_load(c->scene_path, &c->load, s)) return -1;
    if ((c->has_window || c->preset || c->shading >= 0) && s->dec.type != VX_DEC_SCALAR) {
        vx_scene_free(s);
        return vx_error("%s: --window, --preset and --shading apply only to scalar volumes", c->scene_path);
    }
    if (c->shading >= 0) s->dec.shade = c->shading;
    if (c->has_density_scale) s->dec.density_scale = c->density_scale;
    if (c->has_window) { s->dec.window_lo = c->window[0]; s->dec.window_hi = c->window[1]; }
    if (c->has_window || c->has_density_scale) vx_scene_find_content(s);
    return 0;
}

/* The camera without orbit flags: the scene's (or the default one) with the flags applied. */
static void vx__base_camera(const vx_cli_common *c, const vx_scene *s, double eye[3], double target[3], double up[3],
                            double *fov) {
    vx_scene_default_camera(s, eye, target, up, fov);
    if (s->has_camera) {
        memcpy(eye, s->eye, 3 * sizeof *eye);
        memcpy(target, s->target, 3 * sizeof *target);
        memcpy(up, s->up, 3 * sizeof *up);
        *fov = s->fov_deg;
    }
    if (c->has_fov) *fov = c->fov;
    if (c->has_up) memcpy(up, c->up, 3 * sizeof *up);
    if (c->has_eye) memcpy(eye, c->eye, 3 * sizeof *eye);
    if (c->has_target) memcpy(target, c->target, 3 * sizeof *target);
}

int vx_cli_camera(const vx_cli_common *c, const vx_scene *s, int width, int height, vx_camera *cam) {
    double eye[3], target[3], up[3], fov;
    vx_scene_default_camera(s, eye, target, up, &fov);
    double dlo[3], dhi[3], center[3];
    vx_grid_world_bounds(&s->grid, dlo, dhi);
    for (int a = 0; a < 3; a++) center[a] = 0.5 * (dlo[a] + dhi[a]);
    double default_dist = sqrt((eye[0] - target[0]) * (eye[0] - target[0]) + (eye[1] - target[1]) * (eye[1] - target[1]) +
                               (eye[2] - target[2]) * (eye[2] - target[2]));
    if (s->has_camera) {
        memcpy(eye, s->eye, sizeof eye);
        memcpy(target, s->target, sizeof target);
        memcpy(up, s->up, sizeof up);
        fov = s->fov_deg;
    }
    if (c->has_fov) fov = c->fov;
    if (c->has_up) memcpy(up, c->up, sizeof up);
    if (c->has_azimuth || c->has_elevation || c->has_distance) {
        if (c->has_eye || c->has_target) return vx_error("use either --eye/--target or --azimuth/--elevation/--distance");
        double dist = c->has_distance ? c->distance : default_dist * tan(0.5 * 40.0 * M_PI / 180.0) / tan(0.5 * fov * M_PI / 180.0);
        return vx_camera_orbit(cam, center, c->has_azimuth ? c->azimuth : 35.0, c->has_elevation ? c->elevation : 25.0,
                               dist, up, fov, width, height);
    }
    if (c->has_eye) memcpy(eye, c->eye, sizeof eye);
    if (c->has_target) memcpy(target, c->target, sizeof target);
    return vx_camera_look_at(cam, eye, target, up, fov, width, height);
}

int vx_cli_usage_error(const char *cmd, const char *msg) {
    fprintf(stderr, "voxray %s: %s (see voxray %s --help)\n", cmd, msg, cmd);
    return 2;
}

int vx_cli_camera_turn(const vx_cli_common *c, const vx_scene *s, double deg, int width, int height, vx_camera *cam) {
    if (c->has_azimuth || c->has_elevation || c->has_distance) {
        vx_cli_common cc = *c;
        cc.azimuth = (cc.has_azimuth ? cc.azimuth : 35.0) + deg;
        cc.has_azimuth = 1;
        return vx_cli_camera(&cc, s, width, height, cam);
    }
    double eye[3], target[3], up[3], fov;
    vx__base_camera(c, s, eye, target, up, &fov);
    /* Rodrigues: rotate eye - target about the unit up axis */
    double ul = sqrt(up[0] * up[0] + up[1] * up[1] + up[2] * up[2]);
    if (!(ul > 0)) return vx_error("camera up vector is zero");
    double k[3] = {up[0] / ul, up[1] / ul, up[2] / ul}, v[3], kv[3], kd, a = deg * M_PI / 180.0;
    for (int i = 0; i < 3; i++) v[i] = eye[i] - target[i];
    kd = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    kv[0] = k[1] * v[2] - k[2] * v[1]; kv[1] = k[2] * v[0] - k[0] * v[2]; kv[2] = k[0] * v[1] - k[1] * v[0];
    for (int i = 0; i < 3; i++) eye[i] = target[i] + v[i] * cos(a) + kv[i] * sin(a) + k[i] * kd * (1 - cos(a));
    return vx_camera_look_at(cam, eye, target, up, fov, width, height);
}
