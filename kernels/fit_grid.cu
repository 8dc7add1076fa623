/* fit_grid.cu - the CUDA fit's changes of the lattice itself (the twins of fit_cpu.c's):
 * pruning voxels no ray weighed, the alive mask in lattice order, and resampling (upsample
 * and crop) into dense or bricked storage, one thread per new voxel. */
#include <stdlib.h>
#include <string.h>

#include "fit_device.cuh"

__global__ void vx_fit_prune_kernel(float *data, float *mom, float *var, unsigned char *alive,
                                    const float *__restrict__ wmax, const unsigned *__restrict__ active,
                                    size_t n_active, int nc, float thresh, unsigned long long *count) {
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n_active) return;
    size_t iv = active[k];
    if (wmax[iv] < thresh) {
        alive[iv] = 0;
        for (int c = 0; c < nc; c++) data[iv * nc + c] = mom[iv * nc + c] = var[iv * nc + c] = 0.0f;
        atomicAdd(count, 1ull);
    }
}

/* The alive mask in lattice order (vx_fit_alive_mask_cpu): one thread per alive voxel. */
__global__ void vx_fit_mask_kernel(const unsigned *__restrict__ active, size_t n_active, vx_fit_index L,
                                   unsigned char *mask) {
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n_active) return;
    int x, y, z;
    if (vx_fit_xyz(&L, active[k], &x, &y, &z)) return;
    mask[((size_t)z * L.ny + y) * L.nx + x] = 1;
}

/* Flag the bricks of the new lattice (n) that hold an alive voxel: one thread per new
 * lattice point (vx__alloc_live_bricks of fit_cpu.c). */
__global__ void vx_fit_live_bricks_kernel(vx_fit_index Lo, const unsigned char *__restrict__ oalive, int nx, int ny,
                                          int nz, int bnx, int bny, vx_fit_affine map, unsigned char *live) {
    size_t iv = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (iv >= (size_t)nx * ny * nz) return;
    int x = (int)(iv % nx), y = (int)((iv / nx) % ny), z = (int)(iv / ((size_t)nx * ny));
    size_t k = ((size_t)(z >> VX_BRICK_LOG2) * bny + (y >> VX_BRICK_LOG2)) * bnx + (x >> VX_BRICK_LOG2);
    if (!live[k] && vx_fit_resample_alive(&Lo, oalive, vx_fit_resample_point(map.a, map.b, x, y, z))) live[k] = 1;
}

/* One thread per entry of the new storage: lattice points take the trilinear value of the
 * old model and its alive rule; other entries (the null brick, points past the lattice)
 * stay zero and dead. */
__global__ void vx_fit_resample_kernel(const float *__restrict__ odata, const unsigned char *__restrict__ oalive,
                                       vx_fit_index Lo, float *data, unsigned char *alive, vx_fit_index Ln, size_t nv,
                                       int nc, vx_fit_affine map) {
    size_t iv = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (iv >= nv) return;
    int x, y, z;
    float *out = data + iv * nc;
    unsigned char a = 0;
    if (!vx_fit_xyz(&Ln, iv, &x, &y, &z)) {
        vx_vec3 p = vx_fit_resample_point(map.a, map.b, x, y, z);
        a = (unsigned char)vx_fit_resample_alive(&Lo, oalive, p);
        if (a) vx_fit_fetch(&Lo, odata, nc, p, out);
    }
    alive[iv] = a;
    if (!a)
        for (int c = 0; c < nc; c++) out[c] = 0.0f;
}

/* ---- host side ------------------------------------------------------------------------------- */

extern "C" int vx_fit_prune_cuda(vx_fit_device *g, float thresh, size_t *pruned) {
    size_t nv = vx_fitd_nv(&g->m);
    unsigned long long count = 0;
    if (thresh > 0.0f && g->n_active) {
        if (vx_cuda_zero(g->d_count, sizeof count)) return -1;
        int bs = 256;
        vx_fit_prune_kernel<<<vx_ceil_div(g->n_active, bs), bs>>>(g->d_data, g->d_m, g->d_v, g->d_alive, g->d_wmax,
                                                                   g->d_active, g->n_active, g->m.nc, thresh,
                                                                   g->d_count);
        VX_LAUNCH_CHECK("vx_fit_prune_kernel");
        if (vx_cuda_download(&count, g->d_count, sizeof count)) return -1;
        if (count && vx_fitd_compact(g)) return -1;
    }
    if (vx_cuda_zero(g->d_wmax, nv * sizeof(float))) return -1;
    *pruned = (size_t)count;
    return 0;
}

extern "C" int vx_fit_alive_mask_cuda(vx_fit_device *g, unsigned char *mask, size_t *alive) {
    size_t bytes = (size_t)g->m.nx * g->m.ny * g->m.nz;
    unsigned char *d_mask = NULL;
    int rc = -1;
    *alive = g->n_active;
    if (vx_cuda_alloc((void **)&d_mask, bytes, "fit alive mask") || vx_cuda_zero(d_mask, bytes)) goto done;
    if (g->n_active) {
        int bs = 256;
        vx_fit_mask_kernel<<<vx_ceil_div(g->n_active, bs), bs>>>(g->d_active, g->n_active, vx_fitd_index(g), d_mask);
        if (VX_LAUNCH_STATUS("vx_fit_mask_kernel")) goto done;
    }
    rc = vx_cuda_download(mask, d_mask, bytes);
done:
    vx_cuda_free(d_mask);
    return rc;
}

/* Bricked storage for g's new lattice (already in g->m) with exactly the bricks that hold
 * an alive voxel of the old model (Lo, d_oalive, through map): flags on the device, the
 * table built on the host (vx_fit_fill_slots, as fit_cpu.c does), then uploaded. */
static int vx__alloc_live_bricks(vx_fit_device *g, const vx_fit_index *Lo, const unsigned char *d_oalive,
                                 const vx_fit_affine *map) {
    int bn[3] = {(g->m.nx + VX_BRICK - 1) / VX_BRICK, (g->m.ny + VX_BRICK - 1) / VX_BRICK,
                 (g->m.nz + VX_BRICK - 1) / VX_BRICK};
    size_t entries = (size_t)bn[0] * bn[1] * bn[2], nl = (size_t)g->m.nx * g->m.ny * g->m.nz;
    unsigned char *d_live = NULL, *live = (unsigned char *)vx_malloc(entries, "fit live-brick flags");
    int32_t *table = (int32_t *)vx_calloc(entries, sizeof(int32_t), "fit brick table");
    int32_t *bxyz = NULL;
    int rc = -1;
    if (!live || !table || vx_cuda_alloc((void **)&d_live, entries, "fit live-brick flags") ||
        vx_cuda_zero(d_live, entries))
        goto done;
    {
        int bs = 256;
        vx_fit_live_bricks_kernel<<<vx_ceil_div(nl, bs), bs>>>(*Lo, d_oalive, g->m.nx, g->m.ny, g->m.nz, bn[0], bn[1],
                                                                *map, d_live);
        if (VX_LAUNCH_STATUS("vx_fit_live_bricks_kernel") || vx_cuda_download(live, d_live, entries)) goto done;
    }
    {
        size_t nslots = vx_fit_live_slots(live, entries);
        bxyz = (int32_t *)vx_calloc(3 * nslots, sizeof(int32_t), "fit brick coordinates");
        if (!bxyz) goto done;
        vx_fit_fill_slots(live, bn, table, bxyz);
        for (int a = 0; a < 3; a++) g->m.bn[a] = bn[a];
        g->m.nslots = nslots;
        if (vx_fitd_alloc_grid(g) || vx_cuda_upload(g->d_table, table, entries * sizeof(int32_t)) ||
            vx_cuda_upload(g->d_bxyz, bxyz, 3 * nslots * sizeof(int32_t)))
            goto done;
    }
    rc = 0;
done:
    vx_cuda_free(d_live);
    free(live); free(table); free(bxyz);
    return rc;
}

extern "C" int vx_fit_resample_cuda(vx_fit_device *g, const double lo[3], const double hi[3], const int res[3]) {
    size_t nv;
    for (int a = 0; a < 3; a++)
        if (!(hi[a] > lo[a])) return vx_error("fit: resample box is empty on axis %d", a);
    if (res[0] < 1 || res[1] < 1 || res[2] < 1 || res[0] > 4096 || res[1] > 4096 || res[2] > 4096 ||
        vx_mul_size4((size_t)res[0], (size_t)res[1], (size_t)res[2], (size_t)g->m.nc, &nv) ||
        (!g->m.sparse_fit && nv > VX_MAX_GRID_BYTES / sizeof(float)))
        return vx_error("fit: cannot resample to %dx%dx%d", res[0], res[1], res[2]);
    vx_fit_affine map;
    vx_fit_resample_map(&g->m, lo, hi, res, map.a, map.b);
    vx_fit_device old = *g;
    vx_fit_index Lo = vx_fitd_index(&old);
    g->m.nx = res[0]; g->m.ny = res[1]; g->m.nz = res[2];
    for (int a = 0; a < 3; a++) g->m.bn[a] = (res[a] + VX_BRICK - 1) / VX_BRICK;
    g->m.nslots = 0;
    memcpy(g->m.box_lo, lo, sizeof g->m.box_lo);
    memcpy(g->m.box_hi, hi, sizeof g->m.box_hi);
    g->d_data = g->d_grad = g->d_m = g->d_v = g->d_wmax = NULL;
    g->d_alive = g->d_occ = NULL;
    g->d_table = g->d_bxyz = NULL;
    g->d_active = NULL;
    g->occ_count = g->n_active = 0;
    if (g->m.sparse_fit ? vx__alloc_live_bricks(g, &Lo, old.d_alive, &map) : vx_fitd_alloc_grid(g)) {
        vx_fitd_free_grid(g);
        *g = old;
        return -1;
    }
    int bs = 256;
    size_t nn = vx_fitd_nv(&g->m);
    vx_fit_resample_kernel<<<vx_ceil_div(nn, bs), bs>>>(old.d_data, old.d_alive, Lo, g->d_data, g->d_alive,
                                                        vx_fitd_index(g), nn, g->m.nc, map);
    /* the old grid is read until the kernel ends: wait (checked) before freeing it */
    int rc = VX_LAUNCH_STATUS("vx_fit_resample_kernel") || vx_cuda_sync() ? -1 : 0;
    vx_fitd_free_grid(&old);
    if (rc) return -1;
    g->m.mp.occ_b = 0;
    if (vx_fitd_compact(g)) return -1;
    return vx_fit_update_params(&g->m, g->m.mp.stop);
}

extern "C" int vx_fit_upsample_cuda(vx_fit_device *g, const int res[3]) {
    return vx_fit_resample_cuda(g, g->m.box_lo, g->m.box_hi, res);
}
