/* fit_coarse.cuh - CUDA kernels of the coarse levels of `voxray fit --coarse` (fit_coarse.h):
 * the restriction of the fine gradient onto a level (one block per 8^3 brick, separable, no
 * atomics but the brick's few coarse sums), a level's Adam step and the prolongation of all
 * levels' steps into the fine grid. fit.cu launches them; fit_coarse.c is their reference. */
#ifndef VX_FIT_COARSE_CUH
#define VX_FIT_COARSE_CUH

#include "fit_coarse.h"
#include "fit_march.h"

/* Coarse vertices per axis a brick's 8 voxels reach when a coarse voxel is at least twice a
 * fine one (vx_fit_coarse_map_of's rule): the 8 centres span 3.5 coarse voxels, 6 vertices. */
#define VX_FC_W 6
#define VX_FC_CH 8 /* channels per pass: 64 rows x 8 channels = the block's 512 threads */

/* Brick b's first lattice point: pool slot b + 1 (bricked storage) or tile b of the dense
 * lattice, x fastest over tiles[0] x tiles[1] tiles. */
VX_HD void vx_fc_brick_origin(const vx_fit_index *L, int b, const int tiles[2], int o[3]) {
    if (L->table) {
        const int32_t *c = L->bxyz + 3 * ((size_t)b + 1);
        for (int a = 0; a < 3; a++) o[a] = c[a] * VX_BRICK;
    } else {
        o[0] = (b % tiles[0]) * VX_BRICK;
        o[1] = ((b / tiles[0]) % tiles[1]) * VX_BRICK;
        o[2] = (b / (tiles[0] * tiles[1])) * VX_BRICK;
    }
}

/* Add w * v to the two entries (k, k + 1) of a VX_FC_W window, without a dynamically
 * indexed array (which would live in local memory). */
static __device__ __forceinline__ void vx_fc_split(float acc[VX_FC_W], int k, float f, float v) {
#pragma unroll
    for (int i = 0; i < VX_FC_W; i++) acc[i] += (i == k ? (1.0f - f) * v : 0.0f) + (i == k + 1 ? f * v : 0.0f);
}

/* dL/dcoarse += U^T dL/dfine over one brick's alive voxels: x, then y, then z sums through
 * shared memory, then one atomic per touched coarse entry. The level's channels are the
 * rows' from ch0 (vx_fit_coarse_ch0). Block: 512 threads. */
__global__ void __launch_bounds__(512) vx_fit_coarse_restrict_kernel(const float *__restrict__ grad,
                                                                   const unsigned char *__restrict__ alive,
                                                                   vx_fit_index L, int nc, int ch0, vx_fit_coarse_map cm,
                                                                   int tx, int ty, float *cgrad) {
    __shared__ int s_k[3][VX_BRICK], s_org[3], s_ext[3];
    __shared__ float s_f[3][VX_BRICK];
    __shared__ float t1[VX_BRICK * VX_BRICK][VX_FC_W][VX_FC_CH];      /* (z, y), I, c */
    __shared__ float t2[VX_BRICK][VX_FC_W][VX_FC_W][VX_FC_CH];        /* z, J, I, c */
    int t = threadIdx.x, o[3], n[3] = {L.nx, L.ny, L.nz}, tiles[2] = {tx, ty};
    vx_fc_brick_origin(&L, blockIdx.x, tiles, o);
    if (t < 3) {
        int k0, kl, k;
        float f;
        vx_fit_coarse_axis(&cm, t, o[t], &k0, &f);
        vx_fit_coarse_axis(&cm, t, vx_mini(o[t] + VX_BRICK - 1, n[t] - 1), &kl, &f);
        s_org[t] = k0;
        s_ext[t] = kl + 2 - k0;
        for (int i = 0; i < VX_BRICK; i++) {
            vx_fit_coarse_axis(&cm, t, o[t] + i, &k, &f);
            s_k[t][i] = k - k0;
            s_f[t][i] = f;
        }
    }
    __syncthreads();
    int ncc = nc - ch0;
    for (int c0 = 0; c0 < ncc; c0 += VX_FC_CH) {
        { /* x: thread = row (z, y) and channel */
            int r = t / VX_FC_CH, c = t % VX_FC_CH, y = r % VX_BRICK, z = r / VX_BRICK;
            float acc[VX_FC_W] = {0.0f};
            if (c0 + c < ncc && o[1] + y < L.ny && o[2] + z < L.nz)
                for (int x = 0; x < VX_BRICK && o[0] + x < L.nx; x++) {
                    size_t v = vx_fit_vid(&L, o[0] + x, o[1] + y, o[2] + z);
                    if (alive[v]) vx_fc_split(acc, s_k[0][x], s_f[0][x], grad[v * nc + ch0 + c0 + c]);
                }
#pragma unroll
            for (int i = 0; i < VX_FC_W; i++) t1[r][i][c] = acc[i];
        }
        __syncthreads();
        if (t < VX_BRICK * VX_FC_W * VX_FC_CH) { /* y: thread = (z, I, channel) */
            int c = t % VX_FC_CH, i = (t / VX_FC_CH) % VX_FC_W, z = t / (VX_FC_CH * VX_FC_W);
            float acc[VX_FC_W] = {0.0f};
            for (int y = 0; y < VX_BRICK; y++) vx_fc_split(acc, s_k[1][y], s_f[1][y], t1[z * VX_BRICK + y][i][c]);
#pragma unroll
            for (int j = 0; j < VX_FC_W; j++) t2[z][j][i][c] = acc[j];
        }
        __syncthreads();
        if (t < VX_FC_W * VX_FC_W * VX_FC_CH) { /* z: thread = (J, I, channel), then the atomics */
            int c = t % VX_FC_CH, i = (t / VX_FC_CH) % VX_FC_W, j = t / (VX_FC_CH * VX_FC_W);
            float acc[VX_FC_W] = {0.0f};
            for (int z = 0; z < VX_BRICK; z++) vx_fc_split(acc, s_k[2][z], s_f[2][z], t2[z][j][i][c]);
            if (c0 + c < ncc && i < s_ext[0] && j < s_ext[1])
#pragma unroll
                for (int k = 0; k < VX_FC_W; k++)
                    if (k < s_ext[2] && acc[k] != 0.0f)
                        atomicAdd(cgrad + ((((size_t)(s_org[2] + k) * cm.n[1] + s_org[1] + j) * cm.n[0] + s_org[0] + i) *
                                               ncc + c0 + c),
                                  acc[k]);
        }
        __syncthreads(); /* t1 and t2 are rewritten by the next pass */
    }
}

/* Version 2 of the restriction, fit's default: the same sums with less arithmetic
 * (measured on lego's 8.4 M alive voxels, H100: 0.35 ms a step against version 1's 0.94,
 * where its 0.5 GB of gradient need ~0.17 at copy speed; docs/BENCHMARKS.md, session 20).
 * The block's brick is contiguous in storage (pool slot b + 1 holds entries (b + 1) * 512 + local; a dense
 * tile is 64 runs of 8 lattice entries), so no brick-table lookups; an x-pass thread loads
 * its row's 8 values once; and each axis spreads them with a weight table in shared memory
 * (s_w[axis][vertex][voxel], zero beyond the lattice) over only the window's ext vertices,
 * 2-3 in a last stage where a coarse voxel spans 8 fine ones, instead of version 1's 12
 * masked multiply-adds a value over the whole 6-wide window. Same launch as version 1; three
 * blocks an SM as version 1 (ptxas sm_90: 40 registers under this bound, 48 without, no
 * spills; four blocks would spill). */
__global__ void __launch_bounds__(512, 3) vx_fit_coarse_restrict2_kernel(const float *__restrict__ grad,
                                                                    const unsigned char *__restrict__ alive,
                                                                    vx_fit_index L, int nc, int ch0, vx_fit_coarse_map cm,
                                                                    int tx, int ty, float *cgrad) {
    __shared__ int s_org[3], s_ext[3];
    __shared__ float s_w[3][VX_FC_W][VX_BRICK];
    __shared__ float t1[VX_BRICK * VX_BRICK][VX_FC_W][VX_FC_CH]; /* (z, y), I, c */
    __shared__ float t2[VX_BRICK][VX_FC_W][VX_FC_W][VX_FC_CH];   /* z, J, I, c */
    int t = threadIdx.x, tiles[2] = {tx, ty}, o[3];
    vx_fc_brick_origin(&L, blockIdx.x, tiles, o);
    if (t < 3 * VX_FC_W * VX_BRICK) (&s_w[0][0][0])[t] = 0.0f;
    __syncthreads();
    if (t < 3) {
        int n = t == 0 ? L.nx : t == 1 ? L.ny : L.nz, k0, kl, k;
        float f;
        vx_fit_coarse_axis(&cm, t, o[t], &k0, &f);
        vx_fit_coarse_axis(&cm, t, vx_mini(o[t] + VX_BRICK - 1, n - 1), &kl, &f);
        s_org[t] = k0;
        s_ext[t] = kl + 2 - k0;
        for (int i = 0; i < VX_BRICK && o[t] + i < n; i++) {
            vx_fit_coarse_axis(&cm, t, o[t] + i, &k, &f);
            s_w[t][k - k0][i] = 1.0f - f;
            s_w[t][k - k0 + 1][i] = f;
        }
    }
    __syncthreads();
    int ncc = nc - ch0, e0 = s_ext[0], e1 = s_ext[1], e2 = s_ext[2];
    for (int c0 = 0; c0 < ncc; c0 += VX_FC_CH) {
        { /* x: thread = row (z, y) and channel */
            int r = t / VX_FC_CH, c = t % VX_FC_CH, y = r % VX_BRICK, z = r / VX_BRICK;
            float gv[VX_BRICK];
            int ok = c0 + c < ncc && o[1] + y < L.ny && o[2] + z < L.nz;
            size_t vb = L.table ? ((size_t)blockIdx.x + 1) * VX_BRICK_VOXELS + (size_t)r * VX_BRICK
                                : ((size_t)(o[2] + z) * L.ny + (o[1] + y)) * L.nx + o[0];
#pragma unroll
            for (int x = 0; x < VX_BRICK; x++) {
                size_t v = vb + x;
                gv[x] = ok && o[0] + x < L.nx && alive[v] ? grad[v * nc + ch0 + c0 + c] : 0.0f;
            }
            for (int i = 0; i < e0; i++) {
                float a = 0.0f;
#pragma unroll
                for (int x = 0; x < VX_BRICK; x++) a += s_w[0][i][x] * gv[x];
                t1[r][i][c] = a;
            }
        }
        __syncthreads();
        if (t < VX_BRICK * VX_FC_W * VX_FC_CH) { /* y: thread = (z, I, channel) */
            int c = t % VX_FC_CH, i = (t / VX_FC_CH) % VX_FC_W, z = t / (VX_FC_CH * VX_FC_W);
            if (i < e0) {
                float tv[VX_BRICK];
#pragma unroll
                for (int y = 0; y < VX_BRICK; y++) tv[y] = t1[z * VX_BRICK + y][i][c];
                for (int j = 0; j < e1; j++) {
                    float a = 0.0f;
#pragma unroll
                    for (int y = 0; y < VX_BRICK; y++) a += s_w[1][j][y] * tv[y];
                    t2[z][j][i][c] = a;
                }
            }
        }
        __syncthreads();
        if (t < VX_FC_W * VX_FC_W * VX_FC_CH) { /* z: thread = (J, I, channel), then the atomics */
            int c = t % VX_FC_CH, i = (t / VX_FC_CH) % VX_FC_W, j = t / (VX_FC_CH * VX_FC_W);
            if (c0 + c < ncc && i < e0 && j < e1) {
                float tv[VX_BRICK];
#pragma unroll
                for (int z = 0; z < VX_BRICK; z++) tv[z] = t2[z][j][i][c];
                for (int k = 0; k < e2; k++) {
                    float a = 0.0f;
#pragma unroll
                    for (int z = 0; z < VX_BRICK; z++) a += s_w[2][k][z] * tv[z];
                    if (a != 0.0f)
                        atomicAdd(cgrad + ((((size_t)(s_org[2] + k) * cm.n[1] + s_org[1] + j) * cm.n[0] + s_org[0] + i) *
                                               ncc + c0 + c),
                                  a);
                }
            }
        }
        __syncthreads(); /* t1 and t2 are rewritten by the next pass */
    }
}

/* fit --coarse-only C: the alive voxels' gradient in the last C colour channels is zeroed
 * once the restriction has read it, so those channels move with the levels only (the twin
 * of the end of vx_fit_coarse_restrict_cpu). One thread per (alive voxel, channel); n =
 * alive voxels x C of this launch (< 2^32). */
__global__ void vx_fit_coarse_only_kernel(float *grad, const unsigned *__restrict__ active, unsigned n, int nc, int co) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    unsigned k = t / (unsigned)co, c = t - k * (unsigned)co;
    grad[(size_t)active[k] * (size_t)nc + (size_t)(nc - co) + c] = 0.0f;
}

/* Adam on every coarse entry (not lazy: the coarse grid is small and every entry has
 * neighbours seen by rays); the consumed gradient is replaced by the entry's step, which
 * --coarse-decay's value accumulates (VAL; false: val unused, the kernel as before the decay).
 * nch > 0 (--coarse-density: entries of nch channels, the density first): the density
 * entries step by lr_d instead. */
template <bool VAL>
__global__ void vx_fit_coarse_adam_kernel(float *step, float *mom, float *var, float *val, size_t n, float lr,
                                          unsigned nch, float lr_d, float b1, float b2, float eps, float bc1,
                                          float bc2) {
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float x = 0.0f, r = nch && j % nch == 0 ? lr_d : lr;
    vx_fit_adam_update(&x, mom + j, var + j, step[j], r, b1, b2, eps, bc1, bc2, 0);
    step[j] = x;
    if (VAL) val[j] += x;
}

/* The active levels of one step (vx_fit_coarse_apply_cuda): their maps, steps and, with
 * --coarse-decay (lam > 0), their values. */
typedef struct {
    int n;
    vx_fit_coarse_map m[VX_FIT_LEVELS];
    const float *step[VX_FIT_LEVELS];
    const float *val[VX_FIT_LEVELS];
    float lam;
} vx_fit_coarse_steps;

/* The alive voxels' colour channels += sum over the levels of U_l step_l: one thread per
 * (alive voxel, group of gw channels of its row), the layout of vx_fit_adam_kernel, so a warp
 * reads and writes whole runs of its voxels' rows in 16-byte pieces when gw = 4. (One thread
 * per voxel striding through its row wrote partial sectors; this layout cut the level's time
 * a step on lego's mlp fit from 2.60 to 1.86 ms on the H100, docs/BENCHMARKS.md.) The levels
 * are summed first and added once, so a second level costs its 8 gathers, not another pass
 * over the rows. Channel 0, the density, is left alone unless the levels carry it
 * (--coarse-density: CH0 = 0, the levels' first row channel; 1 compiles the kernel as
 * before the option, 48 registers where a run-time channel took 56). BLEND (--coarse-decay,
 * S.lam > 0): then each colour channel blends toward the levels' values,
 * d + lam (sum_l U_l val_l - d) (vx_fit_coarse_blend, as fit_coarse.c); false compiles the
 * kernel as it was before the decay. n = alive voxels x ng groups of this launch (< 2^32). */
template <bool BLEND, int CH0>
__global__ void vx_fit_coarse_prolong_kernel(float *data, const unsigned *__restrict__ active, unsigned n, int ng,
                                             int gw, vx_fit_index L, vx_fit_coarse_steps S) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    unsigned k = t / (unsigned)ng, q = t - k * (unsigned)ng;
    size_t v = active[k], idx[8];
    int x, y, z;
    if (vx_fit_xyz(&L, v, &x, &y, &z)) return;
    float w[8], s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, u[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int ncc = ng * gw - CH0, c0 = (int)q * gw;
#pragma unroll /* static indices into S: no copy of the parameter struct to local memory */
    for (int l = 0; l < VX_FIT_LEVELS; l++) {
        if (l >= S.n) break;
        vx_fit_coarse_corners(&S.m[l], x, y, z, idx, w);
        const float *__restrict__ step = S.step[l];
        const float *__restrict__ val = S.val[l];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int c = c0 + i - CH0; /* the coarse channel of row channel c0 + i */
            if (i < gw && c >= 0) {
#pragma unroll
                for (int j = 0; j < 8; j++) s[i] += w[j] * step[idx[j] * ncc + c];
                if (BLEND)
#pragma unroll
                    for (int j = 0; j < 8; j++) u[i] += w[j] * val[idx[j] * ncc + c];
            }
        }
    }
    float *d = data + v * (size_t)(ng * gw) + c0;
    if (gw == 4) {
        float4 a = *(float4 *)d;
        a.x += s[0]; a.y += s[1]; a.z += s[2]; a.w += s[3];
        if (BLEND) { /* channel 0 (q == 0, i == 0) is the density: never blended */
            if (q) a.x = vx_fit_coarse_blend(a.x, u[0], S.lam);
            a.y = vx_fit_coarse_blend(a.y, u[1], S.lam);
            a.z = vx_fit_coarse_blend(a.z, u[2], S.lam);
            a.w = vx_fit_coarse_blend(a.w, u[3], S.lam);
        }
        *(float4 *)d = a;
    } else {
        d[0] += s[0];
        if (BLEND && c0 > 0) d[0] = vx_fit_coarse_blend(d[0], u[0], S.lam);
    }
}

/* The prolongation's instantiation for a fit: the blend when --coarse-decay is on (lam > 0),
 * the levels from row channel 0 when they carry the density (--coarse-density). The launcher
 * (vx_fit_coarse_apply_cuda) and the emulated test both pick through it. */
typedef void (*vx_fit_coarse_prolong_fn)(float *, const unsigned *, unsigned, int, int, vx_fit_index,
                                         vx_fit_coarse_steps);
static inline vx_fit_coarse_prolong_fn vx_fit_coarse_prolong_pick(float lam, int density) {
    if (lam > 0.0f) return density ? vx_fit_coarse_prolong_kernel<true, 0> : vx_fit_coarse_prolong_kernel<true, 1>;
    return density ? vx_fit_coarse_prolong_kernel<false, 0> : vx_fit_coarse_prolong_kernel<false, 1>;
}

#endif
