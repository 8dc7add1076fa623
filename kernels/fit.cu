/* fit.cu - the CUDA twin of fit_cpu.c for `voxray fit`: one thread per ray runs vx_march
 * and vx_fit_march_backward (fit_march.h, shared with the CPU) scattering into the grid
 * gradient with atomics; Adam, TV, prune and upsample one thread per element/voxel.
 * tests/gpu/test_fit_gpu.c checks every step against the vx_fit_*_cpu reference.
 *
 * Version 1: the simplest correct kernels. Known costs for later versions: per-thread
 * raw/draw arrays of VX_MAX_CHANNELS floats live in local memory; the scatter issues
 * 8 x C atomics per sample; the dense Adam step touches every parameter each iteration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "fit.h"
#include "fit_march.h"
#include "vx_cuda.h"

struct vx_fit_cuda {
    vx_fit_model m;             /* metadata only: lattice, box, mp, t (host arrays NULL) */
    float *d_data, *d_grad, *d_m, *d_v, *d_wmax;
    unsigned char *d_alive, *d_occ;
    size_t occ_count;
    int max_batch;
    float *d_origin, *d_dir, *d_target, *d_rgb, *d_loss;
    float *h_loss;
    unsigned long long *d_count;
};

static size_t vx__nv(const vx_fit_model *m) { return (size_t)m->nx * m->ny * m->nz; }

/* ---- kernels -------------------------------------------------------------------------------- */

__global__ void vx_fit_rays_backward_kernel(vx_march_params mp, const float *__restrict__ data,
                                            const unsigned char *__restrict__ occ, const float *__restrict__ origin,
                                            const float *__restrict__ dir, const float *__restrict__ target, int n,
                                            float scale, float *grad, float *wmax, float *rgb_out, float *loss_out) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    vx_vec3 o = vx_v3(origin[3 * r], origin[3 * r + 1], origin[3 * r + 2]);
    vx_vec3 d = vx_v3(dir[3 * r], dir[3 * r + 1], dir[3 * r + 2]);
    vx_ray_result fwd = vx_march(&mp, data, occ, o, d);
    float g[3];
    loss_out[r] = vx_fit_mse_backward(fwd.rgb, target + 3 * r, scale, g);
    vx_fit_march_backward(&mp, data, occ, o, d, &fwd, g, grad, wmax, NULL);
    for (int c = 0; c < 3; c++) rgb_out[3 * r + c] = fwd.rgb[c];
}

__global__ void vx_fit_tv_kernel(const float *__restrict__ data, float *grad, const unsigned char *__restrict__ alive,
                                 int nx, int ny, int nz, int nc, float w_sigma, float w_sh, float fraction,
                                 unsigned long long seed, float eps, float *term) {
    size_t iv = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t nv = (size_t)nx * ny * nz;
    if (iv >= nv) return;
    if (!alive[iv] || !vx_fit_tv_selected(seed, iv, fraction)) return;
    int x = (int)(iv % nx), y = (int)((iv / nx) % ny), z = (int)(iv / ((size_t)nx * ny));
    float t = 0.0f;
    for (int c = 0; c < nc; c++) {
        float w = c == 0 ? w_sigma : w_sh;
        if (w == 0.0f) continue;
        t += w * vx_fit_tv_voxel(data, grad, nx, ny, nz, nc, x, y, z, c, w, eps);
    }
    term[iv] = t;
}

__global__ void vx_fit_adam_kernel(float *data, float *mom, float *var, const float *__restrict__ grad,
                                   const unsigned char *__restrict__ alive, size_t n, int nc, float lr_sigma,
                                   float lr_sh, float b1, float b2, float eps, float bc1, float bc2) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (!alive[i / nc]) return;
    int c = (int)(i % nc);
    vx_fit_adam_update(data + i, mom + i, var + i, grad[i], c == 0 ? lr_sigma : lr_sh, b1, b2, eps, bc1, bc2);
}

__global__ void vx_fit_prune_kernel(float *data, float *mom, float *var, unsigned char *alive, float *wmax, size_t nv,
                                    int nc, float thresh, unsigned long long *count) {
    size_t iv = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (iv >= nv) return;
    if (alive[iv] && wmax[iv] < thresh) {
        alive[iv] = 0;
        for (int c = 0; c < nc; c++) data[iv * nc + c] = mom[iv * nc + c] = var[iv * nc + c] = 0.0f;
        atomicAdd(count, 1ull);
    }
    wmax[iv] = 0.0f;
}

__global__ void vx_fit_upsample_kernel(const float *__restrict__ odata, const unsigned char *__restrict__ oalive,
                                       int onx, int ony, int onz, float *data, unsigned char *alive, int nx, int ny,
                                       int nz, int nc) {
    size_t iv = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (iv >= (size_t)nx * ny * nz) return;
    int x = (int)(iv % nx), y = (int)((iv / nx) % ny), z = (int)(iv / ((size_t)nx * ny));
    float sx = (float)onx / nx, sy = (float)ony / ny, sz = (float)onz / nz;
    vx_vec3 p = vx_v3(((float)x + 0.5f) * sx - 0.5f, ((float)y + 0.5f) * sy - 0.5f, ((float)z + 0.5f) * sz - 0.5f);
    size_t idx[8];
    float w[8];
    vx_trilinear_fetch(odata, onx, ony, onz, nc, p, data + iv * nc);
    vx_fit_corners(onx, ony, onz, p, idx, w);
    unsigned char a = 0;
    for (int j = 0; j < 8; j++) a |= w[j] > 0.0f && oalive[idx[j]];
    alive[iv] = a;
    if (!a)
        for (int c = 0; c < nc; c++) data[iv * nc + c] = 0.0f;
}

/* ---- host side ------------------------------------------------------------------------------- */

static void vx__free_grid(vx_fit_cuda *g) {
    cudaFree(g->d_data); cudaFree(g->d_grad); cudaFree(g->d_m); cudaFree(g->d_v);
    cudaFree(g->d_wmax); cudaFree(g->d_alive); cudaFree(g->d_occ);
    g->d_data = g->d_grad = g->d_m = g->d_v = g->d_wmax = NULL;
    g->d_alive = g->d_occ = NULL;
    g->occ_count = 0;
}

static int vx__alloc_grid(vx_fit_cuda *g) {
    size_t nv = vx__nv(&g->m), n = nv * g->m.nc;
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_data, n * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_grad, n * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_m, n * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_v, n * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_wmax, nv * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_alive, nv));
    VX_CUDA_CHECK(cudaMemset(g->d_grad, 0, n * sizeof(float)));
    VX_CUDA_CHECK(cudaMemset(g->d_m, 0, n * sizeof(float)));
    VX_CUDA_CHECK(cudaMemset(g->d_v, 0, n * sizeof(float)));
    VX_CUDA_CHECK(cudaMemset(g->d_wmax, 0, nv * sizeof(float)));
    return 0;
}

extern "C" void vx_fit_cuda_destroy(vx_fit_cuda *g) {
    if (!g) return;
    vx__free_grid(g);
    cudaFree(g->d_origin); cudaFree(g->d_dir); cudaFree(g->d_target); cudaFree(g->d_rgb); cudaFree(g->d_loss);
    cudaFree(g->d_count);
    free(g->h_loss);
    free(g);
}

static int vx__create(vx_fit_cuda *g, const vx_fit_model *f, int max_batch) {
    size_t nv = vx__nv(f), n = nv * f->nc, nb = (size_t)max_batch;
    if (vx__alloc_grid(g)) return -1;
    VX_CUDA_CHECK(cudaMemcpy(g->d_data, f->data, n * sizeof(float), cudaMemcpyHostToDevice));
    VX_CUDA_CHECK(cudaMemcpy(g->d_m, f->adam_m, n * sizeof(float), cudaMemcpyHostToDevice));
    VX_CUDA_CHECK(cudaMemcpy(g->d_v, f->adam_v, n * sizeof(float), cudaMemcpyHostToDevice));
    VX_CUDA_CHECK(cudaMemcpy(g->d_wmax, f->wmax, nv * sizeof(float), cudaMemcpyHostToDevice));
    VX_CUDA_CHECK(cudaMemcpy(g->d_alive, f->alive, nv, cudaMemcpyHostToDevice));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_origin, nb * 3 * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_dir, nb * 3 * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_target, nb * 3 * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_rgb, nb * 3 * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_loss, nb * sizeof(float)));
    VX_CUDA_CHECK(cudaMalloc((void **)&g->d_count, sizeof(unsigned long long)));
    g->h_loss = (float *)vx_malloc(nb * sizeof(float), "fit CUDA loss readback");
    if (!g->h_loss) return -1;
    return 0;
}

extern "C" int vx_fit_cuda_create(vx_fit_cuda **out, const vx_fit_model *f, int max_batch) {
    *out = NULL;
    if (max_batch < 1) return vx_error("fit: CUDA batch of %d rays", max_batch);
    vx_fit_cuda *g = (vx_fit_cuda *)vx_calloc(1, sizeof *g, "fit CUDA state");
    if (!g) return -1;
    g->m = *f;
    g->m.data = g->m.grad = g->m.adam_m = g->m.adam_v = g->m.wmax = NULL;
    g->m.alive = g->m.occ = NULL;
    g->m.mp.occ_b = 0; /* occupancy is rebuilt on the device by vx_fit_occupancy_cuda */
    g->max_batch = max_batch;
    if (vx__create(g, f, max_batch)) { vx_fit_cuda_destroy(g); return -1; }
    *out = g;
    return 0;
}

static int vx__download(const vx_fit_cuda *g, vx_fit_model *f, int all) {
    if (f->nc != g->m.nc) return vx_error("fit: host model has %d channels, the device %d", f->nc, g->m.nc);
    if (f->nx != g->m.nx || f->ny != g->m.ny || f->nz != g->m.nz) {
        int res[3] = {g->m.nx, g->m.ny, g->m.nz};
        if (vx_fit_model_resize_cpu(f, res)) return -1;
    }
    size_t nv = vx__nv(f), n = nv * f->nc;
    VX_CUDA_CHECK(cudaMemcpy(f->data, g->d_data, n * sizeof(float), cudaMemcpyDeviceToHost));
    VX_CUDA_CHECK(cudaMemcpy(f->alive, g->d_alive, nv, cudaMemcpyDeviceToHost));
    f->t = g->m.t;
    if (!all) return 0;
    VX_CUDA_CHECK(cudaMemcpy(f->grad, g->d_grad, n * sizeof(float), cudaMemcpyDeviceToHost));
    VX_CUDA_CHECK(cudaMemcpy(f->adam_m, g->d_m, n * sizeof(float), cudaMemcpyDeviceToHost));
    VX_CUDA_CHECK(cudaMemcpy(f->adam_v, g->d_v, n * sizeof(float), cudaMemcpyDeviceToHost));
    VX_CUDA_CHECK(cudaMemcpy(f->wmax, g->d_wmax, nv * sizeof(float), cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" int vx_fit_cuda_download(const vx_fit_cuda *g, vx_fit_model *f) { return vx__download(g, f, 1); }
extern "C" int vx_fit_cuda_download_params(const vx_fit_cuda *g, vx_fit_model *f) { return vx__download(g, f, 0); }

extern "C" int vx_fit_zero_grad_cuda(vx_fit_cuda *g) {
    VX_CUDA_CHECK(cudaMemset(g->d_grad, 0, vx__nv(&g->m) * g->m.nc * sizeof(float)));
    return 0;
}

extern "C" int vx_fit_update_params_cuda(vx_fit_cuda *g, float stop) {
    int occ_b = g->m.mp.occ_b, occ_n[3] = {g->m.mp.occ_n[0], g->m.mp.occ_n[1], g->m.mp.occ_n[2]};
    if (vx_fit_update_params(&g->m, stop)) return -1;
    if (g->d_occ) { /* keep the occupancy grid that is still valid for this lattice */
        g->m.mp.occ_b = occ_b;
        memcpy(g->m.mp.occ_n, occ_n, sizeof occ_n);
    }
    return 0;
}

extern "C" int vx_fit_rays_backward_cuda(vx_fit_cuda *g, const vx_fit_batch *b, float *out_rgb, double *loss) {
    if (b->n > g->max_batch) return vx_error("fit: batch of %d rays exceeds the CUDA buffers (%d)", b->n, g->max_batch);
    size_t bytes = (size_t)b->n * 3 * sizeof(float);
    VX_CUDA_CHECK(cudaMemcpy(g->d_origin, b->origin, bytes, cudaMemcpyHostToDevice));
    VX_CUDA_CHECK(cudaMemcpy(g->d_dir, b->dir, bytes, cudaMemcpyHostToDevice));
    VX_CUDA_CHECK(cudaMemcpy(g->d_target, b->target, bytes, cudaMemcpyHostToDevice));
    int bs = 128;
    vx_fit_rays_backward_kernel<<<vx_ceil_div((size_t)b->n, bs), bs>>>(
        g->m.mp, g->d_data, g->m.mp.occ_b ? g->d_occ : NULL, g->d_origin, g->d_dir, g->d_target, b->n,
        1.0f / (3.0f * (float)b->n), g->d_grad, g->d_wmax, g->d_rgb, g->d_loss);
    VX_LAUNCH_CHECK("vx_fit_rays_backward_kernel");
    VX_CUDA_CHECK(cudaMemcpy(g->h_loss, g->d_loss, (size_t)b->n * sizeof(float), cudaMemcpyDeviceToHost));
    if (out_rgb) VX_CUDA_CHECK(cudaMemcpy(out_rgb, g->d_rgb, bytes, cudaMemcpyDeviceToHost));
    double s = 0.0;
    for (int r = 0; r < b->n; r++) s += g->h_loss[r];
    *loss = s;
    return 0;
}

extern "C" int vx_fit_tv_backward_cuda(vx_fit_cuda *g, float w_sigma, float w_sh, float fraction, uint64_t seed,
                                       float eps, double *term) {
    size_t nv = vx__nv(&g->m);
    float *d_term = NULL, *h_term = NULL;
    VX_CUDA_CHECK(cudaMalloc((void **)&d_term, nv * sizeof(float)));
    int rc = -1;
    cudaError_t e = cudaMemset(d_term, 0, nv * sizeof(float));
    if (e == cudaSuccess) {
        int bs = 256;
        vx_fit_tv_kernel<<<vx_ceil_div(nv, bs), bs>>>(g->d_data, g->d_grad, g->d_alive, g->m.nx, g->m.ny, g->m.nz,
                                                      g->m.nc, w_sigma, w_sh, fraction, seed, eps, d_term);
        e = cudaGetLastError();
    }
    h_term = (float *)malloc(nv * sizeof(float));
    if (e == cudaSuccess && h_term) e = cudaMemcpy(h_term, d_term, nv * sizeof(float), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) vx_error("%s:%d: TV kernel: %s", __FILE__, __LINE__, cudaGetErrorString(e));
    else if (!h_term) vx_error("out of memory reading back the TV term");
    else {
        double s = 0.0;
        for (size_t i = 0; i < nv; i++) s += h_term[i];
        *term = s;
        rc = 0;
    }
    free(h_term);
    cudaFree(d_term);
    return rc;
}

extern "C" int vx_fit_adam_step_cuda(vx_fit_cuda *g, const vx_fit_hparams *h, float lr_sigma, float lr_sh) {
    g->m.t++;
    float bc1 = (float)(1.0 - pow(h->beta1, (double)g->m.t)), bc2 = (float)(1.0 - pow(h->beta2, (double)g->m.t));
    size_t n = vx__nv(&g->m) * g->m.nc;
    int bs = 256;
    vx_fit_adam_kernel<<<vx_ceil_div(n, bs), bs>>>(g->d_data, g->d_m, g->d_v, g->d_grad, g->d_alive, n, g->m.nc,
                                                   lr_sigma, lr_sh, h->beta1, h->beta2, h->eps, bc1, bc2);
    VX_LAUNCH_CHECK("vx_fit_adam_kernel");
    return 0;
}

extern "C" int vx_fit_occupancy_cuda(vx_fit_cuda *g, int cell) {
    vx_march_params *mp = &g->m.mp;
    int n[3] = {g->m.nx, g->m.ny, g->m.nz};
    if (cell < 1) return vx_error("fit: occupancy cell %d must be >= 1", cell);
    for (int a = 0; a < 3; a++) mp->occ_n[a] = n[a] > 1 ? (n[a] - 1) / cell + 1 : 1;
    size_t count = (size_t)mp->occ_n[0] * mp->occ_n[1] * mp->occ_n[2];
    if (count != g->occ_count) {
        cudaFree(g->d_occ);
        g->d_occ = NULL;
        VX_CUDA_CHECK(cudaMalloc((void **)&g->d_occ, count));
        g->occ_count = count;
    }
    mp->occ_b = cell;
    if (vx_occupancy_build_cuda(g->d_data, 0, mp, g->d_occ)) return -1;
    return 0;
}

extern "C" int vx_fit_prune_cuda(vx_fit_cuda *g, float thresh, size_t *pruned) {
    size_t nv = vx__nv(&g->m);
    unsigned long long count = 0;
    VX_CUDA_CHECK(cudaMemset(g->d_count, 0, sizeof count));
    int bs = 256;
    vx_fit_prune_kernel<<<vx_ceil_div(nv, bs), bs>>>(g->d_data, g->d_m, g->d_v, g->d_alive, g->d_wmax, nv, g->m.nc,
                                                     thresh, g->d_count);
    VX_LAUNCH_CHECK("vx_fit_prune_kernel");
    VX_CUDA_CHECK(cudaMemcpy(&count, g->d_count, sizeof count, cudaMemcpyDeviceToHost));
    *pruned = (size_t)count;
    return 0;
}

extern "C" int vx_fit_upsample_cuda(vx_fit_cuda *g, const int res[3]) {
    vx_fit_cuda old = *g;
    g->m.nx = res[0]; g->m.ny = res[1]; g->m.nz = res[2];
    g->d_data = g->d_grad = g->d_m = g->d_v = g->d_wmax = NULL;
    g->d_alive = g->d_occ = NULL;
    g->occ_count = 0;
    size_t nv;
    if (res[0] < 1 || res[1] < 1 || res[2] < 1 || vx_mul_size4((size_t)res[0], (size_t)res[1], (size_t)res[2], (size_t)g->m.nc, &nv) ||
        nv > VX_MAX_GRID_BYTES / sizeof(float)) {
        *g = old;
        return vx_error("fit: cannot upsample to %dx%dx%d", res[0], res[1], res[2]);
    }
    if (vx__alloc_grid(g)) { vx__free_grid(g); *g = old; return -1; }
    int bs = 256;
    vx_fit_upsample_kernel<<<vx_ceil_div(vx__nv(&g->m), bs), bs>>>(old.d_data, old.d_alive, old.m.nx, old.m.ny,
                                                                   old.m.nz, g->d_data, g->d_alive, g->m.nx, g->m.ny,
                                                                   g->m.nz, g->m.nc);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    vx__free_grid(&old);
    if (e != cudaSuccess) return vx_error("%s:%d: vx_fit_upsample_kernel: %s", __FILE__, __LINE__, cudaGetErrorString(e));
    g->m.mp.occ_b = 0;
    return vx_fit_update_params(&g->m, g->m.mp.stop);
}
