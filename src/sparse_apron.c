/* sparse_apron.c - plans and fills the apron layout of sparse_apron.h: a 9^3 block per
 * brick that is present or has a present high neighbour, filled from the brick pool a lattice
 * row at a time (absent bricks read the background; points past the far faces the nearest
 * lattice point). Called by the CUDA upload in kernels/render.cu, a chunk of blocks a time. */
#include "sparse_apron.h"

#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

static int vx__present(const vx_sparse *s, int bx, int by, int bz) {
    if (bx >= s->bn[0] || by >= s->bn[1] || bz >= s->bn[2]) return 0;
    return s->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx] >= 0;
}

int vx_apron_plan(const vx_sparse *s, int nx, int ny, int nz, int nc, vx_apron *a, const char *what) {
    memset(a, 0, sizeof *a);
    if (!what) what = "sparse grid";
    if (nc < 1 || nc > s->nc) return vx_error("%s: %d channels asked of a %d-channel grid", what, nc, s->nc);
    int n[3] = {nx, ny, nz};
    for (int k = 0; k < 3; k++)
        if (n[k] < 1 || (n[k] + VX_BRICK - 1) / VX_BRICK != s->bn[k])
            return vx_error("%s: lattice %dx%dx%d does not match its %dx%dx%d brick table", what, nx, ny, nz,
                            s->bn[0], s->bn[1], s->bn[2]);
    memcpy(a->n, n, sizeof a->n);
    memcpy(a->bn, s->bn, sizeof a->bn);
    a->nc = nc;
    size_t ntab = (size_t)s->bn[0] * s->bn[1] * s->bn[2];
    a->table = vx_malloc(ntab * sizeof(int32_t), what);
    if (!a->table) return -1;
    /* mark (1: needs a block), a z slab per thread; then slots in table order */
    #pragma omp parallel for schedule(dynamic, 4)
    for (int bz = 0; bz < s->bn[2]; bz++)
        for (int by = 0; by < s->bn[1]; by++)
            for (int bx = 0; bx < s->bn[0]; bx++) {
                int need = 0;
                for (int k = 0; k < 8 && !need; k++) need = vx__present(s, bx + (k & 1), by + (k >> 1 & 1), bz + (k >> 2));
                a->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx] = need;
            }
    size_t count = 0;
    for (size_t t = 0; t < ntab; t++) count += (size_t)a->table[t];
    if (count >= (size_t)INT32_MAX) {
        vx_apron_free(a);
        return vx_error("%s: %zu apron blocks do not fit 32-bit slots", what, count);
    }
    a->nblocks = count;
    a->brick_of = vx_malloc((count ? count : 1) * sizeof(size_t), what);
    if (!a->brick_of) { vx_apron_free(a); return -1; }
    count = 0;
    for (size_t t = 0; t < ntab; t++) {
        if (a->table[t]) { a->brick_of[count] = t; a->table[t] = (int32_t)count++; }
        else a->table[t] = (int32_t)a->nblocks;
    }
    return 0;
}

void vx_apron_free(vx_apron *a) {
    if (!a) return;
    free(a->table);
    free(a->brick_of);
    memset(a, 0, sizeof *a);
}

/* m consecutive lattice points x0.. of one brick row (y, z inside the lattice) into out, the
 * first a->nc channels of each; one copy when the brick is present and keeps every channel. */
static void vx__fill_row(const vx_sparse *s, const vx_apron *a, int x0, int y, int z, int m, float *out) {
    int nc = a->nc;
    int32_t slot = s->table[vx_sparse_brick_index(s->bn, x0, y, z)];
    if (slot >= 0 && nc == s->nc) {
        memcpy(out, s->pool + vx_sparse_offset(s->table, s->bn, s->nc, x0, y, z), sizeof(float) * (size_t)m * nc);
        return;
    }
    for (int i = 0; i < m; i++) memcpy(out + (size_t)i * nc, vx_sparse_voxel(s, x0 + i, y, z), sizeof(float) * (size_t)nc);
}

void vx_apron_fill_cpu(const vx_sparse *s, const vx_apron *a, size_t first, size_t count, float *out) {
    int nc = a->nc;
    size_t bsize = (size_t)VX_APRON_VOXELS * nc;
    #pragma omp parallel for schedule(dynamic, 16)
    for (long long i = 0; i < (long long)count; i++) {
        size_t b = first + (size_t)i;
        float *blk = out + (size_t)i * bsize;
        if (b >= a->nblocks) { /* the background block */
            for (int v = 0; v < VX_APRON_VOXELS; v++) memcpy(blk + (size_t)v * nc, s->background, sizeof(float) * (size_t)nc);
            continue;
        }
        size_t t = a->brick_of[b];
        int bx = (int)(t % (size_t)s->bn[0]), by = (int)(t / (size_t)s->bn[0] % (size_t)s->bn[1]);
        int bz = (int)(t / ((size_t)s->bn[0] * s->bn[1]));
        int x0 = bx * VX_BRICK, xe = x0 + VX_BRICK < a->n[0] ? x0 + VX_BRICK : a->n[0]; /* brick's points: x0..xe-1 */
        for (int lz = 0; lz < VX_APRON; lz++)
            for (int ly = 0; ly < VX_APRON; ly++) {
                int y = vx_mini(by * VX_BRICK + ly, a->n[1] - 1), z = vx_mini(bz * VX_BRICK + lz, a->n[2] - 1);
                float *row = blk + (size_t)vx_apron_voxel(0, ly, lz) * nc;
                vx__fill_row(s, a, x0, y, z, xe - x0, row);
                for (int lx = xe - x0; lx < VX_APRON; lx++) /* the +1 neighbour, or replicas past the face */
                    memcpy(row + (size_t)lx * nc, vx_sparse_voxel(s, vx_mini(x0 + lx, a->n[0] - 1), y, z), sizeof(float) * (size_t)nc);
            }
    }
}
