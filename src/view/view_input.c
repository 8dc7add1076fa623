/* view_input.c - what the viewer's keys and mouse do: orbit / pan / zoom / fly, reset and
 * frame, step size, render mode, background, screenshot, the scalar transfer-function
 * window, help, quit. GLFW calls these; view.c installs them and renders the result. */
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "view.h"
#include "vx_common.h"

void vx_view_help_keys(void) {
    printf("voxray view keys:\n"
           "  left drag        orbit            right/middle drag  pan\n"
           "  wheel            zoom             W A S D / Q E      fly (Shift: faster)\n"
           "  R                reset camera     F                  frame the grid\n"
           "  [ / ]            finer / coarser step\n"
           "  1 2 3 4          colour, depth, opacity, occupancy cells\n"
           "  B                cycle background P                  screenshot (PNG)\n"
           "  J                jittered samples on/off (noise instead of rings)\n"
           "  G                gradient shading on/off (scalar volumes)\n"
           "  scalar volumes:  Left/Right move the window, Up/Down widen/narrow it,\n"
           "                   Shift + left drag does both\n"
           "  H                this help        Esc                quit\n");
    fflush(stdout);
}

static void vx__moved(vx_viewer *v) {
    v->dirty = 1;
    v->last_move = vx_now();
}

static int vx__is_scalar(const vx_viewer *v) { return v->scene.dec.type == VX_DEC_SCALAR; }

/* Move the scalar window: shift its centre by dc and scale its width by ws. */
static void vx__tf_window(vx_viewer *v, double dc, double ws) {
    vx_decoder *d = &v->scene.dec;
    double range = v->data_hi > v->data_lo ? v->data_hi - v->data_lo : 1.0;
    double c = 0.5 * (d->window_lo + d->window_hi) + dc * range;
    double w = fmax(1e-4 * range, (d->window_hi - d->window_lo) * ws);
    d->window_lo = (float)(c - 0.5 * w);
    d->window_hi = (float)(c + 0.5 * w);
    v->params_dirty = 1;
    vx__moved(v);
}

static void vx__key(GLFWwindow *w, int key, int scancode, int action, int mods) {
    vx_viewer *v = glfwGetWindowUserPointer(w);
    (void)scancode;
    if (action == GLFW_RELEASE) return;
    int shift = (mods & GLFW_MOD_SHIFT) != 0;
    switch (key) {
    case GLFW_KEY_ESCAPE: glfwSetWindowShouldClose(w, 1); return;
    case GLFW_KEY_H: vx_view_help_keys(); return;
    case GLFW_KEY_R: vx_view_camera_reset(&v->cam); vx__moved(v); return;
    case GLFW_KEY_F: vx_view_camera_frame(&v->cam, v->fb_w, v->fb_h); vx__moved(v); return;
    case GLFW_KEY_P: v->shot_pending = 1; v->redraw = 1; return;
    case GLFW_KEY_LEFT_BRACKET:
    case GLFW_KEY_RIGHT_BRACKET: {
        float cur = v->ropts.step > 0 ? v->ropts.step : v->scene.step;
        cur = key == GLFW_KEY_RIGHT_BRACKET ? cur * 1.25f : cur / 1.25f;
        v->ropts.step = vx_clampf(cur, 0.02f, 8.0f);
        fprintf(stderr, "voxray: step %.3g voxels\n", v->ropts.step);
        v->params_dirty = 1;
        vx__moved(v);
        return;
    }
    case GLFW_KEY_B: {
        static const float bgs[3][3] = {{0, 0, 0}, {1, 1, 1}, {0.5f, 0.5f, 0.5f}};
        v->bg_index = (v->bg_index + 1) % 4;
        if (v->bg_index == 0) {
            v->ropts.has_background = v->cli.ropts.has_background;
            memcpy(v->ropts.background, v->cli.ropts.background, sizeof v->ropts.background);
        } else {
            v->ropts.has_background = 1;
            memcpy(v->ropts.background, bgs[v->bg_index - 1], sizeof v->ropts.background);
        }
        v->params_dirty = 1;
        vx__moved(v);
        return;
    }
    case GLFW_KEY_J:
        v->ropts.jitter = v->ropts.jitter ? 0u : 1u;
        fprintf(stderr, "voxray: jittered samples %s\n", v->ropts.jitter ? "on" : "off");
        v->params_dirty = 1;
        vx__moved(v);
        return;
    case GLFW_KEY_G:
        if (!vx__is_scalar(v)) {
            vx_warn("gradient shading applies to scalar volumes only");
            return;
        }
        v->scene.dec.shade = !v->scene.dec.shade;
        fprintf(stderr, "voxray: gradient shading %s\n", v->scene.dec.shade ? "on" : "off");
        v->params_dirty = 1;
        vx__moved(v);
        return;
    default: break;
    }
    if (key >= GLFW_KEY_1 && key <= GLFW_KEY_4) { v->mode = key - GLFW_KEY_1; vx__moved(v); return; }
    if (key >= GLFW_KEY_KP_1 && key <= GLFW_KEY_KP_4) { v->mode = key - GLFW_KEY_KP_1; vx__moved(v); return; }
    if (key == GLFW_KEY_LEFT || key == GLFW_KEY_RIGHT || key == GLFW_KEY_UP || key == GLFW_KEY_DOWN) {
        if (!vx__is_scalar(v)) {
            if (action == GLFW_PRESS) vx_warn("the window keys apply to scalar volumes only");
            return;
        }
        double step = shift ? 0.1 : 0.02;
        if (key == GLFW_KEY_LEFT) vx__tf_window(v, -step, 1.0);
        if (key == GLFW_KEY_RIGHT) vx__tf_window(v, step, 1.0);
        if (key == GLFW_KEY_UP) vx__tf_window(v, 0.0, 1.15);
        if (key == GLFW_KEY_DOWN) vx__tf_window(v, 0.0, 1.0 / 1.15);
    }
}

static void vx__button(GLFWwindow *w, int button, int action, int mods) {
    vx_viewer *v = glfwGetWindowUserPointer(w);
    if (action == GLFW_RELEASE) { v->drag = 0; vx__moved(v); return; }
    glfwGetCursorPos(w, &v->mx, &v->my);
    if (button == GLFW_MOUSE_BUTTON_LEFT)
        v->drag = (mods & GLFW_MOD_SHIFT) && vx__is_scalar(v) ? 3 : 1;
    else if (button == GLFW_MOUSE_BUTTON_RIGHT || button == GLFW_MOUSE_BUTTON_MIDDLE)
        v->drag = 2;
}

static void vx__cursor(GLFWwindow *w, double x, double y) {
    vx_viewer *v = glfwGetWindowUserPointer(w);
    if (!v->drag) return;
    double dx = x - v->mx, dy = y - v->my;
    int ww, wh;
    v->mx = x;
    v->my = y;
    glfwGetWindowSize(w, &ww, &wh);
    double sx = ww > 0 ? (double)v->fb_w / ww : 1.0; /* HiDPI: cursor in screen units */
    if (v->drag == 1) vx_view_camera_orbit(&v->cam, -0.3 * dx, 0.3 * dy);
    else if (v->drag == 2) vx_view_camera_pan(&v->cam, dx * sx, dy * sx, v->fb_w);
    else { vx__tf_window(v, dx / (ww > 0 ? ww : 1), exp(0.01 * dy)); return; }
    vx__moved(v);
}

static void vx__scroll(GLFWwindow *w, double xoff, double yoff) {
    vx_viewer *v = glfwGetWindowUserPointer(w);
    (void)xoff;
    vx_view_camera_zoom(&v->cam, pow(0.88, yoff));
    vx__moved(v);
}

static void vx__refresh(GLFWwindow *w) {
    vx_viewer *v = glfwGetWindowUserPointer(w);
    v->redraw = 1;
}

/* Fly with W A S D / Q E, scaled by the time since the last frame. */
void vx_view_input_fly(vx_viewer *v, double dt) {
    GLFWwindow *w = v->win;
    double f = 0, r = 0, u = 0;
    if (glfwGetKey(w, GLFW_KEY_W) == GLFW_PRESS) f += 1;
    if (glfwGetKey(w, GLFW_KEY_S) == GLFW_PRESS) f -= 1;
    if (glfwGetKey(w, GLFW_KEY_D) == GLFW_PRESS) r += 1;
    if (glfwGetKey(w, GLFW_KEY_A) == GLFW_PRESS) r -= 1;
    if (glfwGetKey(w, GLFW_KEY_E) == GLFW_PRESS) u += 1;
    if (glfwGetKey(w, GLFW_KEY_Q) == GLFW_PRESS) u -= 1;
    if (f == 0 && r == 0 && u == 0) return;
    int fast = glfwGetKey(w, GLFW_KEY_LEFT_SHIFT) == GLFW_PRESS || glfwGetKey(w, GLFW_KEY_RIGHT_SHIFT) == GLFW_PRESS;
    double s = v->cam.radius * 0.8 * fmin(dt, 0.1) * (fast ? 4.0 : 1.0);
    vx_view_camera_fly(&v->cam, f * s, r * s, u * s);
    vx__moved(v);
}

void vx_view_input_install(vx_viewer *v) {
    glfwSetWindowUserPointer(v->win, v);
    glfwSetKeyCallback(v->win, vx__key);
    glfwSetMouseButtonCallback(v->win, vx__button);
    glfwSetCursorPosCallback(v->win, vx__cursor);
    glfwSetScrollCallback(v->win, vx__scroll);
    glfwSetWindowRefreshCallback(v->win, vx__refresh);
}
