/* hdda_fixture.h - what the HDDA tests share (tests/test_hdda.c on the CPU,
 * tests/gpu/test_hdda_cuda.c on the device): random sparse fog scenes, a random camera
 * looking at the box, and the largest rgb difference of two frames. The includer
 * provides frand() (vx_test.h or gpu_test.h). */
#ifndef VX_HDDA_FIXTURE_H
#define VX_HDDA_FIXTURE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"
#include "sparse_grid.h"

/* A random fog scene: n^3 lattice, bricks present with probability 1/2, values in [0, 1)
 * inside each brick's interior and 0 on its faces when `clean_faces`. */
static void random_scene(vx_scene *s, int n, int clean_faces) {
    memset(s, 0, sizeof *s);
    vx_grid *g = &s->grid;
    g->nx = g->ny = g->nz = n;
    g->nc = 1;
    g->sparse = calloc(1, sizeof *g->sparse);
    int bn = n / 8;
    size_t keep = 0;
    int *on = malloc(sizeof(int) * bn * bn * bn);
    for (int i = 0; i < bn * bn * bn; i++) keep += on[i] = frand(0, 1) < 0.5f;
    if (!keep) keep = on[0] = 1; /* at 16^3 (8 bricks) all off is 1 draw in 256: an empty grid the builder refuses */
    assert_int_equal(vx_sparse_alloc(g->sparse, n, n, n, 1, keep, "random"), 0);
    size_t slot = 0;
    for (int i = 0; i < bn * bn * bn; i++) {
        if (!on[i]) continue;
        g->sparse->table[i] = (int32_t)slot;
        float *b = g->sparse->pool + slot++ * VX_BRICK_VOXELS;
        for (int z = 0; z < 8; z++)
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++) {
                    int face = x == 0 || y == 0 || z == 0 || x == 7 || y == 7 || z == 7;
                    b[(z * 8 + y) * 8 + x] = clean_faces && face ? 0.0f : frand(0, 1);
                }
    }
    free(on);
    for (int k = 0; k < 12; k++) g->i2w[k] = 0;
    g->i2w[0] = g->i2w[5] = g->i2w[10] = 2.0f / n;
    g->i2w[3] = g->i2w[7] = g->i2w[11] = -1.0f;
    snprintf(g->source, sizeof g->source, "random");
    vx_fog_decoder(&s->dec, 1.0f);
    s->dec.density_scale = 4.0f;
    s->step = 0.5f;
}

static void camera(vx_camera *c, int w, int h) {
    memset(c, 0, sizeof *c);
    float eye[3] = {frand(2.5f, 3.5f), frand(1, 2), frand(-3, 3)};
    vx_vec3 fw = vx_norm(vx_v3(-eye[0], -eye[1], -eye[2])), up = vx_v3(0, 1, 0);
    vx_vec3 r = vx_norm(vx_cross(fw, up)), u = vx_cross(r, fw), b = vx_scale(fw, -1);
    float m[12] = {r.x, u.x, b.x, eye[0], r.y, u.y, b.y, eye[1], r.z, u.z, b.z, eye[2]};
    memcpy(c->c2w, m, sizeof m);
    c->width = w;
    c->height = h;
    c->fov_x = 0.8f;
    c->focal = 0.5f * w / tanf(0.5f * c->fov_x);
}

static double max_diff(const vx_frame *a, const vx_frame *b) {
    double mx = 0;
    for (size_t i = 0; i < (size_t)a->width * a->height * 3; i++) {
        double e = fabs((double)a->rgb[i] - b->rgb[i]);
        if (!(e <= mx)) mx = e;
    }
    return mx;
}

#endif
