/* piece_split.c - the sort-last plan (piece.h): a k-d split of the brick table balanced by
 * stored voxels, what each piece owns and stores, the front-to-back order of the pieces
 * from an eye, and the "over" compositing of their packed partial images. Integer
 * arithmetic only in the split, so every rank computes the same plan. */
#include "piece.h"

#include <stdlib.h>
#include <string.h>

#include "sparse.h"
#include "vx_common.h"

static uint64_t vx__brick_voxels(const int n[3], int bx, int by, int bz) {
    int b[3] = {bx, by, bz};
    uint64_t v = 1;
    for (int a = 0; a < 3; a++) {
        int hi = (b[a] + 1) * VX_BRICK < n[a] ? (b[a] + 1) * VX_BRICK : n[a];
        v *= (uint64_t)(hi - b[a] * VX_BRICK);
    }
    return v;
}

typedef struct {
    vx_piece_plan *p;
    const uint32_t *w;
    uint64_t *marg;         /* scratch: per-slab weights along one axis */
} vx__split;

/* Weight of the bricks in box [lo, hi) summed per slab of axis a into s->marg. */
static uint64_t vx__marginal(vx__split *s, const int lo[3], const int hi[3], int a, int uniform) {
    const vx_piece_plan *p = s->p;
    uint64_t total = 0;
    memset(s->marg + lo[a], 0, sizeof(uint64_t) * (size_t)(hi[a] - lo[a]));
    for (int z = lo[2]; z < hi[2]; z++)
        for (int y = lo[1]; y < hi[1]; y++)
            for (int x = lo[0]; x < hi[0]; x++) {
                uint64_t v = uniform || !s->w ? vx__brick_voxels(p->n, x, y, z)
                                              : s->w[((size_t)z * p->bn[1] + y) * p->bn[0] + x];
                int c[3] = {x, y, z};
                s->marg[c[a]] += v;
                total += v;
            }
    return total;
}

/* Split box [lo, hi) among pieces first .. first + m - 1; returns the node index. */
static int vx__build(vx__split *s, const int lo[3], const int hi[3], int first, int m) {
    vx_piece_plan *p = s->p;
    int id = p->nnodes++;
    vx_piece_node *nd = &p->nodes[id];
    if (m == 1) {
        nd->axis = -1;
        nd->lo = first;
        nd->hi = first;
        memcpy(p->box[first], (int[6]){lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]}, sizeof p->box[first]);
        p->weight[first] = vx__marginal(s, lo, hi, 0, 0);
        return id;
    }
    /* the longest axis that can still be cut (bricks on both sides); none: all go low */
    int a = -1;
    for (int k = 0; k < 3; k++)
        if (hi[k] - lo[k] >= 2 && (a < 0 || hi[k] - lo[k] > hi[a] - lo[a])) a = k;
    int mlo = m / 2, plane;
    if (a < 0) {
        a = 0;
        plane = hi[0];
    } else {
        uint64_t total = vx__marginal(s, lo, hi, a, 0);
        int uniform = total == 0; /* nothing stored: balance the volume instead */
        if (uniform) total = vx__marginal(s, lo, hi, a, 1);
        /* the plane whose low side holds closest to total * mlo / m, each side a slab at least */
        long double target = (long double)total * mlo / m, best = -1, acc = 0;
        plane = lo[a] + 1;
        for (int c = lo[a] + 1; c < hi[a]; c++) {
            acc += (long double)s->marg[c - 1];
            long double d = acc > target ? acc - target : target - acc;
            if (best < 0 || d < best) { best = d; plane = c; }
        }
    }
    int llo[3] = {lo[0], lo[1], lo[2]}, lhi[3] = {hi[0], hi[1], hi[2]};
    int hlo[3] = {lo[0], lo[1], lo[2]}, hhi[3] = {hi[0], hi[1], hi[2]};
    lhi[a] = plane;
    hlo[a] = plane;
    int l = vx__build(s, llo, lhi, first, mlo);
    int h = vx__build(s, hlo, hhi, first + mlo, m - mlo);
    nd = &p->nodes[id]; /* (the array does not move, but read it again after recursion) */
    nd->axis = a;
    nd->plane = plane;
    nd->lo = l;
    nd->hi = h;
    return id;
}

int vx_piece_plan_make(vx_piece_plan *p, const int n[3], int count, const uint32_t *weight) {
    memset(p, 0, sizeof *p);
    if (count < 1 || count > VX_PIECE_MAX) return vx_error("%d pieces: sort-last splits into 1..%d", count, VX_PIECE_MAX);
    p->count = count;
    int bmax = 1;
    for (int a = 0; a < 3; a++) {
        p->n[a] = n[a];
        p->bn[a] = (n[a] + VX_BRICK - 1) / VX_BRICK;
        bmax = p->bn[a] > bmax ? p->bn[a] : bmax;
    }
    p->nodes = vx_calloc((size_t)(2 * count - 1), sizeof *p->nodes, "k-d tree");
    p->box = vx_calloc((size_t)count, sizeof *p->box, "piece boxes");
    p->weight = vx_calloc((size_t)count, sizeof *p->weight, "piece weights");
    vx__split s = {p, weight, vx_calloc((size_t)bmax, sizeof(uint64_t), "split scratch")};
    if (!p->nodes || !p->box || !p->weight || !s.marg) {
        free(s.marg);
        vx_piece_plan_free(p);
        return -1;
    }
    int lo[3] = {0, 0, 0};
    vx__build(&s, lo, p->bn, 0, count);
    free(s.marg);
    return 0;
}

void vx_piece_plan_free(vx_piece_plan *p) {
    free(p->nodes);
    free(p->box);
    free(p->weight);
    memset(p, 0, sizeof *p);
}

/* Ownership: the half-spaces on the path from the root to piece i's leaf. */
static int vx__own(const vx_piece_plan *p, int node, int i, float lo[3], float hi[3]) {
    const vx_piece_node *nd = &p->nodes[node];
    if (nd->axis < 0) return nd->lo == i;
    float plane = (float)(nd->plane * VX_BRICK), keep;
    keep = hi[nd->axis];
    hi[nd->axis] = plane < keep ? plane : keep;
    if (vx__own(p, nd->lo, i, lo, hi)) return 1;
    hi[nd->axis] = keep;
    keep = lo[nd->axis];
    lo[nd->axis] = plane > keep ? plane : keep;
    if (vx__own(p, nd->hi, i, lo, hi)) return 1;
    lo[nd->axis] = keep;
    return 0;
}

void vx_piece_own_box(const vx_piece_plan *p, int i, float lo[3], float hi[3]) {
    for (int a = 0; a < 3; a++) { lo[a] = -3.0e38f; hi[a] = 3.0e38f; }
    vx__own(p, 0, i, lo, hi);
}

void vx_piece_store_box(const vx_piece_plan *p, int i, int lo_margin, int blo[3], int bhi[3]) {
    for (int a = 0; a < 3; a++) {
        blo[a] = p->box[i][2 * a];
        bhi[a] = p->box[i][2 * a + 1];
        if (bhi[a] <= blo[a]) { bhi[a] = blo[a]; continue; } /* owns nothing: stores nothing */
        blo[a] = blo[a] - lo_margin > 0 ? blo[a] - lo_margin : 0;
        bhi[a] = bhi[a] + 1 < p->bn[a] ? bhi[a] + 1 : p->bn[a];
    }
    if (bhi[0] == blo[0] || bhi[1] == blo[1] || bhi[2] == blo[2])
        for (int a = 0; a < 3; a++) bhi[a] = blo[a];
}

static void vx__order(const vx_piece_plan *p, int node, const float eye[3], int *order, int *k) {
    const vx_piece_node *nd = &p->nodes[node];
    if (nd->axis < 0) { order[(*k)++] = nd->lo; return; }
    int low_first = eye[nd->axis] < (float)(nd->plane * VX_BRICK); /* the side holding the eye is nearer */
    vx__order(p, low_first ? nd->lo : nd->hi, eye, order, k);
    vx__order(p, low_first ? nd->hi : nd->lo, eye, order, k);
}

void vx_piece_order(const vx_piece_plan *p, const float eye[3], int *order) {
    int k = 0;
    vx__order(p, 0, eye, order, &k);
}

/* ---- partial images ------------------------------------------------------------------------ */

void vx_piece_pack(const vx_frame *f, int stride, float *out) {
    size_t n = (size_t)f->width * f->height;
    for (size_t i = 0; i < n; i++) {
        float *o = out + i * (size_t)stride;
        o[0] = f->rgb[3 * i];
        o[1] = f->rgb[3 * i + 1];
        o[2] = f->rgb[3 * i + 2];
        o[3] = 1.0f - f->alpha[i];
        if (stride > 4) o[4] = f->depth ? f->depth[i] : 0.0f;
    }
}

void vx_piece_composite(const float *const *parts, const int *order, int n, size_t npix, int stride, float *out) {
    for (size_t i = 0; i < npix; i++) {
        float c[3] = {0.0f, 0.0f, 0.0f}, T = 1.0f, d = 0.0f;
        for (int k = 0; k < n; k++) { /* front to back: what lies behind is seen through T */
            const float *q = parts[order[k]] + i * (size_t)stride;
            c[0] += T * q[0];
            c[1] += T * q[1];
            c[2] += T * q[2];
            if (stride > 4) d += T * q[4];
            T *= q[3];
        }
        float *o = out + i * (size_t)stride;
        o[0] = c[0]; o[1] = c[1]; o[2] = c[2]; o[3] = T;
        if (stride > 4) o[4] = d;
    }
}

void vx_piece_unpack(const float *in, int stride, const float bg[3], vx_frame *f, int row0, int rows) {
    size_t base = (size_t)row0 * f->width, n = (size_t)rows * f->width;
    for (size_t i = 0; i < n; i++) {
        const float *q = in + i * (size_t)stride;
        size_t p = base + i;
        for (int k = 0; k < 3; k++) f->rgb[3 * p + k] = q[k] + q[3] * bg[k];
        f->alpha[p] = 1.0f - q[3];
        if (f->depth) f->depth[p] = stride > 4 ? q[4] : 0.0f;
    }
}
