/* view_camera.c - the viewer's orbit / pan / zoom / fly camera. Until the user moves it,
 * it hands back the CLI camera unchanged (vx_cli_camera), so the first frame is the
 * one `voxray render` makes; afterwards it builds a look-at camera. Called by view.c. */
#include <math.h>
#include <string.h>

#include "view.h"
#include "vx_common.h"

#define VX_DEG (3.14159265358979323846 / 180.0)

static double v3_dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static double v3_norm(double *a) {
    double l = sqrt(v3_dot(a, a));
    if (l > 0) { a[0] /= l; a[1] /= l; a[2] /= l; }
    return l;
}
static void v3_cross(const double *a, const double *b, double *o) {
    double r[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    memcpy(o, r, sizeof r);
}

/* X', Z' so that (X', U, Z') is right-handed and Z' is +Z projected off U. */
static void vc_basis(vx_view_camera *vc) {
    static const double ax[2][3] = {{0, 0, 1}, {1, 0, 0}};
    double *u = vc->up;
    if (v3_norm(u) == 0) { u[0] = 0; u[1] = 1; u[2] = 0; }
    for (int k = 0; k < 2; k++) {
        double d = v3_dot(ax[k], u);
        for (int i = 0; i < 3; i++) vc->bz[i] = ax[k][i] - d * u[i];
        if (v3_norm(vc->bz) > 1e-3) break;
    }
    v3_cross(u, vc->bz, vc->bx);
}

static void vc_eye(const vx_view_camera *vc, double eye[3]) {
    double ca = cos(vc->az * VX_DEG), sa = sin(vc->az * VX_DEG);
    double ce = cos(vc->el * VX_DEG), se = sin(vc->el * VX_DEG);
    for (int i = 0; i < 3; i++)
        eye[i] = vc->pivot[i] + vc->dist * (ce * sa * vc->bx[i] + se * vc->up[i] + ce * ca * vc->bz[i]);
}

/* Free-camera angles and pivot from a camera: the eye stays, the pivot sits on the view
 * axis at the current distance. */
static void vc_sync(vx_view_camera *vc, const vx_camera *c) {
    double e[3] = {c->c2w[3], c->c2w[7], c->c2w[11]}, back[3] = {c->c2w[2], c->c2w[6], c->c2w[10]};
    v3_norm(back);
    for (int i = 0; i < 3; i++) vc->pivot[i] = e[i] - back[i] * vc->dist;
    vc->el = asin(fmax(-1.0, fmin(1.0, v3_dot(back, vc->up)))) / VX_DEG;
    vc->az = atan2(v3_dot(back, vc->bx), v3_dot(back, vc->bz)) / VX_DEG;
}

int vx_view_camera_init(vx_view_camera *vc, const vx_cli_common *cli, const vx_scene *s, int w, int h) {
    vx_camera c;
    double eye[3], tgt[3], up[3], fov, lo[3], hi[3];
    memset(vc, 0, sizeof *vc);
    vc->cli = *cli;
    vc->scene = s;
    vc->pristine = 1;
    if (vx_cli_camera(cli, s, w, h, &c)) return -1;
    vx_scene_default_camera(s, eye, tgt, up, &fov);
    if (s->has_camera) { memcpy(tgt, s->target, sizeof tgt); memcpy(up, s->up, sizeof up); }
    if (cli->has_target) memcpy(tgt, cli->target, sizeof tgt);
    if (cli->has_up) memcpy(up, cli->up, sizeof up);
    memcpy(vc->up, up, sizeof up);
    vc_basis(vc);
    vx_grid_world_bounds(&s->grid, lo, hi);
    double ext[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    for (int i = 0; i < 3; i++) vc->center[i] = 0.5 * (lo[i] + hi[i]);
    if (cli->has_azimuth || cli->has_elevation || cli->has_distance) /* orbits aim at the centre */
        memcpy(tgt, vc->center, sizeof tgt);
    vc->radius = 0.5 * sqrt(v3_dot(ext, ext));
    if (!(vc->radius > 0)) vc->radius = 1;
    double d[3] = {c.c2w[3] - tgt[0], c.c2w[7] - tgt[1], c.c2w[11] - tgt[2]};
    vc->dist = sqrt(v3_dot(d, d));
    if (!(vc->dist > 1e-9 * vc->radius)) vc->dist = 2 * vc->radius;
    vc_sync(vc, &c);
    vc->fov_deg = c.fov_x / VX_DEG;
    vc->home[0] = vc->az; vc->home[1] = vc->el; vc->home[2] = vc->dist;
    memcpy(vc->home + 3, vc->pivot, 3 * sizeof(double));
    return 0;
}

int vx_view_camera_get(const vx_view_camera *vc, int w, int h, vx_camera *out) {
    if (vc->pristine) {
        if (vc->cli_az_offset == 0) return vx_cli_camera(&vc->cli, vc->scene, w, h, out);
        vx_cli_common c = vc->cli;
        c.azimuth += vc->cli_az_offset;
        return vx_cli_camera(&c, vc->scene, w, h, out);
    }
    double eye[3];
    vc_eye(vc, eye);
    return vx_camera_look_at(out, eye, vc->pivot, vc->up, vc->fov_deg, w, h);
}

/* Leave pristine mode: fold a pending --orbit-speed azimuth into the free camera. */
static void vc_touch(vx_view_camera *vc) {
    vx_camera c;
    if (!vc->pristine) return;
    if (vc->cli_az_offset != 0 && !vx_view_camera_get(vc, 64, 64, &c)) vc_sync(vc, &c);
    vc->cli_az_offset = 0;
    vc->pristine = 0;
}

void vx_view_camera_orbit(vx_view_camera *vc, double daz, double del) {
    vc_touch(vc);
    vc->az = fmod(vc->az + daz, 360.0);
    vc->el = fmax(-89.0, fmin(89.0, vc->el + del));
}

void vx_view_camera_spin(vx_view_camera *vc, double deg) {
    /* with --azimuth the spin stays an exact CLI orbit (what `render --azimuth` gives) */
    if (vc->pristine && vc->cli.has_azimuth) vc->cli_az_offset = fmod(vc->cli_az_offset + deg, 360.0);
    else vx_view_camera_orbit(vc, deg, 0);
}

/* Camera right and up (world) for the current free camera. */
static void vc_axes(const vx_view_camera *vc, double right[3], double cup[3], double fwd[3]) {
    double ca = cos(vc->az * VX_DEG), sa = sin(vc->az * VX_DEG);
    double ce = cos(vc->el * VX_DEG), se = sin(vc->el * VX_DEG);
    for (int i = 0; i < 3; i++) fwd[i] = -(ce * sa * vc->bx[i] + se * vc->up[i] + ce * ca * vc->bz[i]);
    v3_cross(fwd, vc->up, right);
    v3_norm(right);
    v3_cross(right, fwd, cup);
}

void vx_view_camera_pan(vx_view_camera *vc, double dx, double dy, int fb_w) {
    double r[3], u[3], f[3];
    vc_touch(vc);
    vc_axes(vc, r, u, f);
    double s = 2.0 * vc->dist * tan(0.5 * vc->fov_deg * VX_DEG) / (fb_w > 0 ? fb_w : 1);
    for (int i = 0; i < 3; i++) vc->pivot[i] += s * (-dx * r[i] + dy * u[i]);
}

void vx_view_camera_zoom(vx_view_camera *vc, double factor) {
    vc_touch(vc);
    vc->dist = fmax(1e-3 * vc->radius, fmin(1e3 * vc->radius, vc->dist * factor));
}

void vx_view_camera_fly(vx_view_camera *vc, double fwd, double right, double upward) {
    double r[3], u[3], f[3];
    vc_touch(vc);
    vc_axes(vc, r, u, f);
    for (int i = 0; i < 3; i++) vc->pivot[i] += fwd * f[i] + right * r[i] + upward * vc->up[i];
}

void vx_view_camera_frame(vx_view_camera *vc, int w, int h) {
    vc_touch(vc);
    double half_x = 0.5 * vc->fov_deg * VX_DEG;
    double half_y = atan(tan(half_x) * (w > 0 && h > 0 ? (double)h / w : 1.0));
    double half = fmin(half_x, half_y);
    memcpy(vc->pivot, vc->center, sizeof vc->pivot);
    vc->dist = vc->radius / sin(half) * 1.02;
}

void vx_view_camera_reset(vx_view_camera *vc) {
    vc->pristine = 1;
    vc->cli_az_offset = 0;
    vc->az = vc->home[0]; vc->el = vc->home[1]; vc->dist = vc->home[2];
    memcpy(vc->pivot, vc->home + 3, 3 * sizeof(double));
}
