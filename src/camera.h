/* camera.h - the pinhole camera (NeRF/Blender convention: camera looks along -Z, +Y up,
 * +X right, horizontal field of view) and its ray generator, shared by both backends;
 * plus host helpers for look-at, orbits and NeRF transforms.json paths. */
#ifndef VX_CAMERA_H
#define VX_CAMERA_H

#include "vx_math.h"

typedef struct {
    float c2w[12];   /* row-major 3x4 camera-to-world: columns right, up, back, eye */
    float fov_x;     /* horizontal field of view, radians */
    float focal;     /* (width/2) / tan(fov_x/2), pixels */
    int width, height;
} vx_camera;

/* Ray through pixel (row i, column j): px = j + 0.5, py = i + 0.5 for the centre. */
VX_HD void vx_camera_ray(const vx_camera *c, float px, float py, vx_vec3 *o, vx_vec3 *d) {
    float x = (px - 0.5f * (float)c->width) / c->focal;
    float y = -(py - 0.5f * (float)c->height) / c->focal;
    vx_vec3 dir = vx_affine_dir(c->c2w, vx_v3(x, y, -1.0f));
    *d = vx_norm(dir);
    *o = vx_v3(c->c2w[3], c->c2w[7], c->c2w[11]);
}

#ifndef __CUDACC__
#ifdef __cplusplus
extern "C" {
#endif
/* Host-side construction. Each returns 0, or -1 with vx_error set. */
int vx_camera_from_c2w(vx_camera *c, const double c2w[16], double fov_x_rad, int width, int height);
int vx_camera_look_at(vx_camera *c, const double eye[3], const double target[3],
                      const double up[3], double fov_deg, int width, int height);
/* Orbit about `center`: azimuth about +Y from +Z toward +X, elevation above the XZ plane. */
int vx_camera_orbit(vx_camera *c, const double center[3], double azimuth_deg,
                    double elevation_deg, double distance, const double up[3],
                    double fov_deg, int width, int height);

/* A NeRF-synthetic camera file: camera_angle_x and frames[].transform_matrix. */
typedef struct {
    double camera_angle_x;
    int n;
    double (*c2w)[16]; /* n row-major 4x4 matrices */
} vx_camera_path;
int vx_camera_path_load(const char *path, vx_camera_path *p);
void vx_camera_path_free(vx_camera_path *p);
#ifdef __cplusplus
}
#endif
#endif

#endif
