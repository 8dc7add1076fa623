/* view_modes.c - the viewer's four render modes turned into RGB8 for display: colour
 * (vx_image_quantize, identical to `voxray render`), depth, opacity, and the occupancy
 * cells that empty-space skipping uses. Called by view.c once per host-side frame. */
#include <math.h>
#include <string.h>

#include "image.h"
#include "view.h"
#include "vx_common.h"

static const char *const vx_mode_names[] = {"colour", "depth", "opacity", "occupancy"};

const char *vx_view_mode_name(int mode) {
    return mode >= 0 && mode < 4 ? vx_mode_names[mode] : "?";
}

int vx_view_mode_parse(const char *s, int *mode) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, vx_mode_names[i]) || (s[0] == '1' + i && !s[1])) { *mode = i; return 0; }
    if (!strcmp(s, "color")) { *mode = VX_MODE_COLOR; return 0; }
    return vx_error("--mode: '%s' is not one of colour, depth, opacity, occupancy (or 1..4)", s);
}

/* The rounding of image.c: so opacity mode shows the bytes of `render --opacity X.png`. */
static unsigned char q8(float v) {
    if (!(v > 0.0f)) return 0; /* also NaN */
    if (v >= 1.0f) return 255;
    return (unsigned char)lrintf(v * 255.0f);
}

/* Expected depth per pixel normalised over the frame's hit range; near is bright. */
static void mode_depth(const vx_frame *f, unsigned char *rgb) {
    size_t n = (size_t)f->width * f->height;
    float lo = 3e38f, hi = -3e38f;
    for (size_t i = 0; i < n; i++) {
        if (f->alpha[i] < 1e-3f) continue;
        float d = f->depth[i] / f->alpha[i];
        lo = vx_minf(lo, d);
        hi = vx_maxf(hi, d);
    }
    float span = hi > lo ? hi - lo : 1.0f;
    for (size_t i = 0; i < n; i++) {
        float g = 0.0f;
        if (f->alpha[i] >= 1e-3f) g = 1.0f - 0.85f * (f->depth[i] / f->alpha[i] - lo) / span;
        g *= vx_clampf(f->alpha[i] * 4.0f, 0.0f, 1.0f); /* fade the faint fringe */
        rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = q8(g);
    }
}

/* Walk the occupancy cells along one pixel's ray: the first occupied cell is shaded by
 * the face the ray entered through; rays that only cross empty cells are tinted blue. */
static void occ_pixel(const vx_volume *v, const vx_camera *c, int i, int j, const unsigned char *col,
                      unsigned char *out) {
    const vx_march_params *m = &v->mp;
    vx_vec3 o, d, oi, di;
    float t0, t1, res[3] = {col[0] / 255.0f, col[1] / 255.0f, col[2] / 255.0f};
    vx_camera_ray(c, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
    oi = vx_affine_point(m->w2i, o);
    di = vx_affine_dir(m->w2i, d);
    if (vx_ray_box(m->box_lo, m->box_hi, oi, di, &t0, &t1)) {
        static const float face[3] = {0.70f, 1.0f, 0.85f};
        float dd[3] = {di.x, di.y, di.z}, t = t0, tint[3] = {0.10f, 0.16f, 0.35f};
        int axis = 1, hit = 0, cells = 0;
        /* entry face of the box: the axis whose slab entered last */
        float best = -3e38f, oo[3] = {oi.x, oi.y, oi.z};
        for (int a = 0; a < 3; a++) {
            if (fabsf(dd[a]) < 1e-12f) continue;
            float ta = ((dd[a] > 0 ? m->box_lo[a] : m->box_hi[a]) - oo[a]) / dd[a];
            if (ta > best) { best = ta; axis = a; }
        }
        while (t < t1 && cells < 4096) {
            vx_vec3 p = vx_add(oi, vx_scale(di, t + 1e-4f * (t1 - t0)));
            int cx = 0, cy = 0, cz = 0, ci = 0;
            if (m->occ_b > 0) ci = vx_occ_cell(m, p, &cx, &cy, &cz);
            if (!v->occ || m->occ_b <= 0 || v->occ[ci]) { hit = 1; break; }
            float te = vx_occ_exit(m, oi, di, cx, cy, cz), bt = 3e38f;
            int c3[3] = {cx, cy, cz};
            for (int a = 0; a < 3; a++) { /* which face the ray leaves through */
                if (fabsf(dd[a]) < 1e-12f) continue;
                float edge = (float)((dd[a] > 0 ? c3[a] + 1 : c3[a]) * m->occ_b);
                float ta = (edge - oo[a]) / dd[a];
                if (ta < bt) { bt = ta; axis = a; }
            }
            t = te > t ? te : t + 1e-3f;
            cells++;
        }
        if (hit) {
            float shade = face[axis] * (1.0f - 0.5f * (t - t0) / vx_maxf(t1 - t0, 1e-6f));
            tint[0] = 1.0f * shade; tint[1] = 0.55f * shade; tint[2] = 0.15f * shade;
        }
        for (int k = 0; k < 3; k++) res[k] = 0.35f * res[k] + 0.65f * tint[k];
    }
    for (int k = 0; k < 3; k++) out[k] = q8(res[k]);
}

void vx_view_colorize(int mode, const vx_frame *f, const vx_volume *v, const vx_camera *c,
                      unsigned char *rgb) {
    size_t n = (size_t)f->width * f->height;
    if (mode == VX_MODE_DEPTH && f->depth) { mode_depth(f, rgb); return; }
    if (mode == VX_MODE_OPACITY) {
        for (size_t i = 0; i < n; i++) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = q8(f->alpha[i]);
        return;
    }
    vx_image_quantize(f, 0, rgb);
    if (mode != VX_MODE_OCCUPANCY) return;
    #pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < f->height; i++)
        for (int j = 0; j < f->width; j++) {
            unsigned char *p = rgb + 3 * ((size_t)i * f->width + j);
            occ_pixel(v, c, i, j, p, p);
        }
}
