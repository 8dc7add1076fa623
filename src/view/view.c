/* view.c - `voxray view SCENE`: a GLFW window (OpenGL 3.3 core through glad) that renders
 * the scene through vx_renderer while the user orbits, pans, zooms and flies, dropping
 * resolution while moving to hold --target-fps. main.c dispatches here (vx_cmd_view). */
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <glad/gl.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "image.h"
#include "view.h"
#include "vx_common.h"

static char vx__glfw_msg[512];

static void vx__glfw_error(int code, const char *desc) {
    snprintf(vx__glfw_msg, sizeof vx__glfw_msg, "%s (GLFW error 0x%x)", desc, code);
}

static void vx__view_usage(void) {
    printf("usage: voxray view SCENE [options]\n"
           "Open SCENE in an interactive window (OpenGL 3.3). Press H in the window for keys.\n\n"
           "Viewer:\n"
           "  --size WxH              window size in screen coordinates (default 800x800)\n"
           "  --target-fps F          frame rate to hold while moving (default 60)\n"
           "  --mode M                colour, depth, opacity, occupancy (or 1..4)\n"
           "  --frames N              scripted: render N full-resolution frames, then exit\n"
           "  --orbit-speed DEG       turn the camera DEG degrees per frame\n"
           "  --screenshot FILE       PNG of the last frame (scripted), or where P saves\n"
           "  --resize WxH            scripted: resize the window halfway through (tests)\n\n");
    /* the shared flags, less their --size line: here --size is the window's, listed above */
    const char *common = vx_cli_common_help(), *sz = strstr(common, "  --size "), *eol = sz ? strchr(sz, '\n') : NULL;
    if (sz && eol) printf("%.*s%s", (int)(sz - common), common, eol + 1);
    else fputs(common, stdout);
}

/* ---- frames -------------------------------------------------------------------------- */

/* Render a w x h frame and put it in the texture: straight into the pixel buffer with
 * CUDA-GL interop (colour mode), else on the host and through glTexSubImage2D. */
static int vx__render(vx_viewer *v, int w, int h) {
    vx_camera c;
    if (vx_view_camera_get(&v->cam, w, h, &c)) return -1;
    double t0 = vx_now();
    if (v->vi && v->mode == VX_MODE_COLOR) {
        vx_frame st;
        memset(&st, 0, sizeof st);
        if (!vx_view_interop_render(v->vi, &v->gl, &c, &st)) {
            v->last_samples = st.samples;
            v->last_rays = st.rays_hit;
            goto done;
        }
        vx_warn("display: CUDA-GL interop failed (%s); from now on the CUDA frame is copied to "
                "the host and uploaded with glTexSubImage2D", vx_errmsg());
        vx_view_interop_destroy(v->vi);
        v->vi = NULL;
    }
    if (v->frame.width != w || v->frame.height != h) {
        vx_frame_free(&v->frame);
        if (vx_frame_alloc(&v->frame, w, h, 1)) return -1;
    }
    size_t need = (size_t)w * h * 3;
    if (need > v->rgb_cap) {
        free(v->rgb);
        if (!(v->rgb = vx_malloc(need, "display image"))) { v->rgb_cap = 0; return -1; }
        v->rgb_cap = need;
    }
    if (vx_renderer_render(v->r, &c, &v->frame)) return -1;
    vx_view_colorize(v->mode, &v->frame, vx_renderer_volume(v->r), &c, v->rgb);
    if (vx_view_gl_upload_rgb(&v->gl, v->rgb, w, h)) return -1;
    v->last_samples = v->frame.samples;
    v->last_rays = v->frame.rays_hit;
done:
    v->shown_w = w;
    v->shown_h = h;
    v->last_ms = 1000.0 * (vx_now() - t0);
    double per = v->last_ms / ((double)w * h);
    v->ms_per_px = v->ms_per_px > 0 ? 0.5 * v->ms_per_px + 0.5 * per : per;
    return 0;
}

/* Resolution fraction that keeps a moving camera near --target-fps. */
static double vx__scale(const vx_viewer *v) {
    if (!(v->ms_per_px > 0)) return 0.5;
    double budget = 0.8 * 1000.0 / v->target_fps;
    double s = sqrt(budget / v->ms_per_px / ((double)v->fb_w * v->fb_h));
    double lo = fmin(1.0, 48.0 / fmin(v->fb_w, v->fb_h));
    return fmax(lo, fmin(1.0, s));
}

static void vx__title(vx_viewer *v) {
    char t[600];
    double spr = v->last_rays > 0 ? (double)v->last_samples / v->last_rays : 0.0;
    int full = v->shown_w == v->fb_w && v->shown_h == v->fb_h;
    snprintf(t, sizeof t, "voxray - %s - %dx%d%s - %.1f ms/frame - %.1f fps - %.1f samples/ray - %s - %s",
             v->scene.name, v->shown_w, v->shown_h, full ? "" : " (moving)", v->frame_ms,
             1000.0 / fmax(v->frame_ms, 1e-3), spr,
             vx_view_mode_name(v->mode), vx_renderer_backend_name(v->r));
    if (v->scene.dec.type == VX_DEC_SCALAR) {
        size_t n = strlen(t);
        snprintf(t + n, sizeof t - n, " - window %.4g..%.4g", v->scene.dec.window_lo, v->scene.dec.window_hi);
    }
    glfwSetWindowTitle(v->win, t);
}

/* Save the framebuffer just drawn (the displayed frame, at window resolution). */
static int vx__save_shot(vx_viewer *v, const char *path) {
    char auto_name[1200];
    size_t n = (size_t)v->fb_w * v->fb_h;
    if (!path) {
        do snprintf(auto_name, sizeof auto_name, "voxray-%s-%03d.png", v->scene.name, ++v->shot_count);
        while (access(auto_name, F_OK) == 0 && v->shot_count < 100000);
        path = auto_name;
    }
    unsigned char *px = vx_malloc(n * 3, "screenshot");
    vx_frame f;
    if (!px) return -1;
    if (vx_view_gl_read(v->fb_w, v->fb_h, px) || vx_frame_alloc(&f, v->fb_w, v->fb_h, 0)) { free(px); return -1; }
    for (size_t i = 0; i < n; i++) {
        f.alpha[i] = 1.0f;
        for (int c = 0; c < 3; c++) f.rgb[3 * i + c] = px[3 * i + c] / 255.0f;
    }
    int rc = vx_image_write_png(path, &f, 0);
    vx_frame_free(&f);
    free(px);
    if (!rc) fprintf(stderr, "voxray: screenshot %s (%dx%d, %s)\n", path, v->fb_w, v->fb_h, vx_view_mode_name(v->mode));
    return rc;
}

/* Draw the texture, take a pending screenshot from that exact framebuffer, show it. */
static int vx__present(vx_viewer *v, const char *shot_path) {
    vx_view_gl_draw(&v->gl, v->fb_w, v->fb_h);
    int rc = 0;
    if (v->shot_pending) {
        v->shot_pending = 0;
        rc = vx__save_shot(v, shot_path);
        if (rc) vx_warn("screenshot failed: %s", vx_errmsg());
    }
    glfwSwapBuffers(v->win);
    v->redraw = 0;
    return rc;
}

/* ---- setup --------------------------------------------------------------------------- */

static int vx__parse(vx_viewer *v, int argc, char **argv) {
    vx_cli_common_init(&v->cli);
    v->target_fps = 60.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = vx_cli_parse_common(&v->cli, &i, argc, argv);
        if (rc < 0) return -1;
        if (rc > 0) continue;
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__view_usage(); return 1; }
        if (a[0] != '-') {
            if (v->cli.scene_path) return vx_error("more than one SCENE given ('%s' and '%s')", v->cli.scene_path, a);
            v->cli.scene_path = a;
            continue;
        }
        int known = !strcmp(a, "--frames") || !strcmp(a, "--orbit-speed") || !strcmp(a, "--screenshot") ||
                    !strcmp(a, "--target-fps") || !strcmp(a, "--mode") || !strcmp(a, "--resize");
        if (!known) return vx_error("unknown option '%s' (see voxray view --help)", a);
        if (!val) return vx_error("%s needs a value", a);
        i++;
        if (!strcmp(a, "--frames") && vx_parse_int(a, val, 1, 1000000, &v->frames)) return -1;
        if (!strcmp(a, "--orbit-speed") && vx_parse_double(a, val, -360, 360, &v->orbit_speed)) return -1;
        if (!strcmp(a, "--target-fps") && vx_parse_double(a, val, 1, 1000, &v->target_fps)) return -1;
        if (!strcmp(a, "--mode") && vx_view_mode_parse(val, &v->mode)) return -1;
        if (!strcmp(a, "--resize") && vx_parse_size(a, val, &v->resize_w, &v->resize_h)) return -1;
        if (!strcmp(a, "--screenshot")) v->screenshot = val;
    }
    if (!v->cli.scene_path) return vx_error("no SCENE given (see voxray view --help)");
    if (v->resize_w && !v->frames) return vx_error("--resize needs --frames (it is a scripted step)");
    return 0;
}

static int vx__open_window(vx_viewer *v) {
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
    glfwWindowHint(GLFW_RESIZABLE, GLFW_TRUE);
    v->win = glfwCreateWindow(v->cli.width, v->cli.height, "voxray", NULL, NULL);
    if (!v->win)
        return vx_error("could not open a window with an OpenGL 3.3 core context: %s (with Mesa, "
                        "LIBGL_ALWAYS_SOFTWARE=1 selects llvmpipe)", vx__glfw_msg);
    glfwMakeContextCurrent(v->win);
    int ver = gladLoadGL((GLADloadfunc)glfwGetProcAddress);
    if (!ver || GLAD_VERSION_MAJOR(ver) * 10 + GLAD_VERSION_MINOR(ver) < 33)
        return vx_error("OpenGL 3.3 core is needed; the context offers %d.%d", GLAD_VERSION_MAJOR(ver),
                        GLAD_VERSION_MINOR(ver));
    vx_view_input_install(v);
    glfwSwapInterval(v->frames ? 0 : 1);
    if (vx_view_gl_init(&v->gl)) return -1;
    int ww, wh;
    float csx, csy;
    glfwGetFramebufferSize(v->win, &v->fb_w, &v->fb_h);
    glfwGetWindowSize(v->win, &ww, &wh);
    glfwGetWindowContentScale(v->win, &csx, &csy);
    fprintf(stderr, "voxray: view %s: window %dx%d, framebuffer %dx%d, content scale %g, %s, OpenGL %s\n",
            v->scene.name, ww, wh, v->fb_w, v->fb_h, csx, vx_renderer_backend_name(v->r),
            (const char *)glGetString(GL_RENDERER));
    return 0;
}

static void vx__choose_display(vx_viewer *v) {
    v->vi = vx_view_interop_create(v->r);
    if (v->vi && vx_view_interop_resize(v->vi, &v->gl, v->fb_w > 0 ? v->fb_w : 1, v->fb_h > 0 ? v->fb_h : 1)) {
        vx_warn("display: CUDA-GL interop unavailable (%s); the CUDA frame is copied to the host "
                "and uploaded with glTexSubImage2D", vx_errmsg());
        vx_view_interop_destroy(v->vi);
        v->vi = NULL;
        return;
    }
    if (v->vi)
        vx_warn("display: CUDA renders straight into a GL pixel buffer (CUDA-GL interop); the depth, "
                "opacity and occupancy modes go through the host");
    else
        vx_warn("display: %s backend, frames uploaded with glTexSubImage2D", vx_renderer_backend_name(v->r));
}

/* Scripted resize: ask for the new size and wait (bounded) until the framebuffer has it. */
static int vx__scripted_resize(vx_viewer *v) {
    int ow = v->fb_w, oh = v->fb_h;
    glfwSetWindowSize(v->win, v->resize_w, v->resize_h);
    for (double t0 = vx_now(); vx_now() - t0 < 5.0;) {
        glfwWaitEventsTimeout(0.05);
        glfwGetFramebufferSize(v->win, &v->fb_w, &v->fb_h);
        if (v->fb_w != ow || v->fb_h != oh) break;
    }
    if (v->fb_w == ow && v->fb_h == oh && (ow != v->resize_w || oh != v->resize_h))
        return vx_error("--resize %dx%d: the window did not change size within 5 s", v->resize_w, v->resize_h);
    fprintf(stderr, "voxray: resized to framebuffer %dx%d\n", v->fb_w, v->fb_h);
    if (v->vi && vx_view_interop_resize(v->vi, &v->gl, v->fb_w, v->fb_h)) return -1;
    v->dirty = 1;
    return 0;
}

/* ---- the loop ------------------------------------------------------------------------ */

static int vx__loop(vx_viewer *v) {
    int done = 0, rendered = 0;
    double t_prev = vx_now();
    v->dirty = 1;
    while (!glfwWindowShouldClose(v->win)) {
        double now = vx_now();
        int moving = !v->frames && (v->drag || now - v->last_move < 0.25);
        int full_shown = v->shown_w == v->fb_w && v->shown_h == v->fb_h;
        if (v->frames || v->orbit_speed != 0 || moving || v->dirty || v->redraw || !full_shown)
            glfwPollEvents();
        else
            glfwWaitEventsTimeout(0.5);
        now = vx_now();
        double dt = now - t_prev;
        t_prev = now;
        int ow = v->fb_w, oh = v->fb_h;
        glfwGetFramebufferSize(v->win, &v->fb_w, &v->fb_h);
        int iconified = glfwGetWindowAttrib(v->win, GLFW_ICONIFIED);
        if (v->fb_w <= 0 || v->fb_h <= 0 || (iconified && !v->frames)) {
            /* minimised (a 0 x 0 framebuffer on some platforms): nothing to draw; wait */
            if (v->frames) return vx_error("the window has no framebuffer (minimised?) in a scripted run");
            glfwWaitEvents();
            v->fb_w = ow;          /* compare against the last drawable size on return */
            v->fb_h = oh;
            continue;
        }
        if (v->fb_w != ow || v->fb_h != oh) {
            if (v->vi && vx_view_interop_resize(v->vi, &v->gl, v->fb_w, v->fb_h)) {
                vx_warn("display: CUDA-GL interop failed after a resize (%s); using the host copy", vx_errmsg());
                vx_view_interop_destroy(v->vi);
                v->vi = NULL;
            }
            v->dirty = 1;
            if (!v->frames) v->last_move = now; /* while the edge is dragged, frames stay cheap */
        }
        vx_view_input_fly(v, dt);
        if (v->orbit_speed != 0 && (!v->frames || rendered > 0)) {
            vx_view_camera_spin(&v->cam, v->orbit_speed);
            v->dirty = 1;
            if (!v->frames) v->last_move = now;
        }
        if (v->frames) v->dirty = 1; /* scripted: every turn of the loop is one frame */
        if (v->params_dirty) {
            if (vx_renderer_set_opts(v->r, &v->ropts)) return -1;
            v->params_dirty = 0;
        }
        moving = !v->frames && (v->drag || now - v->last_move < 0.25);
        full_shown = v->shown_w == v->fb_w && v->shown_h == v->fb_h;
        if (v->dirty || (!moving && !full_shown)) {
            int w = v->fb_w, h = v->fb_h;
            if (moving) {
                double s = vx__scale(v);
                w = (int)fmax(1.0, floor(v->fb_w * s + 0.5));
                h = (int)fmax(1.0, floor(v->fb_h * s + 0.5));
            }
            v->dirty = 0;
            if (vx__render(v, w, h)) return -1;
            if (v->frames && rendered == v->frames - 1 && v->screenshot) v->shot_pending = 1;
            double t_present = vx_now();
            int shot = v->shot_pending;
            if (vx__present(v, v->screenshot) && v->frames && shot) return -1;
            /* the whole frame: render, colour, upload, draw, swap */
            v->frame_ms = v->last_ms + 1000.0 * (vx_now() - t_present);
            vx__title(v);
            rendered++;
            if (v->frames) {
                if (rendered >= v->frames) { done = 1; break; }
                if (v->resize_w && rendered == v->frames / 2 && vx__scripted_resize(v)) return -1;
            }
        } else if (v->redraw) {
            vx__present(v, v->screenshot);
        }
    }
    if (v->frames && !done) return vx_error("the window was closed after %d of %d frames", rendered, v->frames);
    if (v->frames)
        fprintf(stderr, "voxray: %d frames at %dx%d, last %.1f ms, %.1f samples/ray\n", rendered, v->fb_w,
                v->fb_h, v->last_ms, v->last_rays > 0 ? (double)v->last_samples / v->last_rays : 0.0);
    return 0;
}

static void vx__cleanup(vx_viewer *v) {
    if (v->win) {
        vx_view_interop_destroy(v->vi);
        vx_view_gl_destroy(&v->gl);
        glfwDestroyWindow(v->win);
    }
    vx_renderer_destroy(v->r);
    vx_frame_free(&v->frame);
    free(v->rgb);
    if (v->scene_loaded) vx_scene_free(&v->scene);
}

int vx_cmd_view(int argc, char **argv) {
    vx_viewer *v = vx_calloc(1, sizeof *v, "viewer");
    int rc = 1, prc;
    if (!v) { fprintf(stderr, "voxray view: %s\n", vx_errmsg()); return 1; }
    if ((prc = vx__parse(v, argc, argv))) {
        if (prc < 0) fprintf(stderr, "voxray view: %s\n", vx_errmsg());
        free(v);
        return prc < 0 ? 2 : 0;
    }
    struct stat st; /* a missing SCENE is reported before the display or the backend */
    if (strncmp(v->cli.scene_path, VX_CLI_PROCEDURAL, strlen(VX_CLI_PROCEDURAL)) && stat(v->cli.scene_path, &st) != 0) {
        fprintf(stderr, "voxray: %s: cannot open: %s\n", v->cli.scene_path, strerror(errno));
        free(v);
        return 1;
    }
    glfwSetErrorCallback(vx__glfw_error);
    if (!glfwInit()) { /* no display: say so at once, before loading anything */
        fprintf(stderr, "voxray view: no display available: %s; use `voxray render` for images "
                "without a window\n", vx__glfw_msg[0] ? vx__glfw_msg : "glfwInit failed");
        free(v);
        return 1;
    }
    if (vx_cli_load_scene(&v->cli, &v->scene)) goto fail;
    v->scene_loaded = 1;
    v->ropts = v->cli.ropts;
    v->ropts.want_depth = 1;
    if (vx_renderer_create(&v->r, &v->scene, &v->ropts, v->cli.backend)) goto fail;
    if (v->scene.dec.type == VX_DEC_SCALAR) vx_grid_range(&v->scene.grid, 0, &v->data_lo, &v->data_hi);
    if (vx__open_window(v)) goto fail;
    if (vx_view_camera_init(&v->cam, &v->cli, &v->scene, v->fb_w > 0 ? v->fb_w : 1, v->fb_h > 0 ? v->fb_h : 1))
        goto fail;
    vx__choose_display(v);
    if (!v->frames) fprintf(stderr, "voxray: press H in the window for the keys\n");
    if (vx__loop(v)) goto fail;
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "voxray view: %s\n", vx_errmsg());
out:
    vx__cleanup(v);
    glfwTerminate();
    free(v);
    return rc;
}
