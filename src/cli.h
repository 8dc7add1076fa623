/* cli.h - command-line pieces shared by render, view, info and bench: the scene,
 * camera, decoder-override and render flags, parsed one argument at a time, and the
 * camera they describe. Each command keeps its own remaining flags. */
#ifndef VX_CLI_H
#define VX_CLI_H

#include "backend.h"
#include "camera.h"
#include "scene.h"

typedef struct {
    const char *scene_path;
    vx_load_opts load;
    int width, height;                 /* --size WxH (default 800x800) */
    int has_eye, has_target, has_up, has_fov;
    double eye[3], target[3], up[3], fov;
    int has_azimuth, has_elevation, has_distance;
    double azimuth, elevation, distance;
    vx_render_opts ropts;              /* --step --stop --background --threads --half --no-skip */
    vx_backend_kind backend;           /* --backend */
    int has_density_scale;
    float density_scale;               /* --density-scale */
    const char *preset;                /* --preset NAME (scalar) */
    int has_window;
    float window[2];                   /* --window lo,hi (scalar) */
    int shading;                       /* --shading on|off (scalar): -1 the scene's, else 0/1 */
} vx_cli_common;

void vx_cli_common_init(vx_cli_common *c);

/* Try to consume argv[*i] (and its value). Returns 1 if consumed (advancing *i past
 * the value), 0 if the flag is not a common one, -1 on a bad value (vx_error set). */
int vx_cli_parse_common(vx_cli_common *c, int *i, int argc, char **argv);

/* Text for --help listing the common flags. */
const char *vx_cli_common_help(void);

/* Load the scene and apply decoder overrides (--density-scale, --preset, --window,
 * --shading). */
int vx_cli_load_scene(const vx_cli_common *c, vx_scene *s);
/* A scene path starting with this names a procedural scene built in memory:
 * make-scene:NAME:RES is `make-scene NAME --sparse --res RES` (threshold 0). */
#define VX_CLI_PROCEDURAL "make-scene:"

/* The camera the flags describe for scene s at width x height: explicit eye/target
 * flags, else an orbit (flags override the manifest camera; missing parts from the
 * default camera framing the grid). */
int vx_cli_camera(const vx_cli_common *c, const vx_scene *s, int width, int height, vx_camera *cam);

/* "voxray CMD: MSG (see voxray CMD --help)" on stderr; returns 2, the usage-error exit code. */
int vx_cli_usage_error(const char *cmd, const char *msg);
/* Frame `deg` degrees into a turntable: with orbit flags, the orbit's azimuth plus deg;
 * otherwise the camera vx_cli_camera gives (the scene's, or the flags') with its eye
 * turned deg degrees about the up axis through the target, so frame 0 is that camera. */
int vx_cli_camera_turn(const vx_cli_common *c, const vx_scene *s, double deg, int width, int height, vx_camera *cam);

/* Parse "x,y,z" / "WxH" helpers, with the flag name in errors. */
int vx_parse_vec3(const char *flag, const char *s, double v[3]);
int vx_parse_size(const char *flag, const char *s, int *w, int *h);
int vx_parse_double(const char *flag, const char *s, double lo, double hi, double *v);
int vx_parse_int(const char *flag, const char *s, long lo, long hi, int *v);
/* Split the comma list s into items (pointers into buf, cap bytes): at most max of them,
 * none empty ("64,,128" or a trailing comma is refused, not read as "64,128"); *n gets
 * their count. */
int vx_parse_list(const char *flag, const char *s, char *buf, size_t cap, char **items, int max, int *n);

#endif
