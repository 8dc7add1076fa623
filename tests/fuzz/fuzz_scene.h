/* fuzz_scene.h - what the scene-level fuzz targets share: a tiny valid grid.npy next to
 * the input (for manifests), and load-then-render of one small CPU frame with the scene's
 * camera. Included by fuzz_scene.c, fuzz_npy.c and fuzz_render.c. */
#ifndef FUZZ_SCENE_H
#define FUZZ_SCENE_H

#include "fuzz_common.h"
#include "npy.h"
#include "render.h"
#include "scene.h"

/* grid.npy (4 channels, 3x3x3) in the fuzz directory, written once. */
static void fuzz_scene_grid(void) {
    static int done;
    if (done) return;
    done = 1;
    const char *p = fuzz_write(NULL, 0, "grid.npy");
    vx_grid g;
    if (!p || vx_grid_alloc(&g, 3, 3, 3, 4, "fuzz")) return;
    for (size_t i = 0; i < vx_grid_count(&g); i++) g.data[i] = (float)(i % 7) * 0.25f;
    vx_npy_write_grid(p, &g, 0);
    vx_grid_free(&g);
}

/* Open `path` as a scene; when it loads, render a 6x5 frame on the CPU (one thread) from
 * its camera (or the default one) with and without empty-space skipping. */
static void fuzz_scene_render(const char *path, int render) {
    vx_scene s;
    if (vx_scene_load(path, NULL, &s) != 0) { fuzz_check_error(); return; }
    if (render) {
        double eye[3], target[3], up[3], fov;
        vx_scene_default_camera(&s, eye, target, up, &fov);
        if (s.has_camera) {
            memcpy(eye, s.eye, sizeof eye);
            memcpy(target, s.target, sizeof target);
            memcpy(up, s.up, sizeof up);
            fov = s.fov_deg;
        }
        vx_camera cam;
        if (vx_camera_look_at(&cam, eye, target, up, fov, 6, 5) == 0) {
            for (int skip = 0; skip < 2; skip++) {
                vx_render_opts o;
                vx_render_opts_default(&o);
                o.threads = 1;
                o.no_skip = skip;
                o.want_depth = 1;
                vx_volume v;
                vx_frame f;
                memset(&f, 0, sizeof f);
                if (vx_volume_prepare(&v, &s, &o) == 0) {
                    if (vx_frame_alloc(&f, 6, 5, 1) == 0) {
                        if (vx_render_cpu(&v, &cam, &o, &f) != 0) fuzz_check_error();
                        vx_frame_free(&f);
                    }
                    vx_volume_free(&v);
                } else {
                    fuzz_check_error();
                }
            }
        } else {
            fuzz_check_error();
        }
    }
    vx_scene_free(&s);
}

#endif
