/* march.h - one ray through the grid: clip to the box, cut into segments, sample at
 * segment midpoints, trilinearly interpolate, decode, composite front to back.
 * The CPU renderer calls vx_march() per pixel; the CUDA kernels share these helpers so
 * both backends compute the same samples. docs/RENDERING.md states the rules. */
#ifndef VX_MARCH_H
#define VX_MARCH_H

#include "decode.h"

typedef struct {
    int nx, ny, nz, nc;     /* grid lattice size and channels, data is (z, y, x, c) */
    float w2i[12];          /* world -> index space (x, y, z in lattice units) */
    float box_lo[3], box_hi[3]; /* index-space box the rays are clipped to */
    float dt;               /* segment length in world units */
    float stop;             /* early termination when T < stop (0: never) */
    float bg[3];            /* background colour */
    int occ_b;              /* occupancy cell size in voxels; 0 disables skipping */
    int occ_n[3];           /* occupancy grid size (x, y, z) */
    vx_decoder dec;
} vx_march_params;

typedef struct {
    float rgb[3];   /* composited colour including background */
    float trans;    /* T_end: transmittance left when the ray leaves (opacity = 1 - T) */
    float depth;    /* expected depth sum T_k alpha_k t_k (world units, unnormalised) */
    int samples;    /* samples evaluated (skipped empty space not counted) */
} vx_ray_result;

/* Slab test in index space; t in world units because the map is affine. */
VX_HD int vx_ray_box(const float *lo, const float *hi, vx_vec3 o, vx_vec3 d, float *t0, float *t1) {
    float tn = 0.0f, tf = 3.0e38f;
    float oo[3] = {o.x, o.y, o.z}, dd[3] = {d.x, d.y, d.z};
    for (int a = 0; a < 3; a++) {
        if (fabsf(dd[a]) < 1e-12f) {
            if (oo[a] < lo[a] || oo[a] > hi[a]) return 0;
            continue;
        }
        float inv = 1.0f / dd[a];
        float ta = (lo[a] - oo[a]) * inv, tb = (hi[a] - oo[a]) * inv;
        if (ta > tb) { float s = ta; ta = tb; tb = s; }
        tn = vx_maxf(tn, ta);
        tf = vx_minf(tf, tb);
    }
    *t0 = tn;
    *t1 = tf;
    return tf > tn;
}

/* Lattice cell and weight along one axis, clamping to the border (padding "border"). */
VX_HD void vx_axis_cell(float x, int n, int *i0, int *i1, float *f) {
    x = vx_clampf(x, 0.0f, (float)(n - 1));
    int i = (int)floorf(x);
    if (i > n - 2) i = n - 2;
    if (i < 0) i = 0;
    *i0 = i;
    *i1 = n > 1 ? i + 1 : i;
    *f = n > 1 ? x - (float)i : 0.0f;
}

/* Trilinear interpolation of all channels at index-space point p. */
VX_HD void vx_trilinear_fetch(const float *data, int nx, int ny, int nz, int nc, vx_vec3 p, float *out) {
    int x0, x1, y0, y1, z0, z1;
    float fx, fy, fz;
    vx_axis_cell(p.x, nx, &x0, &x1, &fx);
    vx_axis_cell(p.y, ny, &y0, &y1, &fy);
    vx_axis_cell(p.z, nz, &z0, &z1, &fz);
    size_t sy = (size_t)nx * nc, sz = (size_t)ny * sy;
    const float *c000 = data + z0 * sz + y0 * sy + (size_t)x0 * nc;
    const float *c001 = data + z0 * sz + y0 * sy + (size_t)x1 * nc;
    const float *c010 = data + z0 * sz + y1 * sy + (size_t)x0 * nc;
    const float *c011 = data + z0 * sz + y1 * sy + (size_t)x1 * nc;
    const float *c100 = data + z1 * sz + y0 * sy + (size_t)x0 * nc;
    const float *c101 = data + z1 * sz + y0 * sy + (size_t)x1 * nc;
    const float *c110 = data + z1 * sz + y1 * sy + (size_t)x0 * nc;
    const float *c111 = data + z1 * sz + y1 * sy + (size_t)x1 * nc;
    float w000 = (1 - fz) * (1 - fy) * (1 - fx), w001 = (1 - fz) * (1 - fy) * fx;
    float w010 = (1 - fz) * fy * (1 - fx), w011 = (1 - fz) * fy * fx;
    float w100 = fz * (1 - fy) * (1 - fx), w101 = fz * (1 - fy) * fx;
    float w110 = fz * fy * (1 - fx), w111 = fz * fy * fx;
    for (int c = 0; c < nc; c++)
        out[c] = w000 * c000[c] + w001 * c001[c] + w010 * c010[c] + w011 * c011[c] +
                 w100 * c100[c] + w101 * c101[c] + w110 * c110[c] + w111 * c111[c];
}

/* Occupancy cell holding index-space point p (clamped into the grid). */
VX_HD int vx_occ_cell(const vx_march_params *m, vx_vec3 p, int *cx, int *cy, int *cz) {
    int b = m->occ_b;
    *cx = vx_mini((int)floorf(vx_clampf(p.x, 0.0f, (float)(m->nx - 1))) / b, m->occ_n[0] - 1);
    *cy = vx_mini((int)floorf(vx_clampf(p.y, 0.0f, (float)(m->ny - 1))) / b, m->occ_n[1] - 1);
    *cz = vx_mini((int)floorf(vx_clampf(p.z, 0.0f, (float)(m->nz - 1))) / b, m->occ_n[2] - 1);
    return (*cz * m->occ_n[1] + *cy) * m->occ_n[0] + *cx;
}

/* World t at which the ray (index space) leaves occupancy cell (cx, cy, cz). */
VX_HD float vx_occ_exit(const vx_march_params *m, vx_vec3 o, vx_vec3 d, int cx, int cy, int cz) {
    int c[3] = {cx, cy, cz};
    float oo[3] = {o.x, o.y, o.z}, dd[3] = {d.x, d.y, d.z}, t = 3.0e38f;
    for (int a = 0; a < 3; a++) {
        float lo = c[a] == 0 ? m->box_lo[a] : (float)(c[a] * m->occ_b);
        float hi = c[a] == m->occ_n[a] - 1 ? m->box_hi[a] : (float)((c[a] + 1) * m->occ_b);
        if (dd[a] > 1e-12f) t = vx_minf(t, (hi - oo[a]) / dd[a]);
        else if (dd[a] < -1e-12f) t = vx_minf(t, (lo - oo[a]) / dd[a]);
    }
    return t;
}

/* Number of segments for a clipped interval of length len (last one shorter). */
VX_HD int vx_segment_count(float len, float dt) {
    int n = (int)ceilf(len / dt - 1e-4f);
    return n < 1 ? 1 : n;
}

/* Segment k of n over [t0, t1]: all dt long but the last, which ends exactly at t1. */
VX_HD void vx_segment(const vx_march_params *m, float t0, float t1, int n, int k, float *ta, float *tb) {
    *ta = t0 + (float)k * m->dt;
    *tb = k == n - 1 ? t1 : *ta + m->dt;
}

/* If index-space point p lies in an empty occupancy cell, move *k to the last segment
 * whose midpoint is before the cell's exit (the caller's loop then steps once) and return
 * 1. floor keeps the jump safe: no sample with density is ever skipped. */
VX_HD int vx_occ_skip(const vx_march_params *m, const unsigned char *occ, vx_vec3 oi, vx_vec3 di, vx_vec3 p,
                      float t0, int n, int *k) {
    int cx, cy, cz;
    if (occ[vx_occ_cell(m, p, &cx, &cy, &cz)]) return 0;
    float te = vx_occ_exit(m, oi, di, cx, cy, cz);
    float kf = floorf((te - t0) / m->dt - 0.5f);
    if (kf > (float)n) kf = (float)n;
    if ((int)kf - 1 > *k) *k = (int)kf - 1;
    return 1;
}

/* March one world-space ray (o, unit d). occ may be NULL (no skipping). */
VX_HD vx_ray_result vx_march(const vx_march_params *m, const float *data, const unsigned char *occ,
                             vx_vec3 o, vx_vec3 d) {
    vx_ray_result r;
    float acc[3] = {0.0f, 0.0f, 0.0f}, T = 1.0f, depth = 0.0f, t0, t1;
    int samples = 0;
    vx_vec3 oi = vx_affine_point(m->w2i, o), di = vx_affine_dir(m->w2i, d);
    if (vx_ray_box(m->box_lo, m->box_hi, oi, di, &t0, &t1)) {
        int n = vx_segment_count(t1 - t0, m->dt);
        float raw[VX_MAX_CHANNELS], rgb[3];
        for (int k = 0; k < n; k++) {
            float ta, tb;
            vx_segment(m, t0, t1, n, k, &ta, &tb);
            float tm = 0.5f * (ta + tb);
            vx_vec3 p = vx_add(oi, vx_scale(di, tm));
            if (occ && vx_occ_skip(m, occ, oi, di, p, t0, n, &k)) continue;
            vx_trilinear_fetch(data, m->nx, m->ny, m->nz, m->nc, p, raw);
            float sigma = vx_decode(&m->dec, raw, d, rgb);
            float alpha = 1.0f - expf(-sigma * (tb - ta));
            float w = T * alpha;
            acc[0] += w * rgb[0]; acc[1] += w * rgb[1]; acc[2] += w * rgb[2];
            depth += w * tm;
            T *= 1.0f - alpha;
            samples++;
            if (T < m->stop) break;
        }
    }
    for (int c = 0; c < 3; c++) r.rgb[c] = acc[c] + T * m->bg[c];
    r.trans = T;
    r.depth = depth;
    r.samples = samples;
    return r;
}

#endif
