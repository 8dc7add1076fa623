/* march.h - one ray through the grid, written once for every caller: clip to the box,
 * cut into segments, skip empty occupancy cells, sample at segment midpoints, fetch and
 * decode (the caller's op), composite front to back, and hand each sample to the op.
 * The CPU renderer, the CUDA renderer and both fit backends run vx_march_run(); they
 * differ only in their op (storage, decoder specialisation, what a sample feeds).
 * docs/RENDERING.md states the rules; docs/ARCHITECTURE.md shows who calls what. */
#ifndef VX_MARCH_H
#define VX_MARCH_H

#include "decode.h"
#include "sparse.h"

/* Read-only loads through the texture path on the GPU, plain loads on the CPU. */
#if defined(__CUDA_ARCH__)
#define VX_LDG(p) __ldg(p)
#else
#define VX_LDG(p) (*(p))
#endif

typedef struct {
    int nx, ny, nz, nc;     /* grid lattice size and channels, data is (z, y, x, c) */
    float w2i[12];          /* world -> index space (x, y, z in lattice units) */
    float box_lo[3], box_hi[3]; /* index-space box the rays are clipped to */
    float dt;               /* segment length in world units */
    float stop;             /* early termination when T < stop (0: never) */
    float bg[3];            /* background colour */
    int occ_b;              /* occupancy cell size in voxels; 0 disables skipping */
    int occ_n[3];           /* occupancy grid size (x, y, z) */
    int occ_shift1;         /* log2(occ_b) + 1 when occ_b is a power of two, else 0 (divide) */
    int max_segments;       /* per-ray bound on segments from the index-space box (0: none) */
    unsigned jitter_seed;   /* 0: samples at segment midpoints; else per-pixel offsets (vx_pixel_jitter) */
    int own;                /* 1: only samples whose index-space point lies in [own_lo, own_hi) (a sort-last piece) */
    float own_lo[3], own_hi[3];
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

/* Lattice cell and weight along one axis, clamping to the border (padding "border").
 * The clamp is written so that NaN lands on 0 (a NaN never reaches an index). */
VX_HD void vx_axis_cell(float x, int n, int *i0, int *i1, float *f) {
    x = x > 0.0f ? (x < (float)(n - 1) ? x : (float)(n - 1)) : 0.0f;
    int i = (int)floorf(x);
    if (i > n - 2) i = n - 2;
    if (i < 0) i = 0;
    *i0 = i;
    *i1 = n > 1 ? i + 1 : i;
    *f = n > 1 ? x - (float)i : 0.0f;
}

/* The trilinear cell of index-space point p: corner coordinates x[0..1], y[0..1],
 * z[0..1] and the eight weights, corner k = 4*kz + 2*ky + kx (z0y0x0, z0y0x1, ...). Every
 * fetch (dense, sparse, float16, CPU, CUDA, gradient scatter) starts here. */
typedef struct {
    int x[2], y[2], z[2];
    float w[8];
} vx_cell;

VX_HD void vx_trilinear_cell(int nx, int ny, int nz, vx_vec3 p, vx_cell *c) {
    float fx, fy, fz;
    vx_axis_cell(p.x, nx, &c->x[0], &c->x[1], &fx);
    vx_axis_cell(p.y, ny, &c->y[0], &c->y[1], &fy);
    vx_axis_cell(p.z, nz, &c->z[0], &c->z[1], &fz);
    c->w[0] = (1 - fz) * (1 - fy) * (1 - fx); c->w[1] = (1 - fz) * (1 - fy) * fx;
    c->w[2] = (1 - fz) * fy * (1 - fx);       c->w[3] = (1 - fz) * fy * fx;
    c->w[4] = fz * (1 - fy) * (1 - fx);       c->w[5] = fz * (1 - fy) * fx;
    c->w[6] = fz * fy * (1 - fx);             c->w[7] = fz * fy * fx;
}

/* Lattice coordinates of corner k of cell c. */
VX_HD void vx_cell_corner(const vx_cell *c, int k, int *x, int *y, int *z) {
    *x = c->x[k & 1];
    *y = c->y[(k >> 1) & 1];
    *z = c->z[k >> 2];
}

/* out[c] = sum_k w_k v_k[c] over the eight corner values, in corner order (the order fixes
 * the float rounding, so every storage gives the dense result bit for bit). */
VX_HD void vx_cell_blend(const vx_cell *c, const float *const v[8], int nc, float *out) {
    for (int j = 0; j < nc; j++)
        out[j] = c->w[0] * v[0][j] + c->w[1] * v[1][j] + c->w[2] * v[2][j] + c->w[3] * v[3][j] +
                 c->w[4] * v[4][j] + c->w[5] * v[5][j] + c->w[6] * v[6][j] + c->w[7] * v[7][j];
}

/* Dense (z, y, x, c) float32 storage: the nc floats of lattice point (x, y, z). */
VX_HD const float *vx_dense_voxel(const float *data, int nx, int ny, int nc, int x, int y, int z) {
    return data + (((size_t)z * ny + y) * nx + x) * (size_t)nc;
}

/* The eight corner voxels of cell c in sparse bricks. When all eight lie in one brick (7
 * cells in 8 along each axis, about two thirds of all cells) the table is read once and
 * the corners are fixed offsets from the low one; else each corner reads its own brick.
 * The same pointers either way (vx_sparse_voxel's), so the blend is the same bit for bit. */
VX_HD void vx_sparse_cell(const vx_sparse *s, const vx_cell *c, const float *v[8]) {
    if (!(((c->x[0] ^ c->x[1]) | (c->y[0] ^ c->y[1]) | (c->z[0] ^ c->z[1])) >> VX_BRICK_LOG2)) {
        ptrdiff_t o = vx_sparse_offset(s->table, s->bn, s->nc, c->x[0], c->y[0], c->z[0]);
        if (o < 0) {
            for (int k = 0; k < 8; k++) v[k] = s->background;
            return;
        }
        const float *base = s->pool + o;
        int dx = (c->x[1] - c->x[0]) * s->nc, dy = (c->y[1] - c->y[0]) * VX_BRICK * s->nc,
            dz = (c->z[1] - c->z[0]) * VX_BRICK * VX_BRICK * s->nc;
        v[0] = base;           v[1] = base + dx;
        v[2] = base + dy;      v[3] = base + dy + dx;
        v[4] = base + dz;      v[5] = base + dz + dx;
        v[6] = base + dz + dy; v[7] = base + dz + dy + dx;
        return;
    }
    for (int k = 0; k < 8; k++) {
        int x, y, z;
        vx_cell_corner(c, k, &x, &y, &z);
        v[k] = vx_sparse_voxel(s, x, y, z);
    }
}

/* Trilinear interpolation of the first nout of nc channels at index-space point p, from
 * dense float32 storage (sparse == NULL) or sparse bricks (absent ones read the background). */
VX_HD void vx_trilinear_fetch_grid(const float *data, const vx_sparse *sparse, int nx, int ny, int nz, int nc,
                                   int nout, vx_vec3 p, float *out) {
    vx_cell c;
    const float *v[8];
    vx_trilinear_cell(nx, ny, nz, p, &c);
    if (sparse) vx_sparse_cell(sparse, &c, v);
    else
        for (int k = 0; k < 8; k++) {
            int x, y, z;
            vx_cell_corner(&c, k, &x, &y, &z);
            v[k] = vx_dense_voxel(data, nx, ny, nc, x, y, z);
        }
    vx_cell_blend(&c, v, nout, out);
}

/* The dense case, the form the tests and the fit's resampling call. */
VX_HD void vx_trilinear_fetch(const float *data, int nx, int ny, int nz, int nc, vx_vec3 p, float *out) {
    vx_trilinear_fetch_grid(data, NULL, nx, ny, nz, nc, nc, p, out);
}

/* Floor of an index-space coordinate clamped to [0, n-1]; NaN gives 0. */
VX_HD int vx_index_floor(float x, int n) {
    x = x > 0.0f ? (x < (float)(n - 1) ? x : (float)(n - 1)) : 0.0f;
    return (int)floorf(x);
}

/* Set the occupancy cell size b and grid size n, deriving the shift used for powers of two. */
VX_HD void vx_march_set_occ(vx_march_params *m, int b, const int n[3]) {
    m->occ_b = b;
    m->occ_shift1 = 0;
    for (int k = 0; k < 31; k++)
        if (b == (1 << k)) m->occ_shift1 = k + 1;
    for (int a = 0; a < 3; a++) m->occ_n[a] = n ? n[a] : 0;
}

/* Occupancy cell holding index-space point p (clamped into the grid): a shift when the
 * cell size is a power of two, else a division; the same integers either way. */
VX_HD int vx_occ_cell(const vx_march_params *m, vx_vec3 p, int *cx, int *cy, int *cz) {
    int ix = vx_index_floor(p.x, m->nx), iy = vx_index_floor(p.y, m->ny), iz = vx_index_floor(p.z, m->nz);
    if (m->occ_shift1 > 0) { /* one branch for all three axes: never a division per sample */
        int s = m->occ_shift1 - 1;
        ix >>= s; iy >>= s; iz >>= s;
    } else {
        ix /= m->occ_b; iy /= m->occ_b; iz /= m->occ_b;
    }
    *cx = vx_mini(ix, m->occ_n[0] - 1);
    *cy = vx_mini(iy, m->occ_n[1] - 1);
    *cz = vx_mini(iz, m->occ_n[2] - 1);
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

/* Number of segments for a clipped interval of length len (last one shorter), at most
 * cap (> 0) so that no placement can make one ray run unbounded. */
VX_HD int vx_segment_count(float len, float dt, int cap) {
    float n = ceilf(len / dt - 1e-4f);
    if (cap > 0 && !(n <= (float)cap)) return cap;
    if (!(n <= 2.0e9f)) return 2000000000; /* NaN or past int: never converted */
    return n < 1.0f ? 1 : (int)n;
}

/* One sample: segment [ta, tb] along the ray (world units), its midpoint tm and the
 * index-space point p at tm. */
typedef struct {
    float ta, tb, tm;
    vx_vec3 p;
} vx_sample;

/* Segment k of n over [ts, t1]: all dt long but the last, which ends exactly at t1; the
 * first starts no earlier than t0 (ts < t0 when the ray's samples are jittered). */
VX_HD void vx_segment(const vx_march_params *m, float ts, float t0, float t1, int n, int k, float *ta, float *tb) {
    *ta = ts + (float)k * m->dt;
    *tb = k == n - 1 ? t1 : *ta + m->dt;
    if (*ta < t0) *ta = t0;
}

/* The per-pixel sample offset u in [0, 1) drawn from (seed, pixel): the segment grid starts
 * (1 - u) dt before the box entry, so a pixel's samples move by u dt and neighbouring pixels
 * alias differently (noise instead of wood-grain rings). 0 when seed is 0. Deterministic:
 * the same seed gives the same image on every backend. */
VX_HD float vx_pixel_jitter(unsigned seed, unsigned long long pixel) {
    if (!seed) return 0.0f;
    unsigned long long z = vx_mix64(((unsigned long long)seed << 32) ^ (pixel * 0x9E3779B97F4A7C15ull));
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* If index-space point p lies in an empty occupancy cell, move *k to the last segment
 * whose midpoint is before the cell's exit (the caller's loop then steps once) and return
 * 1. floor keeps the jump safe: no sample with density is ever skipped. ts is where the
 * segment grid starts (vx_segment). */
VX_HD int vx_occ_skip(const vx_march_params *m, const unsigned char *occ, vx_vec3 oi, vx_vec3 di, vx_vec3 p,
                      float ts, int n, int *k) {
    int cx, cy, cz;
    if (VX_LDG(occ + vx_occ_cell(m, p, &cx, &cy, &cz))) return 0;
    float te = vx_occ_exit(m, oi, di, cx, cy, cz);
    float kf = floorf((te - ts) / m->dt - 0.5f);
    if (!(kf <= (float)n)) kf = (float)n;
    if ((int)kf - 1 > *k) *k = (int)kf - 1;
    return 1;
}

/* Sort-last pieces (src/piece.h): does the piece of m own index-space point p? Pieces
 * split space by half-open boxes, so every sample of a ray belongs to exactly one. */
VX_HD int vx_march_owns(const vx_march_params *m, vx_vec3 p) {
    return p.x >= m->own_lo[0] && p.x < m->own_hi[0] && p.y >= m->own_lo[1] && p.y < m->own_hi[1] &&
           p.z >= m->own_lo[2] && p.z < m->own_hi[2];
}

/* The segments [*k0, *k1) that can hold the piece's samples: the ray's interval in the
 * piece box widened by two segments plus float slack; vx_march_owns decides each sample. */
VX_HD void vx_march_own_range(const vx_march_params *m, vx_vec3 oi, vx_vec3 di, float ts, int n, int *k0, int *k1) {
    float a = 3.0e38f, b = -3.0e38f; /* left so when the ray runs parallel outside a slab */
    vx_ray_box(m->own_lo, m->own_hi, oi, di, &a, &b); /* a grazing ray (b <= a) keeps the segments about it */
    if (!(b >= a - 4.0f * m->dt)) { *k0 = *k1 = 0; return; }
    float fa = floorf((a - ts) / m->dt - 2.0f - 1e-6f * (fabsf(a) + fabsf(ts)) / m->dt);
    float fb = ceilf((b - ts) / m->dt + 2.0f + 1e-6f * (fabsf(b) + fabsf(ts)) / m->dt);
    *k0 = fa > 0.0f ? (fa < (float)n ? (int)fa : n) : 0;
    *k1 = fb > 0.0f ? (fb < (float)n ? (int)fb : n) : 0;
}

/* ---- compositing: the one place the volume-rendering equation is evaluated ------------ */

/* Front-to-back state: accumulated colour, transmittance T, depth sum, samples taken. */
typedef struct {
    float acc[3], T, depth;
    int samples;
} vx_composite;

/* alpha = 1 - exp(-sigma (tb - ta)), w = T alpha, C += w c, depth += w tm, T *= 1 - alpha.
 * Returns the sample's weight w. */
VX_HD float vx_composite_step(vx_composite *c, float sigma, const float *rgb, const vx_sample *s) {
    float alpha = 1.0f - expf(-sigma * (s->tb - s->ta));
    float w = c->T * alpha;
    c->acc[0] += w * rgb[0]; c->acc[1] += w * rgb[1]; c->acc[2] += w * rgb[2];
    c->depth += w * s->tm;
    c->T *= 1.0f - alpha;
    return w;
}

/* ---- the march ---------------------------------------------------------------------- */

/* What a caller plugs in: an op. sample() fetches and decodes at s->p seen along the unit
 * world direction d: it returns sigma (scaled, >= 0) and, when sigma > 0, writes rgb.
 * visit() sees every sample with sigma > 0 after it was composited: c holds the state
 * including it, w its weight. A sample with sigma == 0 changes neither colour, T nor any
 * gradient, so it is counted and passed over.
 *
 * In C an op starts with vx_march_op (two function pointers, read once before the loop so
 * that gcc calls them directly; see VX_MARCH_OP_LOAD). In CUDA C++ vx_march_run is a template on the op's
 * type and calls its static sample()/visit() directly: nvcc does not inline calls through
 * function pointers (the kernels then spill to a stack), so the C++ form is what keeps
 * each kernel's channels in registers. An op struct starts with `vx_march_op op` and
 * ends with VX_MARCH_OP_FUNCS(sample, visit), which gives it the C++ form. */
typedef struct {
    float (*sample)(void *op, const vx_sample *s, vx_vec3 d, float *rgb);
    void (*visit)(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w);
} vx_march_op;

VX_HD void vx_march_no_visit(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w) {
    (void)op; (void)c; (void)s; (void)rgb; (void)w;
}

#ifdef __cplusplus
#ifdef __CUDACC__
#define VX_MARCH_MEMBER static __host__ __device__ __forceinline__
#else /* host C++ (render_hdda_cpu.cpp) */
#define VX_MARCH_MEMBER static inline
#endif
#define VX_MARCH_OP_FUNCS(SAMPLE, VISIT)                                                                       \
    VX_MARCH_MEMBER float sample(void *o, const vx_sample *s, vx_vec3 d, float *rgb) {                         \
        return SAMPLE(o, s, d, rgb);                                                                           \
    }                                                                                                          \
    VX_MARCH_MEMBER void visit(void *o, const vx_composite *c, const vx_sample *s,                            \
                               const float *rgb, float w) {                                                    \
        VISIT(o, c, s, rgb, w);                                                                                \
    }
#define VX_MARCH_TEMPLATE template <class vx_op_t>
#define VX_MARCH_OP_PTR vx_op_t *
#define VX_MARCH_OP_OF(o) (o)
#define VX_MARCH_OP_LOAD(op)
#define VX_MARCH_SAMPLE(op, s, d, rgb) vx_op_t::sample(op, s, d, rgb)
#define VX_MARCH_VISIT(op, c, s, rgb, w) vx_op_t::visit(op, c, s, rgb, w)
/* Whether an op type marches sort-last pieces (m->own): yes unless it declares
 * `static constexpr bool pieces = false`. The CUDA ops of whole frames and of the fit do, so
 * their kernels compile without the ownership test and keep the registers of the loop
 * before pieces existed (render.cu instantiates a pieces kernel beside each one). */
template <class T, class = void> struct vx_march_pieces_t {
    static constexpr bool value = true;
};
template <class T> struct vx_march_pieces_t<T, decltype((void)T::pieces)> {
    static constexpr bool value = T::pieces;
};
#define VX_MARCH_PIECES(op) (vx_march_pieces_t<vx_op_t>::value)
#else
#define VX_MARCH_OP_FUNCS(SAMPLE, VISIT)
#define VX_MARCH_TEMPLATE
#define VX_MARCH_OP_PTR vx_march_op *
#define VX_MARCH_OP_OF(o) ((vx_march_op *)(void *)(o)) /* an op starts with its head */
/* The pointers are read once, before the loop: the op's own calls get its address, so a
 * read inside the loop could not be proved unchanged and gcc kept an indirect call per
 * sample (measured: neither sample() nor the fetch was inlined into the CPU renderer). */
#define VX_MARCH_OP_LOAD(op) const vx_march_op vx__fn = *(op);
#define VX_MARCH_SAMPLE(op, s, d, rgb) vx__fn.sample(op, s, d, rgb)
#define VX_MARCH_VISIT(op, c, s, rgb, w) vx__fn.visit(op, c, s, rgb, w)
#define VX_MARCH_PIECES(op) 1 /* C ops: m->own decides at run time */
#endif

/* Fill an op's function pointers (the C form; unused but harmless in C++). */
#define VX_MARCH_OP_INIT(op_head, SAMPLE, VISIT) ((op_head)->sample = (SAMPLE), (op_head)->visit = (VISIT))

/* March one world-space ray (origin o, unit direction d); occ may be NULL (no skipping);
 * u in [0, 1) offsets the samples (vx_pixel_jitter; 0: segment midpoints from the entry). */
VX_MARCH_TEMPLATE
VX_HD vx_ray_result vx_march_run(const vx_march_params *m, const unsigned char *occ, vx_vec3 o, vx_vec3 d, float u,
                                 VX_MARCH_OP_PTR op) {
    VX_MARCH_OP_LOAD(op)
    vx_composite c = {{0.0f, 0.0f, 0.0f}, 1.0f, 0.0f, 0};
    float t0, t1;
    vx_vec3 oi = vx_affine_point(m->w2i, o), di = vx_affine_dir(m->w2i, d);
    if (vx_ray_box(m->box_lo, m->box_hi, oi, di, &t0, &t1)) {
        float ts = u > 0.0f ? t0 - (1.0f - u) * m->dt : t0;
        int n = vx_segment_count(t1 - ts, m->dt, m->max_segments), k0 = 0, k1 = n;
        const int own = VX_MARCH_PIECES(op) && m->own; /* a compile-time 0 for whole-frame CUDA ops */
        if (own) vx_march_own_range(m, oi, di, ts, n, &k0, &k1); /* a piece: its stretch of the same segments */
        for (int k = k0; k < k1; k++) {
            vx_sample s;
            vx_segment(m, ts, t0, t1, n, k, &s.ta, &s.tb);
            s.tm = 0.5f * (s.ta + s.tb);
            s.p = vx_add(oi, vx_scale(di, s.tm));
            if (own && !vx_march_owns(m, s.p)) continue;
            if (occ && vx_occ_skip(m, occ, oi, di, s.p, ts, n, &k)) continue;
            float rgb[3];
            float sigma = VX_MARCH_SAMPLE(op, &s, d, rgb);
            c.samples++;
            if (!(sigma > 0.0f)) continue;
            float w = vx_composite_step(&c, sigma, rgb, &s);
            VX_MARCH_VISIT(op, &c, &s, rgb, w);
            if (c.T < m->stop) break;
        }
    }
    vx_ray_result r;
    for (int k = 0; k < 3; k++) r.rgb[k] = c.acc[k] + c.T * m->bg[k];
    r.trans = c.T;
    r.depth = c.depth;
    r.samples = c.samples;
    return r;
}

/* ---- gradient shading of scalar volumes --------------------------------------------------- */

/* Probe k (0..5) of the gradient around index-space point p: +-1/2 voxel along x, y, z. */
VX_HD vx_vec3 vx_gradient_probe(vx_vec3 p, int k) {
    float h = (k & 1) ? -0.5f : 0.5f;
    return vx_v3(p.x + (k >> 1 == 0 ? h : 0.0f), p.y + (k >> 1 == 1 ? h : 0.0f), p.z + (k >> 1 == 2 ? h : 0.0f));
}

/* The world-space gradient from the six probe values f[k] = value at vx_gradient_probe(p, k):
 * central differences in index space, taken to world space through the transpose of the
 * world-to-index map. */
VX_HD vx_vec3 vx_probe_gradient(const vx_march_params *m, const float *f) {
    float g[3] = {f[0] - f[1], f[2] - f[3], f[4] - f[5]};
    const float *w = m->w2i;
    return vx_v3(w[0] * g[0] + w[4] * g[1] + w[8] * g[2], w[1] * g[0] + w[5] * g[1] + w[9] * g[2],
                 w[2] * g[0] + w[6] * g[1] + w[10] * g[2]);
}

/* Headlight shading from the six probe values (vx_probe_gradient): rgb becomes
 * rgb (0.35 + 0.65 |n.d|) + 0.25 |n.d|^24 (ambient, two-sided diffuse, white specular with
 * the light at the eye). Where the gradient is weak against the window (flat regions, noisy
 * normals) the shaded colour fades to the plain one. */
VX_HD void vx_shade(const vx_march_params *m, const float *f, vx_vec3 d, float *rgb) {
    float gi[3] = {f[0] - f[1], f[2] - f[3], f[4] - f[5]}; /* index space: the strength */
    vx_vec3 gw = vx_probe_gradient(m, f);
    float len = vx_len(gw), win = m->dec.window_hi - m->dec.window_lo;
    float strength = sqrtf(gi[0] * gi[0] + gi[1] * gi[1] + gi[2] * gi[2]) / (win > 0.0f ? win : 1.0f);
    float k = vx_clampf(strength * 50.0f, 0.0f, 1.0f); /* full shading from 2% of the window per voxel */
    if (!(len > 0.0f) || !(k > 0.0f)) return;
    float ndl = fabsf(vx_dot(gw, d)) / len, spec = 0.25f * powf(ndl, 24.0f);
    for (int c = 0; c < 3; c++) {
        float lit = vx_minf(rgb[c] * (0.35f + 0.65f * ndl) + spec, 1.0f);
        rgb[c] += k * (lit - rgb[c]);
    }
}

/* The density gradient the mlp's reflected direction reads (vx_mlp_input_dir) at a sample,
 * from the six probes f of raw density (channel 0 at vx_gradient_probe; overwritten): the
 * gradient of the activated density, so that voxels a sparse grid leaves out (read as 0)
 * and the negative raw density a dense grid keeps there give the same normal, and every
 * renderer and the fit see the same direction. */
VX_HD vx_vec3 vx_mlp_normal(const vx_march_params *m, float *f) {
    for (int k = 0; k < 6; k++) f[k] = vx_density_activate(m->dec.density_act, f[k]);
    return vx_probe_gradient(m, f);
}

/* ---- the CPU ops: dense and sparse float32 storage, any decoder -------------------------- */

/* gcc inlines the fetch, decode and shading into the CPU op's sample() only when told to
 * (it judged the fetch too big): 20% less CPU time on a 10 M-voxel fog sphere
 * (docs/BENCHMARKS.md). nvcc force-inlines VX_HD already. */
#if defined(__GNUC__) && !defined(__CUDACC__)
#define VX_CPU_FLATTEN __attribute__((flatten))
#define VX_CPU_OUTLINE static __attribute__((noinline, unused)) /* a call, also from a flattened caller */
#else
#define VX_CPU_FLATTEN
#define VX_CPU_OUTLINE VX_HD
#endif

VX_HD float vx_grid_op_sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb);

typedef struct vx_grid_op {
    vx_march_op op;
    const vx_march_params *m;
    const float *data;          /* dense (z, y, x, c), or NULL when sparse is set */
    const vx_sparse *sparse;
    float raw[VX_MAX_CHANNELS]; /* the last sample's interpolated channels */
    VX_MARCH_OP_FUNCS(vx_grid_op_sample, vx_march_no_visit)
} vx_grid_op;

VX_CPU_FLATTEN VX_HD float vx_grid_op_sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb) {
    vx_grid_op *g = (vx_grid_op *)op;
    const vx_march_params *m = g->m;
    vx_trilinear_fetch_grid(g->data, g->sparse, m->nx, m->ny, m->nz, m->nc, m->nc, s->p, g->raw);
    float sigma = vx_decode(&m->dec, g->raw, d, rgb);
    if (m->dec.type == VX_DEC_SCALAR && m->dec.shade && sigma > 0.0f) {
        float f[6];
        for (int k = 0; k < 6; k++)
            vx_trilinear_fetch_grid(g->data, g->sparse, m->nx, m->ny, m->nz, m->nc, 1, vx_gradient_probe(s->p, k), f + k);
        vx_shade(m, f, d, rgb);
    }
    return sigma;
}

VX_HD vx_grid_op vx_grid_op_make(const vx_march_params *m, const float *data, const vx_sparse *sparse) {
    vx_grid_op g;
    VX_MARCH_OP_INIT(&g.op, vx_grid_op_sample, vx_march_no_visit);
    g.m = m;
    g.data = data;
    g.sparse = sparse;
    return g;
}

/* The CPU op of an mlp decoder whose network sees the reflected direction
 * (vx_decoder_mlp_reflect): vx_grid_op's fetch and decode, with the density's gradient
 * where there is density (vx_mlp_normal over the same storage) in the input. An op
 * of its own (render_cpu_reflect.c marches it), so that vx_grid_op's sample() and
 * render_cpu.c compile to the machine code timed before it. */
VX_HD float vx_grid_reflect_op_sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb);

typedef struct vx_grid_reflect_op {
    vx_grid_op g; /* first: its op head is this op's */
    VX_MARCH_OP_FUNCS(vx_grid_reflect_op_sample, vx_march_no_visit)
} vx_grid_reflect_op;

VX_CPU_FLATTEN VX_HD float vx_grid_reflect_op_sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb) {
    vx_grid_op *g = (vx_grid_op *)op;
    const vx_march_params *m = g->m;
    vx_trilinear_fetch_grid(g->data, g->sparse, m->nx, m->ny, m->nz, m->nc, m->nc, s->p, g->raw);
    vx_vec3 n = vx_v3(0.0f, 0.0f, 0.0f);
    if (vx_density_activate(m->dec.density_act, g->raw[0]) * m->dec.density_scale > 0.0f) {
        float f[6];
        for (int k = 0; k < 6; k++)
            vx_trilinear_fetch_grid(g->data, g->sparse, m->nx, m->ny, m->nz, m->nc, 1, vx_gradient_probe(s->p, k), f + k);
        n = vx_mlp_normal(m, f);
    }
    return vx_decode_mlp_dir(&m->dec, vx_decoder_mlp_weights(&m->dec), vx_decoder_mlp_layers(&m->dec), g->raw, d, n, rgb);
}

VX_HD vx_grid_reflect_op vx_grid_reflect_op_make(const vx_march_params *m, const float *data, const vx_sparse *sparse) {
    vx_grid_reflect_op r;
    r.g = vx_grid_op_make(m, data, sparse);
    VX_MARCH_OP_INIT(&r.g.op, vx_grid_reflect_op_sample, vx_march_no_visit);
    return r;
}

/* March one ray through a dense float32 grid (the reference the tests call). */
VX_HD vx_ray_result vx_march(const vx_march_params *m, const float *data, const unsigned char *occ, vx_vec3 o,
                             vx_vec3 d) {
    if (vx_decoder_mlp_reflect(&m->dec)) {
        vx_grid_reflect_op r = vx_grid_reflect_op_make(m, data, NULL);
        return vx_march_run(m, occ, o, d, 0.0f, VX_MARCH_OP_OF(&r));
    }
    vx_grid_op g = vx_grid_op_make(m, data, NULL);
    return vx_march_run(m, occ, o, d, 0.0f, VX_MARCH_OP_OF(&g));
}

#endif
