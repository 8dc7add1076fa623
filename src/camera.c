/* camera.c - host construction of vx_camera: from a camera-to-world matrix, look-at,
 * orbits about a centre, and NeRF-synthetic transforms.json camera paths. */
#include "camera.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

int vx_camera_from_c2w(vx_camera *c, const double m[16], double fov_x, int width, int height) {
    if (width < 1 || height < 1 || width > 16384 || height > 16384)
        return vx_error("image size %dx%d is outside 1..16384", width, height);
    if (!(fov_x > 0 && fov_x < M_PI) || !isfinite(fov_x))
        return vx_error("field of view %g degrees is outside (0, 180)", fov_x * 180.0 / M_PI);
    for (int i = 0; i < 12; i++) {
        if (!isfinite(m[i])) return vx_error("camera matrix has a non-finite entry");
        if (fabs(m[i]) > 1e12) return vx_error("camera matrix entry %g is beyond +-1e12", m[i]);
    }
    /* the rotation part turns pixels into ray directions: each column must have a usable
     * length and the three must be independent, or directions are zero, NaN or huge */
    double col[3][3], len[3];
    for (int k = 0; k < 3; k++) {
        for (int r = 0; r < 3; r++) col[k][r] = m[4 * r + k];
        len[k] = sqrt(col[k][0] * col[k][0] + col[k][1] * col[k][1] + col[k][2] * col[k][2]);
        if (!(len[k] >= 1e-6 && len[k] <= 1e6))
            return vx_error("camera matrix is degenerate: rotation column %d has length %g (expected about 1)", k, len[k]);
    }
    double det = col[0][0] * (col[1][1] * col[2][2] - col[1][2] * col[2][1]) -
                 col[1][0] * (col[0][1] * col[2][2] - col[0][2] * col[2][1]) +
                 col[2][0] * (col[0][1] * col[1][2] - col[0][2] * col[1][1]);
    if (!(fabs(det) / (len[0] * len[1] * len[2]) > 1e-6))
        return vx_error("camera matrix is degenerate: its rotation columns are not independent");
    for (int i = 0; i < 12; i++) c->c2w[i] = (float)m[i];
    c->fov_x = (float)fov_x;
    c->width = width;
    c->height = height;
    c->focal = (float)(0.5 * width / tan(0.5 * fov_x));
    return 0;
}

int vx_camera_look_at(vx_camera *c, const double eye[3], const double target[3], const double up[3],
                      double fov_deg, int width, int height) {
    double b[3] = {eye[0] - target[0], eye[1] - target[1], eye[2] - target[2]}; /* camera +Z (back) */
    double bl = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    if (!(bl > 1e-12) || !isfinite(bl)) return vx_error("camera eye and target coincide (or are not finite)");
    for (int a = 0; a < 3; a++) b[a] /= bl;
    double r[3] = {up[1] * b[2] - up[2] * b[1], up[2] * b[0] - up[0] * b[2], up[0] * b[1] - up[1] * b[0]};
    double rl = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    if (!(rl > 1e-9)) return vx_error("camera up vector is parallel to the view direction (or zero)");
    for (int a = 0; a < 3; a++) r[a] /= rl;
    double u[3] = {b[1] * r[2] - b[2] * r[1], b[2] * r[0] - b[0] * r[2], b[0] * r[1] - b[1] * r[0]};
    double m[16] = {r[0], u[0], b[0], eye[0], r[1], u[1], b[1], eye[1], r[2], u[2], b[2], eye[2], 0, 0, 0, 1};
    return vx_camera_from_c2w(c, m, fov_deg * M_PI / 180.0, width, height);
}

int vx_camera_orbit(vx_camera *c, const double center[3], double az_deg, double el_deg, double dist,
                    const double up[3], double fov_deg, int width, int height) {
    if (!(dist > 0) || !isfinite(dist)) return vx_error("orbit distance %g must be > 0", dist);
    if (fabs(el_deg) >= 90.0) return vx_error("orbit elevation %g must be inside (-90, 90)", el_deg);
    double az = az_deg * M_PI / 180.0, el = el_deg * M_PI / 180.0, eye[3];
    int zup = fabs(up[2]) > fabs(up[1]);
    if (zup) {
        double s = up[2] > 0 ? 1.0 : -1.0;
        eye[0] = center[0] + dist * cos(el) * sin(az);
        eye[1] = center[1] + dist * cos(el) * cos(az);
        eye[2] = center[2] + s * dist * sin(el);
    } else {
        double s = up[1] >= 0 ? 1.0 : -1.0;
        eye[0] = center[0] + dist * cos(el) * sin(az);
        eye[1] = center[1] + s * dist * sin(el);
        eye[2] = center[2] + dist * cos(el) * cos(az);
    }
    return vx_camera_look_at(c, eye, center, up, fov_deg, width, height);
}

int vx_camera_path_load(const char *path, vx_camera_path *p) {
    memset(p, 0, sizeof *p);
    unsigned char *text;
    size_t len;
    if (vx_read_file(path, 64u << 20, &text, &len)) return -1;
    if (vx_json_refuse_nul((const char *)text, len, path)) { free(text); return -1; }
    cJSON *root = cJSON_ParseWithLength((const char *)text, len);
    free(text);
    if (!root) return vx_error("%s: not valid JSON", path);
    int rc = -1;
    const cJSON *ang = cJSON_GetObjectItemCaseSensitive(root, "camera_angle_x");
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frames");
    if (!cJSON_IsNumber(ang) || !isfinite(ang->valuedouble) || ang->valuedouble <= 0 || ang->valuedouble >= M_PI) {
        vx_error("%s: 'camera_angle_x' must be a number in (0, pi) radians", path);
        goto done;
    }
    if (!cJSON_IsArray(frames) || cJSON_GetArraySize(frames) < 1) {
        vx_error("%s: 'frames' must be a non-empty array", path);
        goto done;
    }
    p->camera_angle_x = ang->valuedouble;
    p->n = cJSON_GetArraySize(frames);
    p->c2w = vx_calloc((size_t)p->n, sizeof *p->c2w, path);
    if (!p->c2w) goto done;
    int i = 0;
    for (const cJSON *f = frames->child; f; f = f->next, i++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(f, "transform_matrix");
        if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) != 4) {
            vx_error("%s: frames[%d].transform_matrix must be a 4x4 array", path, i);
            goto done;
        }
        int r = 0;
        for (const cJSON *row = m->child; row; row = row->next, r++) {
            if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != 4) {
                vx_error("%s: frames[%d].transform_matrix row %d must have 4 numbers", path, i, r);
                goto done;
            }
            int k = 0;
            for (const cJSON *e = row->child; e; e = e->next, k++) {
                if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) {
                    vx_error("%s: frames[%d].transform_matrix[%d][%d] is not a finite number", path, i, r, k);
                    goto done;
                }
                p->c2w[i][r * 4 + k] = e->valuedouble;
            }
        }
    }
    rc = 0;
done:
    cJSON_Delete(root);
    if (rc) vx_camera_path_free(p);
    return rc;
}

void vx_camera_path_free(vx_camera_path *p) {
    free(p->c2w);
    p->c2w = NULL;
    p->n = 0;
}
