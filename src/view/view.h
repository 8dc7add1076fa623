/* view.h - shared pieces of `voxray view` (src/view/): the orbit/fly camera, the GL
 * display (shaders, texture, pixel buffer), the render modes, the CUDA-GL glue, input
 * and the viewer state.
 * view.c runs the window loop and calls the other view_*.c files, one concern each. */
#ifndef VX_VIEW_H
#define VX_VIEW_H

#include "backend.h"
#include "cli.h"

/* ---- camera (view_camera.c) ------------------------------------------------------------ */
/* Orbit camera: eye = pivot + dist * (cos el sin az X' + sin el U + cos el cos az Z'), with
 * U the world up and X', Z' completing it (X' = +X, Z' = +Z when U = +Y, as camera.h's
 * orbit). While `pristine` the CLI camera is used bit for bit, so the viewer's untouched
 * frame is the frame `voxray render` makes with the same flags. */
typedef struct {
    double pivot[3], up[3], bx[3], bz[3];
    double az, el, dist, fov_deg;
    double radius;            /* bounding-sphere radius of the grid (speeds, limits) */
    double center[3];         /* world box centre */
    double cli_az_offset;     /* --orbit-speed while pristine: added to the CLI azimuth */
    int pristine;
    vx_cli_common cli;        /* copy of the flags, for the pristine camera */
    const vx_scene *scene;
    double home[6];           /* az, el, dist, pivot at start (R) */
} vx_view_camera;

int vx_view_camera_init(vx_view_camera *vc, const vx_cli_common *cli, const vx_scene *s, int w, int h);
/* Camera for a w x h frame. */
int vx_view_camera_get(const vx_view_camera *vc, int w, int h, vx_camera *out);
void vx_view_camera_orbit(vx_view_camera *vc, double daz_deg, double del_deg);
/* Pan by (dx, dy) framebuffer pixels of a framebuffer fb_w pixels wide. */
void vx_view_camera_pan(vx_view_camera *vc, double dx, double dy, int fb_w);
void vx_view_camera_zoom(vx_view_camera *vc, double factor);
/* Move eye and pivot together: forward, right, world-up, in world units. */
void vx_view_camera_fly(vx_view_camera *vc, double fwd, double right, double upward);
/* Centre the grid and back off until its bounding sphere fits (aspect w/h). */
void vx_view_camera_frame(vx_view_camera *vc, int w, int h);
void vx_view_camera_reset(vx_view_camera *vc);
/* Animation step for --orbit-speed (exact CLI orbit while pristine). */
void vx_view_camera_spin(vx_view_camera *vc, double deg);

/* ---- display (view_gl.c) ------------------------------------------------------------- */
typedef struct {
    unsigned int prog, vao, tex, pbo;
    int tex_w, tex_h, pbo_bytes;
    int loc_image, loc_viewport;
} vx_view_gl;

/* Load shaders/view.vert and view.frag (./shaders, <exe>/../shaders, $VOXRAY_SHADERS). */
int vx_view_gl_init(vx_view_gl *g);
/* Upload a w x h RGB8 image (rows top to bottom) with glTexSubImage2D. */
int vx_view_gl_upload_rgb(vx_view_gl *g, const unsigned char *rgb, int w, int h);
/* Make sure the pixel buffer holds w*h RGBA8; returns 1 if it was (re)created. */
int vx_view_gl_pbo_size(vx_view_gl *g, int w, int h);
/* Copy the pixel buffer (RGBA8, rows top to bottom) into the texture. */
int vx_view_gl_upload_pbo(vx_view_gl *g, int w, int h);
/* Draw the texture over the whole framebuffer (1:1 texel fetch at full size). */
void vx_view_gl_draw(vx_view_gl *g, int fb_w, int fb_h);
/* Read the framebuffer just drawn as RGB8, rows top to bottom. */
int vx_view_gl_read(int fb_w, int fb_h, unsigned char *rgb);
void vx_view_gl_destroy(vx_view_gl *g);
/* Find a shader file; path written to out. */
int vx_view_find_shader(const char *name, char *out, size_t cap);

/* ---- render modes (view_modes.c) ----------------------------------------------------- */
typedef enum { VX_MODE_COLOR = 0, VX_MODE_DEPTH, VX_MODE_OPACITY, VX_MODE_OCCUPANCY } vx_view_mode;
const char *vx_view_mode_name(int mode);
int vx_view_mode_parse(const char *s, int *mode);
/* Turn a rendered frame into RGB8 for display in the given mode. */
void vx_view_colorize(int mode, const vx_frame *f, const vx_volume *v, const vx_camera *c,
                      unsigned char *rgb);

/* ---- CUDA-GL interop (view_cuda.c) --------------------------------------------------- */
typedef struct vx_view_interop vx_view_interop;
/* Try interop for renderer r (CUDA backend only); NULL + a stderr line when unavailable. */
vx_view_interop *vx_view_interop_create(vx_renderer *r);
/* The framebuffer is now w x h: resize the pixel buffer and register it again. */
int vx_view_interop_resize(vx_view_interop *vi, vx_view_gl *g, int w, int h);
/* Render straight into the GL pixel buffer g->pbo (resized/re-registered as needed) and
 * copy it into the texture. Fills the frame counters of stats. */
int vx_view_interop_render(vx_view_interop *vi, vx_view_gl *g, const vx_camera *c, vx_frame *stats);
void vx_view_interop_destroy(vx_view_interop *vi);

/* ---- the viewer state (view.c runs it, view_input.c changes it) ------------------------ */
typedef struct {
    struct GLFWwindow *win;
    vx_cli_common cli;
    vx_scene scene;
    int scene_loaded;
    vx_renderer *r;
    vx_render_opts ropts;
    vx_view_camera cam;
    vx_view_gl gl;
    vx_view_interop *vi;         /* CUDA-GL path, NULL when the host copy is used */
    vx_frame frame;
    unsigned char *rgb;          /* display bytes of the host path */
    size_t rgb_cap;
    int mode, bg_index;
    int fb_w, fb_h;              /* framebuffer (pixels) */
    int shown_w, shown_h;        /* size of the frame in the texture */
    /* interaction */
    int drag;                    /* 0 none, 1 orbit, 2 pan, 3 transfer-function window */
    double mx, my;
    double last_move;            /* time of the last camera change */
    int dirty;                   /* the scene or camera changed: render again */
    int redraw;                  /* only draw the texture again */
    int shot_pending;
    int params_dirty;            /* ropts / decoder changed: vx_renderer_set_opts */
    float data_lo, data_hi;      /* channel-0 range (scalar window keys) */
    /* speed */
    double ms_per_px, last_ms, frame_ms;
    long long last_samples, last_rays;
    /* flags */
    int frames, resize_w, resize_h;
    double orbit_speed, target_fps;
    const char *screenshot;
    int shot_count;
} vx_viewer;

/* ---- input (view_input.c) ------------------------------------------------------------ */
void vx_view_input_install(vx_viewer *v);      /* GLFW callbacks on v->win */
void vx_view_input_fly(vx_viewer *v, double dt); /* W A S D / Q E held down */
void vx_view_help_keys(void);

#endif
