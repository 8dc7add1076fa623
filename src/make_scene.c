/* make_scene.c - deterministic procedural sample scenes (orbs, shell, sh-glass, cloud,
 * phantom) for the README, the demo, tests and benchmarks, built in memory and written to
 * disk. cmd/make_scene.c is the command; tests call vx_make_scene() directly. */
#include "make_scene.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"
#include "outputs.h"
#include "sparse_grid.h"
#include "vx_common.h"

/* Every scene lives in the box [-1, 1]^3, lattice points on the corners. Densities are in
 * world units (the box is 2 wide) so a scene looks the same at every resolution. */
static const double vx__box_lo[3] = {-1, -1, -1}, vx__box_hi[3] = {1, 1, 1};

/* ---- small helpers --------------------------------------------------------------------- */

static double vx__clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

static double vx__smoothstep(double a, double b, double x) {
    double t = vx__clamp((x - a) / (b - a), 0.0, 1.0);
    return t * t * (3.0 - 2.0 * t);
}

/* Smooth bump with compact support: 1 at u = 0, 0 for |u| >= 1 (C1 at the edge). */
static double vx__bump(double u) {
    double s = 1.0 - u * u;
    return s > 0.0 ? s * s : 0.0;
}

static double vx__dot3(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* ---- noise: improved gradient noise over a seeded permutation, and fBm ------------------ */

#define VX__SHELL_HOLES 20    /* shell: windows on a Fibonacci spiral */

typedef struct {
    unsigned char perm[512]; /* a permutation of 0..255, repeated */
    double h;                /* lattice spacing in world units: 2 / (res - 1) */
    double rot[10][9];       /* phantom: world -> ellipsoid-frame rotation per ellipsoid */
    double holes[VX__SHELL_HOLES][3]; /* shell: unit directions of the window centres */
} vx__gen_ctx;

/* Fisher-Yates with a fixed xorshift32 stream: the same table on every machine. */
static void vx__perm_init(vx__gen_ctx *c, uint32_t seed) {
    uint32_t s = seed ? seed : 0x9e3779b9u;
    for (int i = 0; i < 256; i++) c->perm[i] = (unsigned char)i;
    for (int i = 255; i > 0; i--) {
        s ^= s << 13; s ^= s >> 17; s ^= s << 5;
        int j = (int)(s % (uint32_t)(i + 1));
        unsigned char t = c->perm[i]; c->perm[i] = c->perm[j]; c->perm[j] = t;
    }
    memcpy(c->perm + 256, c->perm, 256);
}

static double vx__fade(double t) { return t * t * t * (t * (t * 6.0 - 15.0) + 10.0); }

/* Dot of the offset with one of the 12 cube-edge gradients (plus 4 repeats). */
static double vx__grad(int h, double x, double y, double z) {
    switch (h & 15) {
    case 0: return x + y;  case 1: return -x + y; case 2: return x - y;  case 3: return -x - y;
    case 4: return x + z;  case 5: return -x + z; case 6: return x - z;  case 7: return -x - z;
    case 8: return y + z;  case 9: return -y + z; case 10: return y - z; case 11: return -y - z;
    case 12: return x + y; case 13: return -y + z; case 14: return -x + y; default: return -y - z;
    }
}

static double vx__lerp(double t, double a, double b) { return a + t * (b - a); }

/* Gradient noise in about [-1, 1], period 256 along each axis. */
static double vx__noise(const vx__gen_ctx *c, double x, double y, double z) {
    double fx = floor(x), fy = floor(y), fz = floor(z);
    int X = (int)fx & 255, Y = (int)fy & 255, Z = (int)fz & 255;
    x -= fx; y -= fy; z -= fz;
    double u = vx__fade(x), v = vx__fade(y), w = vx__fade(z);
    const unsigned char *p = c->perm;
    int A = p[X] + Y, AA = p[A] + Z, AB = p[A + 1] + Z;
    int B = p[X + 1] + Y, BA = p[B] + Z, BB = p[B + 1] + Z;
    return vx__lerp(w,
        vx__lerp(v, vx__lerp(u, vx__grad(p[AA], x, y, z), vx__grad(p[BA], x - 1, y, z)),
                    vx__lerp(u, vx__grad(p[AB], x, y - 1, z), vx__grad(p[BB], x - 1, y - 1, z))),
        vx__lerp(v, vx__lerp(u, vx__grad(p[AA + 1], x, y, z - 1), vx__grad(p[BA + 1], x - 1, y, z - 1)),
                    vx__lerp(u, vx__grad(p[AB + 1], x, y - 1, z - 1),
                             vx__grad(p[BB + 1], x - 1, y - 1, z - 1))));
}

/* Fractal Brownian motion: `oct` octaves, lacunarity ~2, gain 1/2, normalised amplitude. */
static double vx__fbm(const vx__gen_ctx *c, double x, double y, double z, int oct) {
    double sum = 0.0, amp = 1.0, norm = 0.0;
    for (int o = 0; o < oct; o++) {
        /* per-octave offsets keep the lattices of different octaves from lining up */
        sum += amp * vx__noise(c, x + 17.31 * o, y - 9.73 * o, z + 5.19 * o);
        norm += amp;
        amp *= 0.5;
        x *= 2.03; y *= 2.03; z *= 2.03;
    }
    return sum / norm;
}

/* ---- orbs: coloured soft spheres ------------------------------------------------------- */

typedef struct { double c[3], r, rgb[3]; } vx__orb;

static const vx__orb vx__orbs[] = {
    {{0.00, 0.00, 0.00}, 0.34, {1.00, 0.72, 0.16}},   /* gold, centre */
    {{0.66, 0.12, 0.08}, 0.22, {0.95, 0.22, 0.20}},   /* red */
    {{-0.58, 0.18, 0.32}, 0.25, {0.20, 0.45, 1.00}},  /* blue */
    {{0.12, 0.58, -0.46}, 0.21, {0.25, 0.85, 0.30}},  /* green */
    {{-0.22, -0.58, -0.36}, 0.24, {0.68, 0.32, 0.95}},/* violet */
    {{0.38, -0.52, 0.50}, 0.19, {0.15, 0.85, 0.85}},  /* cyan */
    {{-0.62, 0.55, -0.42}, 0.17, {1.00, 0.42, 0.68}}, /* pink */
};
#define VX__NORBS ((int)(sizeof vx__orbs / sizeof vx__orbs[0]))

static void vx__orbs_voxel(const vx__gen_ctx *c, const double p[3], float *out) {
    (void)c;
    static const double light[3] = {-0.42, 0.74, 0.52}; /* roughly unit, from upper left */
    double dens = 0.0, wsum = 0.0, rgb[3] = {0, 0, 0};
    for (int k = 0; k < VX__NORBS; k++) {
        const vx__orb *o = &vx__orbs[k];
        double d[3] = {p[0] - o->c[0], p[1] - o->c[1], p[2] - o->c[2]};
        double dist = sqrt(vx__dot3(d, d));
        dens += vx__smoothstep(o->r, 0.82 * o->r, dist); /* solid core, soft rim */
        /* baked soft lighting: brighter on the lit side, a little glow at the core */
        double lam = dist > 1e-9 ? vx__dot3(d, light) / dist : 0.0;
        double shade = 0.55 + 0.45 * vx__clamp(lam, -1.0, 1.0) + 0.25 * vx__bump(dist / (0.6 * o->r));
        /* colour is defined everywhere (the nearest orb's, blended smoothly) so that
         * trilinear interpolation at the soft edges never mixes in black */
        double w = exp(-40.0 * fmax(dist - o->r, 0.0));
        for (int i = 0; i < 3; i++) rgb[i] += w * o->rgb[i] * shade;
        wsum += w;
    }
    out[0] = (float)dens;
    for (int i = 0; i < 3; i++) out[1 + i] = (float)vx__clamp(rgb[i] / wsum, 0.0, 1.0);
}

/* ---- shell: a thin sphere with round windows ------------------------------------------- */

#define VX__SHELL_R 0.72      /* radius */
#define VX__SHELL_HW 0.045    /* half thickness */
#define VX__SHELL_HOLE_R 0.20 /* window radius along the surface */

/* The window centres, once per build (they were recomputed per voxel: 40 cos/sin). */
static void vx__shell_init(vx__gen_ctx *c) {
    double golden = M_PI * (3.0 - sqrt(5.0));
    for (int k = 0; k < VX__SHELL_HOLES; k++) {
        double y = 1.0 - 2.0 * (k + 0.5) / VX__SHELL_HOLES, rr = sqrt(1.0 - y * y);
        c->holes[k][0] = rr * cos(golden * k);
        c->holes[k][1] = y;
        c->holes[k][2] = rr * sin(golden * k);
    }
}

static void vx__shell_voxel(const vx__gen_ctx *c, const double p[3], float *out) {
    double r = sqrt(vx__dot3(p, p));
    double n[3] = {0, 1, 0};
    if (r > 1e-9) { n[0] = p[0] / r; n[1] = p[1] / r; n[2] = p[2] / r; }
    double dens = vx__bump((r - VX__SHELL_R) / VX__SHELL_HW);
    if (dens > 0.0) {
        /* arc distance to the nearest window centre: acos falls as the cosine grows, so
         * one acos of the largest cosine is the least of the twenty angles */
        double most = -1e9;
        for (int k = 0; k < VX__SHELL_HOLES; k++) {
            double d = vx__dot3(n, c->holes[k]);
            most = d > most ? d : most;
        }
        double best = acos(vx__clamp(most, -1.0, 1.0));
        double s = best * VX__SHELL_R;
        dens *= vx__smoothstep(VX__SHELL_HOLE_R - 0.03, VX__SHELL_HOLE_R + 0.03, s);
    }
    out[0] = (float)dens;
    /* colour follows the direction from the centre: a smooth rainbow over the sphere */
    out[1] = (float)vx__clamp(0.55 + 0.42 * n[0], 0.0, 1.0);
    out[2] = (float)vx__clamp(0.55 + 0.42 * n[1], 0.0, 1.0);
    out[3] = (float)vx__clamp(0.55 + 0.42 * n[2], 0.0, 1.0);
}

/* ---- sh-glass: a glassy torus whose colour depends on the view ------------------------- */

void vx_sh2_from_quadratic(double c, const double lin[3], const double q[9], float k[9]) {
    const double C0 = 0.28209479177387814, C1 = 0.4886025119029199;
    const double A = 1.0925484305920792, B6 = 0.31539156525252005, B8 = 0.5462742152960396;
    double qxx = q[0], qyy = q[4], qzz = q[8];
    double qxy = 0.5 * (q[1] + q[3]), qyz = 0.5 * (q[5] + q[7]), qxz = 0.5 * (q[2] + q[6]);
    /* on the unit sphere: zz = 1/3 + b6/(3 B6), xx,yy = 1/3 - b6/(6 B6) +- b8/(2 B8),
     * xy = b4/A, yz = -b5/A, xz = -b7/A, x = -b3/C1, y = -b1/C1, z = b2/C1, 1 = b0/C0 */
    k[0] = (float)((c + (qxx + qyy + qzz) / 3.0) / C0);
    k[1] = (float)(-lin[1] / C1);
    k[2] = (float)(lin[2] / C1);
    k[3] = (float)(-lin[0] / C1);
    k[4] = (float)(2.0 * qxy / A);
    k[5] = (float)(-2.0 * qyz / A);
    k[6] = (float)((2.0 * qzz - qxx - qyy) / (6.0 * B6));
    k[7] = (float)(-2.0 * qxz / A);
    k[8] = (float)((qxx - qyy) / (2.0 * B8));
}

#define VX__TORUS_R 0.56  /* ring radius */
#define VX__TORUS_r 0.27  /* tube radius */
#define VX__GLASS_HW 0.035 /* half width of the dense skin */

static void vx__glass_voxel(const vx__gen_ctx *c, const double p[3], float *out) {
    (void)c;
    /* torus about the y axis: signed distance and outward normal */
    double rho = sqrt(p[0] * p[0] + p[2] * p[2]);
    double qx = rho - VX__TORUS_R, qy = p[1], ql = sqrt(qx * qx + qy * qy);
    double sd = ql - VX__TORUS_r;
    double n[3] = {0, 1, 0};
    if (ql > 1e-9 && rho > 1e-9) {
        n[0] = qx / ql * p[0] / rho; n[1] = qy / ql; n[2] = qx / ql * p[2] / rho;
    }
    /* a dense skin plus a light filling */
    double dens = vx__bump(sd / VX__GLASS_HW) + 0.06 * (1.0 - vx__smoothstep(-0.03, 0.03, sd));
    out[0] = (float)dens;

    /* colour(d) = base + spec * ((d.w)^2 + d.w)/2 + rim * (1 - (d.n)^2) + tint . d, d the
     * ray direction, w the mirror of the light about the normal (a highlight where the
     * reflected ray meets the light), rim a Fresnel-like sheen at grazing angles, tint a
     * per-channel drift across view directions. All quadratic in d: exact in SH 2. */
    static const double light[3] = {-0.79, 0.43, -0.36};
    static const double base[3] = {0.04, 0.30, 0.42}, spec[3] = {0.95, 0.90, 0.80};
    static const double rim[3] = {0.75, 0.10, 0.50};
    static const double tint[3][3] = {{0.22, 0.0, 0.10}, {0.0, -0.10, -0.15}, {-0.20, 0.05, 0.0}};
    double nl = vx__dot3(n, light), w[3];
    for (int i = 0; i < 3; i++) w[i] = light[i] - 2.0 * nl * n[i];
    for (int ch = 0; ch < 3; ch++) {
        double lin[3], q[9];
        for (int i = 0; i < 3; i++) {
            lin[i] = 0.5 * spec[ch] * w[i] + tint[ch][i];
            for (int j = 0; j < 3; j++) q[3 * i + j] = 0.5 * spec[ch] * w[i] * w[j] - rim[ch] * n[i] * n[j];
        }
        /* the plenoxels activation adds 0.5: take it off the constant */
        double c0 = base[ch] + rim[ch] - 0.5;
        vx_sh2_from_quadratic(c0, lin, q, out + 1 + 9 * ch);
    }
}

/* ---- cloud: fractal noise in a soft envelope ------------------------------------------- */

static void vx__cloud_voxel(const vx__gen_ctx *c, const double p[3], float *out) {
    double e[3] = {p[0] / 0.98, p[1] / 0.8, p[2] / 0.98};
    double env = 1.0 - vx__smoothstep(0.25, 1.0, sqrt(vx__dot3(e, e)));
    double dens = 0.0;
    if (env > 0.0) {
        /* domain warp: offset the lookup by a slower noise for swirled, wispy shapes */
        double wx = vx__fbm(c, 1.3 * p[0] - 8.1, 1.3 * p[1] + 2.2, 1.3 * p[2] + 4.4, 3);
        double wy = vx__fbm(c, 1.3 * p[0] + 6.3, 1.3 * p[1] - 5.5, 1.3 * p[2] - 1.7, 3);
        double f = vx__fbm(c, 3.0 * p[0] + 3.7 + 1.2 * wx, 3.0 * p[1] + 1.3 + 1.2 * wy,
                           3.0 * p[2] - 2.1, 5);
        dens = env * (0.04 + vx__smoothstep(0.0, 0.3, f + 0.45 * env - 0.3));
    }
    out[0] = (float)dens;
    /* soft colours: peach to lavender by a slow noise, brighter towards the top */
    double t = vx__clamp(0.5 + 1.4 * vx__fbm(c, 0.9 * p[0] - 4.2, 0.9 * p[1] + 7.7, 0.9 * p[2] + 0.6, 2),
                         0.0, 1.0);
    static const double a[3] = {1.00, 0.76, 0.66}, b[3] = {0.60, 0.70, 1.00};
    double light = 0.85 + 0.15 * vx__clamp(0.5 + 0.5 * p[1], 0.0, 1.0);
    for (int i = 0; i < 3; i++) out[1 + i] = (float)vx__clamp(light * (a[i] + t * (b[i] - a[i])), 0.0, 1.0);
}

/* ---- phantom: the 3-D modified Shepp-Logan head ----------------------------------------- */

/* A, semi-axes a b c, centre x0 y0 z0, Euler angles phi theta psi (degrees): the usual
 * "modified Shepp-Logan" table (Toft's contrast) of the 3-D phantom. */
static const double vx__shepp[10][10] = {
    {1.0, .6900, .920, .810, 0, 0, 0, 0, 0, 0},
    {-.8, .6624, .874, .780, 0, -.0184, 0, 0, 0, 0},
    {-.2, .1100, .310, .220, .22, 0, 0, -18, 0, 10},
    {-.2, .1600, .410, .280, -.22, 0, 0, 18, 0, 10},
    {.1, .2100, .250, .410, 0, .35, -.15, 0, 0, 0},
    {.1, .0460, .046, .050, 0, .1, .25, 0, 0, 0},
    {.1, .0460, .046, .050, 0, -.1, .25, 0, 0, 0},
    {.1, .0460, .023, .050, -.08, -.605, 0, 0, 0, 0},
    {.1, .0230, .023, .020, 0, -.606, 0, 0, 0, 0},
    {.1, .0230, .046, .020, .06, -.605, 0, 0, 0, 0},
};

/* Rotation of phantom3d (z-x-z Euler angles phi, theta, psi), applied here about the
 * ellipsoid's centre. */
static void vx__phantom_init(vx__gen_ctx *c) {
    for (int k = 0; k < 10; k++) {
        const double *e = vx__shepp[k];
        double ph = e[7] * M_PI / 180.0, th = e[8] * M_PI / 180.0, ps = e[9] * M_PI / 180.0;
        double cph = cos(ph), sph = sin(ph), cth = cos(th), sth = sin(th), cps = cos(ps), sps = sin(ps);
        double R[9] = {cps * cph - cth * sph * sps, cps * sph + cth * cph * sps, sps * sth,
                       -sps * cph - cth * sph * cps, -sps * sph + cth * cph * cps, cps * sth,
                       sth * sph, -sth * cph, cth};
        memcpy(c->rot[k], R, sizeof R);
    }
}

/* Edge ramp width in lattice spacings: partial-volume antialiasing of the surfaces. */
#define VX__AA 2.0

/* Value at p. Each ellipsoid adds A times its coverage: 1 inside, 0 outside, a linear
 * ramp over VX__AA lattice spacings h across the surface (first-order distance
 * (r-1) / |grad r|) so edges are antialiased instead of staircased; h = 0 gives the
 * exact indicator. */
static double vx__phantom_value(const vx__gen_ctx *c, const double p[3], double h) {
    double v = 0.0;
    for (int k = 0; k < 10; k++) {
        const double *e = vx__shepp[k], *R = c->rot[k];
        double d[3] = {p[0] - e[4], p[1] - e[5], p[2] - e[6]}, u[3], g[3] = {0, 0, 0};
        double ax[3] = {e[1], e[2], e[3]}, qf = 0.0;
        for (int i = 0; i < 3; i++) {
            u[i] = R[3 * i] * d[0] + R[3 * i + 1] * d[1] + R[3 * i + 2] * d[2];
            qf += (u[i] / ax[i]) * (u[i] / ax[i]);
        }
        double r = sqrt(qf), cov;
        if (h <= 0.0 || r < 0.5) {
            cov = qf <= 1.0 ? 1.0 : 0.0;
        } else {
            /* grad r = R^T (u / a^2) / r */
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) g[j] += R[3 * i + j] * u[i] / (ax[i] * ax[i]) / r;
            double gl = sqrt(vx__dot3(g, g));
            double dist = (r - 1.0) / gl;
            cov = vx__clamp(0.5 - dist / (VX__AA * h), 0.0, 1.0);
        }
        v += e[0] * cov;
    }
    return v;
}

static void vx__phantom_voxel(const vx__gen_ctx *c, const double p[3], float *out) {
    /* the sums are exact up to rounding: 1 - 0.8 - 0.2 must read as 0, not -5e-17 */
    out[0] = (float)fmax(0.0, vx__phantom_value(c, p, c->h));
}

/* ---- the scene table -------------------------------------------------------------------- */

typedef void (*vx__voxel_fn)(const vx__gen_ctx *, const double p[3], float *out);

/* 1 when the voxel function's density (channel 0) is exactly 0 everywhere in the world
 * box [lo, hi]: make-scene --sparse skips such bricks without evaluating them. */
typedef int (*vx__empty_fn)(const double lo[3], const double hi[3]);

typedef struct {
    const char *name;
    int channels;
    vx__voxel_fn fn;
    void (*settings)(vx_scene *s);
    vx__empty_fn empty; /* NULL: no cheap bound; the scene's --sparse --res stops at the dense limit */
} vx__scene_def;

/* Nearest and farthest distance from point c to the box [lo, hi]. */
static void vx__box_dist(const double lo[3], const double hi[3], const double c[3], double *dmin, double *dmax) {
    double n = 0.0, f = 0.0;
    for (int a = 0; a < 3; a++) {
        double d = c[a] < lo[a] ? lo[a] - c[a] : (c[a] > hi[a] ? c[a] - hi[a] : 0.0);
        double e = fmax(fabs(c[a] - lo[a]), fabs(c[a] - hi[a]));
        n += d * d;
        f += e * e;
    }
    *dmin = sqrt(n);
    *dmax = sqrt(f);
}

#define VX__EMPTY_MARGIN 1e-6 /* world units: far above the rounding of the distances */

/* shell: bump((r - R) / HW) is 0 unless |r - R| < HW */
static int vx__shell_empty(const double lo[3], const double hi[3]) {
    static const double o[3] = {0, 0, 0};
    double dmin, dmax;
    vx__box_dist(lo, hi, o, &dmin, &dmax);
    return dmax <= VX__SHELL_R - VX__SHELL_HW - VX__EMPTY_MARGIN || dmin >= VX__SHELL_R + VX__SHELL_HW + VX__EMPTY_MARGIN;
}

/* orbs: smoothstep(r, 0.82 r, dist) is 0 for dist >= r, for every orb */
static int vx__orbs_empty(const double lo[3], const double hi[3]) {
    for (int k = 0; k < VX__NORBS; k++) {
        double dmin, dmax;
        vx__box_dist(lo, hi, vx__orbs[k].c, &dmin, &dmax);
        if (dmin < vx__orbs[k].r + VX__EMPTY_MARGIN) return 0;
    }
    return 1;
}

static void vx__camera(vx_scene *s, double ex, double ey, double ez, double fov) {
    s->has_camera = 1;
    s->eye[0] = ex; s->eye[1] = ey; s->eye[2] = ez;
    s->target[0] = s->target[1] = s->target[2] = 0.0;
    s->up[0] = 0.0; s->up[1] = 1.0; s->up[2] = 0.0;
    s->fov_deg = fov;
}

static void vx__rgba(vx_scene *s, float density_scale) {
    s->dec.type = VX_DEC_RGBA;
    s->dec.density_act = VX_DACT_RELU;
    s->dec.color_act = VX_CACT_CLAMP;
    s->dec.density_scale = density_scale;
}

static void vx__bg(vx_scene *s, float r, float g, float b) {
    s->background[0] = r; s->background[1] = g; s->background[2] = b;
}

static void vx__orbs_settings(vx_scene *s) {
    vx__rgba(s, 30.0f);
    vx__bg(s, 0.96f, 0.96f, 0.97f);
    vx__camera(s, 1.75, 1.05, 2.1, 40);
}

static void vx__shell_settings(vx_scene *s) {
    vx__rgba(s, 40.0f);
    vx__bg(s, 0.08f, 0.08f, 0.10f);
    vx__camera(s, 1.8, 1.0, 2.1, 40);
}

static void vx__glass_settings(vx_scene *s) {
    s->dec.type = VX_DEC_SH;
    s->dec.sh_degree = 2;
    s->dec.density_act = VX_DACT_RELU;
    s->dec.color_act = VX_CACT_PLENOXELS;
    s->dec.density_scale = 10.0f;
    vx__bg(s, 0.06f, 0.06f, 0.08f);
    vx__camera(s, 1.5, 1.15, 2.2, 40);
}

static void vx__cloud_settings(vx_scene *s) {
    vx__rgba(s, 8.0f);
    vx__bg(s, 0.16f, 0.20f, 0.34f);
    vx__camera(s, 1.65, 0.75, 1.95, 40);
}

static void vx__phantom_settings(vx_scene *s) {
    /* window [0, 1] is the phantom's full range: 0 air and ventricles, 0.2 brain,
     * 0.3 the small features, 1 skull. Skull a faint veil, brain a thin haze, the
     * features solid and warm. */
    static const float tf[][5] = {
        {0.00f, 0.10f, 0.20f, 0.50f, 0.0f}, {0.20f, 0.30f, 0.50f, 0.95f, 1.0f},
        {0.24f, 0.35f, 0.55f, 0.95f, 1.0f}, {0.27f, 1.00f, 0.55f, 0.15f, 7.0f},
        {0.33f, 1.00f, 0.62f, 0.20f, 7.0f}, {0.36f, 0.90f, 0.90f, 0.90f, 0.0f},
        {0.90f, 0.90f, 0.90f, 0.90f, 0.0f}, {1.00f, 0.90f, 0.92f, 1.00f, 0.6f},
    };
    s->dec.type = VX_DEC_SCALAR;
    s->dec.density_scale = 1.0f;
    s->dec.window_lo = 0.0f;
    s->dec.window_hi = 1.0f;
    s->dec.tf_n = (int)(sizeof tf / sizeof tf[0]);
    memcpy(s->dec.tf, tf, sizeof tf);
    vx__bg(s, 0.0f, 0.0f, 0.0f);
    vx__camera(s, 1.9, 1.2, 2.5, 40);
}

static const vx__scene_def vx__scenes[] = {
    {"orbs", 4, vx__orbs_voxel, vx__orbs_settings, vx__orbs_empty},
    {"shell", 4, vx__shell_voxel, vx__shell_settings, vx__shell_empty},
    {"sh-glass", 28, vx__glass_voxel, vx__glass_settings, NULL},
    {"cloud", 4, vx__cloud_voxel, vx__cloud_settings, NULL},
    {"phantom", 1, vx__phantom_voxel, vx__phantom_settings, NULL},
};
#define VX__NSCENES ((int)(sizeof vx__scenes / sizeof vx__scenes[0]))

const char *vx_make_scene_names(void) { return "orbs, shell, sh-glass, cloud, phantom"; }

int vx_make_scene(const char *name, int res, vx_grid *g, vx_scene *s) {
    const vx__scene_def *def = NULL;
    for (int i = 0; i < VX__NSCENES; i++)
        if (name && strcmp(name, vx__scenes[i].name) == 0) def = &vx__scenes[i];
    if (!def) return vx_error("make-scene: unknown scene '%s' (known: %s)", name ? name : "", vx_make_scene_names());
    if (res < VX_MAKE_SCENE_RES_MIN || res > VX_MAKE_SCENE_RES_MAX)
        return vx_error("make-scene: resolution %d is outside %d..%d", res, VX_MAKE_SCENE_RES_MIN,
                        VX_MAKE_SCENE_RES_MAX);

    char source[64];
    snprintf(source, sizeof source, "make-scene %s", def->name);
    vx_grid tmp;
    memset(&tmp, 0, sizeof tmp);
    if (vx_grid_alloc(&tmp, res, res, res, def->channels, source)) return -1;
    vx_grid_set_bbox(&tmp, vx__box_lo, vx__box_hi, 1);
    tmp.src_dtype = VX_DT_F32;

    vx__gen_ctx ctx;
    vx__perm_init(&ctx, 0x5eed1234u);
    vx__phantom_init(&ctx);
    vx__shell_init(&ctx);
    ctx.h = (vx__box_hi[0] - vx__box_lo[0]) / (res - 1);
    const int nc = def->channels;
    float *data = tmp.data;
    /* voxels are independent and each is computed the same way on any thread: the bytes
     * do not depend on the thread count or schedule */
#pragma omp parallel for schedule(dynamic, 1)
    for (int z = 0; z < res; z++) {
        double p[3];
        p[2] = vx__box_lo[2] + z * ctx.h;
        for (int y = 0; y < res; y++) {
            p[1] = vx__box_lo[1] + y * ctx.h;
            float *row = data + ((size_t)z * res + y) * (size_t)res * nc;
            for (int x = 0; x < res; x++) {
                p[0] = vx__box_lo[0] + x * ctx.h;
                def->fn(&ctx, p, row + (size_t)x * nc);
            }
        }
    }

    /* scene settings (s->grid is only touched when it is g) */
    vx_grid keep = s->grid;
    memset(s, 0, sizeof *s);
    s->grid = keep;
    s->step = 0.5f;
    def->settings(s);
    snprintf(s->name, sizeof s->name, "%s", def->name);
    snprintf(s->path, sizeof s->path, "%s", source);
    *g = tmp;
    return 0;
}

/* ---- sparse: brick by brick, never the dense grid ----------------------------------------- */

typedef struct {
    const vx__scene_def *def;
    const vx__gen_ctx *ctx;
} vx__source;

/* Lattice points (x0 .. x0+n-1, y, z): the same points and arithmetic as vx_make_scene. */
static void vx__source_row(void *user, int x0, int n, int y, int z, float *out) {
    const vx__source *src = user;
    const double h = src->ctx->h;
    double p[3];
    p[1] = vx__box_lo[1] + y * h;
    p[2] = vx__box_lo[2] + z * h;
    for (int i = 0; i < n; i++) {
        p[0] = vx__box_lo[0] + (x0 + i) * h;
        src->def->fn(src->ctx, p, out + (size_t)i * src->def->channels);
    }
}

/* The scene's density bound on the world box of lattice points lo .. hi. */
static int vx__source_empty(void *user, const int lo[3], const int hi[3]) {
    const vx__source *src = user;
    double wlo[3], whi[3];
    for (int a = 0; a < 3; a++) {
        wlo[a] = vx__box_lo[a] + lo[a] * src->ctx->h;
        whi[a] = vx__box_lo[a] + hi[a] * src->ctx->h;
    }
    return src->def->empty(wlo, whi);
}

int vx_make_scene_sparse(const char *name, int res, float threshold, vx_grid *g, vx_scene *s) {
    const vx__scene_def *def = NULL;
    for (int i = 0; i < VX__NSCENES; i++)
        if (name && strcmp(name, vx__scenes[i].name) == 0) def = &vx__scenes[i];
    if (!def) return vx_error("make-scene: unknown scene '%s' (known: %s)", name ? name : "", vx_make_scene_names());
    int max = def->empty ? VX_MAKE_SCENE_SPARSE_RES_MAX : VX_MAKE_SCENE_RES_MAX;
    if (res < VX_MAKE_SCENE_RES_MIN || res > max)
        return vx_error("make-scene: resolution %d is outside %d..%d for sparse %s%s", res, VX_MAKE_SCENE_RES_MIN, max,
                        def->name, def->empty ? "" : " (it fills much of the box; only shell and orbs go past 1024)");
    if (!(threshold >= 0.0f)) return vx_error("make-scene: --threshold must be >= 0");

    char source[64];
    snprintf(source, sizeof source, "make-scene %s", def->name);
    vx_grid tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.source, sizeof tmp.source, "%s", source);
    tmp.nx = tmp.ny = tmp.nz = res;
    tmp.nc = def->channels;
    tmp.src_dtype = VX_DT_F32;
    vx_grid_set_bbox(&tmp, vx__box_lo, vx__box_hi, 1);

    /* the scene's decoder first: the drop rule needs it */
    vx_scene set;
    memset(&set, 0, sizeof set);
    set.step = 0.5f;
    def->settings(&set);

    vx__gen_ctx ctx;
    vx__perm_init(&ctx, 0x5eed1234u);
    vx__phantom_init(&ctx);
    vx__shell_init(&ctx);
    ctx.h = (vx__box_hi[0] - vx__box_lo[0]) / (res - 1);
    static const float zero[VX_SPARSE_MAX_CHANNELS];
    vx__source user = {def, &ctx};
    const vx_sparse_source src = {&user, vx__source_row, def->empty ? vx__source_empty : NULL};

    vx_sparse *sp = vx_calloc(1, sizeof *sp, source);
    vx_sparse_builder b;
    int rc = -1;
    if (!sp) goto done;
    if (vx_sparse_builder_init(&b, sp, res, res, res, def->channels, zero, &set.dec, threshold, source)) goto done;
    if (vx_sparse_builder_source(&b, &src)) goto done;
    vx_sparse_builder_finish(&b);
    tmp.sparse = sp;
    sp = NULL;

    vx_grid keep = s->grid;
    *s = set;
    s->grid = keep;
    snprintf(s->name, sizeof s->name, "%s", def->name);
    snprintf(s->path, sizeof s->path, "%s", source);
    *g = tmp;
    rc = 0;
done:
    if (sp) { vx_sparse_free(sp); free(sp); }
    return rc;
}

/* ---- writing: grid.npy + scene.json ----------------------------------------------------- */

/* Numbers as the shortest decimal that reads back to the same float. */
static cJSON *vx__num(double v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.7g", v);
    return cJSON_CreateNumber(strtod(buf, NULL));
}

static cJSON *vx__vec(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, vx__num(v[i]));
    return a;
}

static cJSON *vx__fvec(const float *v, int n) {
    double d[8];
    for (int i = 0; i < n && i < 8; i++) d[i] = v[i];
    return vx__vec(d, n);
}

static cJSON *vx__decoder_json(const vx_decoder *d) {
    static const char *dacts[] = {"relu", "softplus", "exp", "none"};
    static const char *cacts[] = {"clamp", "sigmoid", "plenoxels"};
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    if (d->type == VX_DEC_SCALAR) {
        cJSON_AddStringToObject(j, "type", "scalar");
        float win[2] = {d->window_lo, d->window_hi};
        cJSON_AddItemToObject(j, "window", vx__fvec(win, 2));
        cJSON *tf = cJSON_CreateArray();
        for (int i = 0; tf && i < d->tf_n; i++) cJSON_AddItemToArray(tf, vx__fvec(d->tf[i], 5));
        cJSON_AddItemToObject(j, "transfer_function", tf);
    } else {
        cJSON_AddStringToObject(j, "type", d->type == VX_DEC_SH ? "sh" : "rgba");
        if (d->type == VX_DEC_SH) cJSON_AddNumberToObject(j, "degree", d->sh_degree);
        cJSON_AddStringToObject(j, "density_activation", dacts[d->density_act]);
        cJSON_AddStringToObject(j, "color_activation", cacts[d->color_act]);
    }
    cJSON_AddItemToObject(j, "density_scale", vx__num(d->density_scale));
    return j;
}

/* The manifest text (malloc'd), or NULL with vx_error set. */
static char *vx__manifest(const vx_grid *g, const vx_scene *s) {
    cJSON *root = cJSON_CreateObject();
    if (!root) { vx_error("make-scene: out of memory building scene.json"); return NULL; }
    cJSON_AddStringToObject(root, "name", s->name);
    cJSON_AddStringToObject(root, "grid", g->sparse ? "grid.sparse.npz" : "grid.npy");
    cJSON_AddItemToObject(root, "bbox_min", vx__vec(vx__box_lo, 3));
    cJSON_AddItemToObject(root, "bbox_max", vx__vec(vx__box_hi, 3));
    cJSON_AddBoolToObject(root, "align_corners", 1);
    cJSON_AddItemToObject(root, "decoder", vx__decoder_json(&s->dec));
    cJSON_AddItemToObject(root, "background", vx__fvec(s->background, 3));
    cJSON_AddItemToObject(root, "step", vx__num(s->step));
    if (s->has_camera) {
        cJSON *cam = cJSON_CreateObject();
        cJSON_AddItemToObject(cam, "eye", vx__vec(s->eye, 3));
        cJSON_AddItemToObject(cam, "target", vx__vec(s->target, 3));
        cJSON_AddItemToObject(cam, "up", vx__vec(s->up, 3));
        cJSON_AddItemToObject(cam, "fov", vx__num(s->fov_deg));
        cJSON_AddItemToObject(root, "camera", cam);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) { vx_error("make-scene: out of memory printing scene.json"); return NULL; }
    size_t n = strlen(text);
    char *out = malloc(n + 2);
    if (out) { memcpy(out, text, n); out[n] = '\n'; out[n + 1] = 0; }
    else vx_error("make-scene: out of memory printing scene.json");
    cJSON_free(text);
    return out;
}

int vx_make_scene_write(const char *dir, const vx_grid *g, const vx_scene *s, int half) {
    return vx_make_scene_write_ex(dir, g, s, half, 1);
}

int vx_make_scene_write_ex(const char *dir, const vx_grid *g, const vx_scene *s, int half, int deflate) {
    char gpath[4096], jpath[4096];
    if (!dir || !dir[0]) return vx_error("make-scene: empty output directory");
    if (strlen(dir) > 3900) return vx_error("%s: output directory name too long", dir);
    vx_path_join(dir, g->sparse ? "grid.sparse.npz" : "grid.npy", gpath, sizeof gpath);
    vx_path_join(dir, "scene.json", jpath, sizeof jpath);
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return vx_error("-o %s: is a file; make-scene writes a directory (grid.npy + scene.json)", dir);
    const char *outs[2] = {gpath, jpath}, *flags[2] = {"-o", "-o"};
    if (vx_outputs_prepare(outs, flags, 2, NULL, 0, 1)) return -1;

    char *text = vx__manifest(g, s);
    if (!text) return -1;
    /* both files go to temporary names first; renamed only when both are complete */
    vx_outputs_stage_begin();
    int rc = g->sparse ? vx_sparse_write(gpath, g, half, deflate ? VX_SPARSE_DEFLATE : VX_SPARSE_STORE)
                       : vx_npy_write_grid(gpath, g, half);
    if (rc == 0) rc = vx_write_file_atomic(jpath, text, strlen(text));
    free(text);
    return vx_outputs_stage_end(rc == 0);
}

/* ---- the command ------------------------------------------------------------------------ */

int vx_make_scene_known(const char *name) {
    for (int i = 0; i < VX__NSCENES; i++)
        if (name && !strcmp(name, vx__scenes[i].name)) return 1;
    return 0;
}
