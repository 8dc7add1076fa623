/* fit.cu - the CUDA twin of fit_cpu.c for `voxray fit`: the device model's life, the ray
 * backward scattering into the grid gradient with atomics; Adam, TV and occupancy over the
 * list of alive voxels (pruning and resampling: fit_grid.cu; the coarse levels:
 * fit_levels.cu).
 * tests/gpu/test_fit_gpu.c checks every step against the vx_fit_*_cpu reference.
 *
 * Ray kernel version 1 runs vx_march + vx_fit_march_backward (fit_march.h) per thread:
 * generic, but its VX_MAX_CHANNELS arrays live in local memory (128 registers + 576 B of
 * stack on sm_90). Version 2 (fit_rays.cuh) is specialised on the SH degree, draws its
 * rays on the device and scatters with float4 atomics; the mlp decoder's models take
 * fit_mlp.cuh's kernels in its place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "fit_coarse.h"
#include "fit_device.cuh"
#include "fit_rays.cuh"
#include "fit_mlp.cuh"
#include "fit_mlp_batch.cuh"
#include "mlp.h"

/* ---- kernels -------------------------------------------------------------------------------- */

__global__ void vx_fit_rays_backward_kernel(vx_march_params mp, vx_fit_index L, const float *__restrict__ data,
                                            const unsigned char *__restrict__ occ, const float *__restrict__ origin,
                                            const float *__restrict__ dir, const float *__restrict__ target, int n,
                                            float scale, vx_fit_reg reg, float *grad, float *wmax, float *rgb_out,
                                            float *loss_out) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    vx_vec3 o = vx_v3(origin[3 * r], origin[3 * r + 1], origin[3 * r + 2]);
    vx_vec3 d = vx_v3(dir[3 * r], dir[3 * r + 1], dir[3 * r + 2]);
    int on = vx_fit_reg_on(&reg);
    vx_fit_reg_sums sums;
    vx_ray_result fwd = on ? vx_fit_march_reg(&mp, &L, data, occ, o, d, &sums) : vx_fit_march(&mp, &L, data, occ, o, d);
    float g[3];
    loss_out[r] = vx_fit_mse_backward(fwd.rgb, target + 3 * r, scale, g);
    vx_fit_march_backward(&mp, &L, data, occ, o, d, &fwd, g, grad, wmax, NULL, on ? &reg : NULL, &sums);
    for (int c = 0; c < 3; c++) rgb_out[3 * r + c] = fwd.rgb[c];
}

/* ---- kernels over the alive voxels ----------------------------------------------------------- */

__global__ void vx_fit_tv_kernel(const float *__restrict__ data, float *grad, const unsigned *__restrict__ active,
                                 size_t n_active, vx_fit_index L, int nc, float w_sigma, float w_sh,
                                 float fraction, unsigned long long seed, float eps, double *term) {
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float t = 0.0f;
    if (k < n_active) {
        size_t iv = active[k];
        int x, y, z;
        if (vx_fit_tv_selected(seed, iv, fraction) && !vx_fit_xyz(&L, iv, &x, &y, &z)) {
            for (int c = 0; c < nc; c++) {
                float w = c == 0 ? w_sigma : w_sh;
                if (w == 0.0f) continue;
                t += w * vx_fit_tv_voxel(data, grad, &L, nc, x, y, z, c, w, eps);
            }
        }
    }
    if (!term) return;
    for (int off = 16; off > 0; off >>= 1) t += __shfl_down_sync(0xffffffffu, t, off);
    if ((threadIdx.x & 31) == 0 && t != 0.0f) atomicAdd(term, (double)t);
}

/* One thread per (alive voxel, group of `gw` channels): gw = 4 when the channel count
 * allows 16-byte groups, so a warp reads and writes whole consecutive 512-byte runs of a
 * voxel's parameters, moments and gradient (a thread per voxel striding through its 28
 * channels wrote half sectors and ran at 480 GB/s on the H200). The gradient read is
 * cleared (Adam consumes it). n = alive voxels x groups of this launch (< 2^32). */
__global__ void vx_fit_adam_kernel(float *data, float *mom, float *var, float *grad, const unsigned *__restrict__ active,
                                   unsigned n, int ng, int gw, float lr_sigma, float lr_sh, float b1, float b2, float eps,
                                   float bc1, float bc2, int lazy) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    unsigned k = t / (unsigned)ng, q = t - k * (unsigned)ng;
    size_t e = (size_t)active[k] * (size_t)(ng * gw) + (size_t)q * gw;
    /* lazy: a zero gradient leaves value and moments as they are, so an untouched group
     * (most of a fine grid in a step) costs one read of its gradient and nothing else */
    if (gw == 4) {
        float4 gr = *(float4 *)(grad + e);
        if (lazy && gr.x == 0.0f && gr.y == 0.0f && gr.z == 0.0f && gr.w == 0.0f) return;
        float4 x = *(float4 *)(data + e), m = *(float4 *)(mom + e), v = *(float4 *)(var + e);
        *(float4 *)(grad + e) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        vx_fit_adam_update(&x.x, &m.x, &v.x, gr.x, q == 0 ? lr_sigma : lr_sh, b1, b2, eps, bc1, bc2, lazy);
        vx_fit_adam_update(&x.y, &m.y, &v.y, gr.y, lr_sh, b1, b2, eps, bc1, bc2, lazy);
        vx_fit_adam_update(&x.z, &m.z, &v.z, gr.z, lr_sh, b1, b2, eps, bc1, bc2, lazy);
        vx_fit_adam_update(&x.w, &m.w, &v.w, gr.w, lr_sh, b1, b2, eps, bc1, bc2, lazy);
        *(float4 *)(data + e) = x; *(float4 *)(mom + e) = m; *(float4 *)(var + e) = v;
    } else {
        float gr = grad[e];
        if (lazy && gr == 0.0f) return;
        grad[e] = 0.0f;
        vx_fit_adam_update(data + e, mom + e, var + e, gr, q == 0 ? lr_sigma : lr_sh, b1, b2, eps, bc1, bc2, lazy);
    }
}

/* Occupancy from the alive voxels: a voxel with positive raw density marks every cell
 * whose footprint holds it (vx_fit_occ_cells); dead voxels are zero and mark nothing. */
__global__ void vx_fit_occ_kernel(const float *__restrict__ data, const unsigned *__restrict__ active, size_t n_active,
                                  vx_fit_index L, int nc, int b, int ox, int oy, int oz, unsigned char *occ) {
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n_active) return;
    size_t iv = active[k];
    int x, y, z;
    if (!(data[iv * nc] > 0.0f) || vx_fit_xyz(&L, iv, &x, &y, &z)) return;
    int x0, x1, y0, y1, z0, z1;
    vx_fit_occ_cells(x, b, ox, &x0, &x1);
    vx_fit_occ_cells(y, b, oy, &y0, &y1);
    vx_fit_occ_cells(z, b, oz, &z0, &z1);
    for (int cz = z0; cz <= z1; cz++)
        for (int cy = y0; cy <= y1; cy++)
            for (int cx = x0; cx <= x1; cx++) occ[((size_t)cz * oy + cy) * ox + cx] = 1;
}

/* ---- host side ------------------------------------------------------------------------------- */

void vx_fitd_free_grid(vx_fit_device *g) {
    vx_cuda_free(g->d_data); vx_cuda_free(g->d_grad); vx_cuda_free(g->d_m); vx_cuda_free(g->d_v);
    vx_cuda_free(g->d_wmax); vx_cuda_free(g->d_alive); vx_cuda_free(g->d_occ); vx_cuda_free(g->d_active);
    vx_cuda_free(g->d_table); vx_cuda_free(g->d_bxyz);
    g->d_data = g->d_grad = g->d_m = g->d_v = g->d_wmax = NULL;
    g->d_alive = g->d_occ = NULL;
    g->d_table = g->d_bxyz = NULL;
    g->d_active = NULL;
    g->occ_count = g->n_active = 0;
}

/* Device arrays for g->m's storage (g->m.nslots > 0: bricked, with table and bxyz, whose
 * contents the caller uploads). */
int vx_fitd_alloc_grid(vx_fit_device *g) {
    size_t nv = vx_fitd_nv(&g->m), n = nv * g->m.nc;
    if (nv > 0xffffffffull) return vx_error("fit: %zu voxels exceed the 32-bit voxel list", nv);
    if (g->m.nslots && (vx_cuda_alloc((void **)&g->d_table, vx_fitd_entries(&g->m) * sizeof(int32_t), "fit brick table") ||
                        vx_cuda_alloc((void **)&g->d_bxyz, 3 * g->m.nslots * sizeof(int32_t), "fit brick coordinates")))
        return -1;
    /* + VX_FIT_PAD zeros: the degree 1 and 3 ray kernels read and scatter whole aligned
     * windows that end up to 3 floats past the last voxel (fit_rays.cuh) */
    if (vx_cuda_alloc((void **)&g->d_data, (n + VX_FIT_PAD) * sizeof(float), "fit parameters") ||
        vx_cuda_alloc((void **)&g->d_grad, (n + VX_FIT_PAD) * sizeof(float), "fit gradient") ||
        vx_cuda_alloc((void **)&g->d_m, n * sizeof(float), "fit Adam moments") ||
        vx_cuda_alloc((void **)&g->d_v, n * sizeof(float), "fit Adam moments") ||
        vx_cuda_alloc((void **)&g->d_wmax, nv * sizeof(float), "fit max weights") ||
        vx_cuda_alloc((void **)&g->d_alive, nv, "fit alive mask") ||
        vx_cuda_alloc((void **)&g->d_active, nv * sizeof(unsigned), "fit alive-voxel list"))
        return -1;
    return vx_cuda_zero(g->d_grad, (n + VX_FIT_PAD) * sizeof(float)) ||
                   vx_cuda_zero(g->d_data + n, VX_FIT_PAD * sizeof(float)) || vx_cuda_zero(g->d_m, n * sizeof(float)) ||
                   vx_cuda_zero(g->d_v, n * sizeof(float)) || vx_cuda_zero(g->d_wmax, nv * sizeof(float))
               ? -1
               : 0;
}

/* Rebuild the ascending list of alive voxels (CUB's stream compaction). */
int vx_fitd_compact(vx_fit_device *g) {
    size_t nv = vx_fitd_nv(&g->m), bytes = 0;
    if (nv > 0x7fffffffull) return vx_error("fit: %zu voxels exceed the compaction's int range", nv);
    thrust::counting_iterator<unsigned> first(0u);
    int *d_num = g->d_num;
    VX_CUDA_CHECK(cub::DeviceSelect::Flagged(NULL, bytes, first, g->d_alive, g->d_active, d_num, (int)nv));
    void *tmp = NULL;
    if (vx_cuda_alloc(&tmp, bytes, "fit compaction scratch")) return -1;
    cudaError_t e = cub::DeviceSelect::Flagged(tmp, bytes, first, g->d_alive, g->d_active, d_num, (int)nv);
    int num = 0, rc = e == cudaSuccess ? vx_cuda_download(&num, d_num, sizeof num)
                                       : vx_error("%s:%d: alive-voxel compaction: %s", __FILE__, __LINE__,
                                                  cudaGetErrorString(e));
    vx_cuda_free(tmp);
    if (rc) return -1;
    g->n_active = (size_t)num;
    return 0;
}

extern "C" void vx_fit_model_free_cuda(vx_fit_device *g) {
    if (!g) return;
    vx_fitd_free_grid(g);
    vx_cuda_free(g->d_origin); vx_cuda_free(g->d_dir); vx_cuda_free(g->d_target); vx_cuda_free(g->d_rgb);
    vx_cuda_free(g->d_loss); vx_cuda_free(g->d_count); vx_cuda_free(g->d_sum); vx_cuda_free(g->d_num);
    vx_cuda_free(g->d_images); vx_cuda_free(g->d_cams); vx_cuda_free(g->d_render);
    vx_cuda_free(g->d_alpha); vx_cuda_free(g->d_bg);
    vx_cuda_free(g->d_cdf); vx_cuda_free(g->d_eacc);
    vx_cuda_free(g->d_mlp); vx_cuda_free(g->d_mlp_grad); vx_cuda_free(g->d_mlp_m); vx_cuda_free(g->d_mlp_v);
    vx_cuda_free(g->d_rec); vx_cuda_free(g->d_rec_count);
    for (int l = 0; l < VX_FIT_LEVELS; l++)
        for (int k = 0; k < 4; k++) vx_cuda_free(g->d_lv[l][k]);
    vx_cuda_free(g->d_defer[0]); vx_cuda_free(g->d_defer[1]); vx_cuda_free(g->d_ndefer);
    vx_cuda_free(g->mb.x); vx_cuda_free(g->mb.pt); vx_cuda_free(g->mb.rgb); vx_cuda_free(g->mb.dout);
    vx_cuda_free(g->mb.dt); vx_cuda_free(g->mb.ray_start); vx_cuda_free(g->mb.ray_n);
    vx_cuda_free(g->mb_st.x); vx_cuda_free(g->mb_st.pt); vx_cuda_free(g->mb_st.dt);
    free(g->h_loss);
    free(g);
}

static int vx__create(vx_fit_device *g, const vx_fit_model *f, int max_batch) {
    size_t nv = vx_fitd_nv(f), n = nv * f->nc, nb = (size_t)max_batch;
    if (vx_cuda_alloc((void **)&g->d_count, sizeof(unsigned long long), "fit counter") ||
        vx_cuda_alloc((void **)&g->d_sum, 2 * sizeof(double), "fit sums") ||
        vx_cuda_alloc((void **)&g->d_num, sizeof(int), "fit compaction count") || vx_fitd_alloc_grid(g) ||
        vx_cuda_upload(g->d_data, f->data, n * sizeof(float)) ||
        vx_cuda_upload(g->d_m, f->adam_m, n * sizeof(float)) ||
        vx_cuda_upload(g->d_v, f->adam_v, n * sizeof(float)) ||
        vx_cuda_upload(g->d_grad, f->grad, n * sizeof(float)) ||
        vx_cuda_upload(g->d_wmax, f->wmax, nv * sizeof(float)) || vx_cuda_upload(g->d_alive, f->alive, nv) ||
        (f->nslots && (vx_cuda_upload(g->d_table, f->table, vx_fitd_entries(f) * sizeof(int32_t)) ||
                       vx_cuda_upload(g->d_bxyz, f->bxyz, 3 * f->nslots * sizeof(int32_t)))) ||
        vx_cuda_alloc((void **)&g->d_origin, nb * 3 * sizeof(float), "fit ray origins") ||
        vx_cuda_alloc((void **)&g->d_dir, nb * 3 * sizeof(float), "fit ray directions") ||
        vx_cuda_alloc((void **)&g->d_target, nb * 3 * sizeof(float), "fit ray targets") ||
        vx_cuda_alloc((void **)&g->d_bg, nb * 3 * sizeof(float), "fit ray backgrounds") ||
        vx_cuda_alloc((void **)&g->d_rgb, nb * 3 * sizeof(float), "fit ray colours") ||
        vx_cuda_alloc((void **)&g->d_loss, nb * sizeof(float), "fit ray losses"))
        return -1;
    g->h_loss = (float *)vx_malloc(nb * sizeof(float), "fit CUDA loss readback");
    if (!g->h_loss) return -1;
    if (f->mlp_layers) {
        size_t nw = (size_t)vx_mlp_weight_count(f->mlp_layers) * sizeof(float);
        /* the per-ray kernel's records: 32 a ray of the batch (mic's fine stage composites
         * about 20 samples a ray), at most 8 GiB, allocated on its first step; the rays that
         * find the buffer full run in a later pass (vx__rays_mlp) */
        g->rec_cap = (unsigned long long)nb * 32;
        if (g->rec_cap * sizeof(vx_fit_mlp_record) > ((size_t)8 << 30)) g->rec_cap = ((size_t)8 << 30) / sizeof(vx_fit_mlp_record);
        if (vx_cuda_alloc((void **)&g->d_mlp, nw, "fit mlp weights") || vx_cuda_upload(g->d_mlp, f->mlp, nw) ||
            vx_cuda_alloc((void **)&g->d_mlp_grad, nw, "fit mlp gradient") || vx_cuda_zero(g->d_mlp_grad, nw) ||
            vx_cuda_alloc((void **)&g->d_mlp_m, nw, "fit mlp moments") || vx_cuda_upload(g->d_mlp_m, f->mlp_m, nw) ||
            vx_cuda_alloc((void **)&g->d_mlp_v, nw, "fit mlp moments") || vx_cuda_upload(g->d_mlp_v, f->mlp_v, nw) ||
            vx_cuda_alloc((void **)&g->d_rec_count, 2 * sizeof(unsigned long long), "fit mlp record count") ||
            vx_cuda_alloc((void **)&g->d_defer[0], nb * sizeof(int), "fit mlp deferred rays") ||
            vx_cuda_alloc((void **)&g->d_defer[1], nb * sizeof(int), "fit mlp deferred rays") ||
            vx_cuda_alloc((void **)&g->d_ndefer, sizeof(unsigned), "fit mlp deferred count"))
            return -1;
    }
    for (int l = 0; l < f->nlevels; l++) {
        size_t nb = vx_fit_coarse_entries(f, l) * sizeof(float);
        const vx_fit_level *c = &f->lv[l];
        float **d = g->d_lv[l];
        if (vx_cuda_alloc((void **)&d[0], nb, "fit coarse gradient") || vx_cuda_upload(d[0], c->grad, nb) ||
            vx_cuda_alloc((void **)&d[1], nb, "fit coarse moments") || vx_cuda_upload(d[1], c->m, nb) ||
            vx_cuda_alloc((void **)&d[2], nb, "fit coarse moments") || vx_cuda_upload(d[2], c->v, nb) ||
            (c->val && (vx_cuda_alloc((void **)&d[3], nb, "fit coarse level value") || vx_cuda_upload(d[3], c->val, nb))))
            return -1;
    }
    return vx_fitd_compact(g);
}

extern "C" int vx_fit_model_upload_cuda(vx_fit_device **out, const vx_fit_model *f, int max_batch) {
    *out = NULL;
    if (max_batch < 1) return vx_error("fit: CUDA batch of %d rays", max_batch);
    vx_fit_device *g = (vx_fit_device *)vx_calloc(1, sizeof *g, "fit CUDA state");
    if (!g) return -1;
    g->m = *f;
    g->m.data = g->m.grad = g->m.adam_m = g->m.adam_v = g->m.wmax = NULL;
    g->m.alive = g->m.occ = NULL;
    g->m.table = g->m.bxyz = g->m.view_table = NULL;
    g->m.mlp = g->m.mlp_grad = g->m.mlp_m = g->m.mlp_v = g->m.mlp_tgrad = NULL; /* d_mlp.. hold them */
    for (int l = 0; l < VX_FIT_LEVELS; l++) /* d_lv holds them */
        g->m.lv[l].grad = g->m.lv[l].m = g->m.lv[l].v = g->m.lv[l].val = NULL;
    memset(&g->m.view, 0, sizeof g->m.view);
    g->m.mp.occ_b = 0; /* occupancy is rebuilt on the device by vx_fit_occupancy_build_cuda */
    g->max_batch = max_batch;
    g->version = 2;
    g->coarse_version = VX_FIT_COARSE_VERSION_DEFAULT; /* docs/BENCHMARKS.md: v2 0.35 ms a step against v1's 0.94 (session 20) */
    g->mlp_kernel = 2; /* batched: 34x the per-ray kernel's rays/s (docs/BENCHMARKS.md, session 14) */
    g->mlpb_gather = 1; /* version 2 is opt-in until a device has timed both (fit_mlp_batch.cuh) */
    if (vx__create(g, f, max_batch)) { vx_fit_model_free_cuda(g); return -1; }
    *out = g;
    return 0;
}

extern "C" const vx_fit_model *vx_fit_model_meta_cuda(const vx_fit_device *g) { return &g->m; }
extern "C" size_t vx_fit_alive_count_cuda(const vx_fit_device *g) { return g->n_active; }
extern "C" void vx_fit_track_weights_cuda(vx_fit_device *g, int on) { g->m.track_wmax = on; }
extern "C" void vx_fit_set_ray_reg_cuda(vx_fit_device *g, float sparsity, float distortion, float binary) {
    g->m.reg_sparsity = sparsity;
    g->m.reg_distortion = distortion;
    g->m.reg_binary = binary;
}
extern "C" void vx_fit_set_jitter_cuda(vx_fit_device *g, int on) { g->jitter = on != 0; }
extern "C" void vx_fit_set_random_bg_cuda(vx_fit_device *g, int on) { g->random_bg = on != 0; }
extern "C" void vx_fit_set_rgbper_cuda(vx_fit_device *g, float weight) { g->m.reg_rgbper = weight; }
extern "C" void vx_fit_profile_cuda(vx_fit_device *g, int on) { g->profile = on; }
extern "C" void vx_fit_mlp_timings_cuda(vx_fit_device *g, double ms[5], double *samples) {
    for (int k = 0; k < 5; k++) { ms[k] = g->prof_mlpb[k]; g->prof_mlpb[k] = 0.0; }
    *samples = g->prof_samples;
    g->prof_samples = 0.0;
}
extern "C" void vx_fit_set_mlp_records_cuda(vx_fit_device *g, unsigned long long records) {
    if (records >= 1 && records < g->rec_cap) g->rec_cap = records;
    if (records >= 1 && (!g->mb_cap || records < g->mb_cap)) g->mb_cap = records; /* before the batched arrays exist: their size */
}
extern "C" int vx_fit_set_mlp_kernel_cuda(vx_fit_device *g, int kernel) {
    if (kernel == 0) kernel = 2; /* the default: batched */
    if (kernel != 1 && kernel != 2) return vx_error("fit: mlp kernel %d (1: per ray, 2: batched)", kernel);
    g->mlp_kernel = kernel;
    return 0;
}
extern "C" int vx_fit_set_mlpb_gather_cuda(vx_fit_device *g, int version) {
    if (version != 1 && version != 2) return vx_error("fit: mlp gather version %d (1 or 2)", version);
    g->mlpb_gather = version;
    return 0;
}
extern "C" int vx_fit_set_mlp_tc_cuda(vx_fit_device *g, int on) {
    /* the device is asked once, not at every step that sets the flag again */
    if (on && !g->mlp_tc && vx_cuda_mlp_tc_resolve(1, "fit") < 0) return -1;
    g->mlp_tc = on != 0;
    return 0;
}
extern "C" void vx_fit_timings_cuda(vx_fit_device *g, double ms[VX_FIT_PROF_N]) {
    for (int k = 0; k < VX_FIT_PROF_N; k++) { ms[k] = g->prof_ms[k]; g->prof_ms[k] = 0.0; }
}

extern "C" int vx_fit_set_coarse_version_cuda(vx_fit_device *g, int version) {
    if (version != 1 && version != 2) return vx_error("fit: coarse restriction version %d (1 or 2)", version);
    g->coarse_version = version;
    return 0;
}

extern "C" int vx_fit_set_ray_version_cuda(vx_fit_device *g, int version) {
    if (version != 1 && version != 2) return vx_error("fit: ray kernel version %d (1 or 2)", version);
    g->version = version;
    return 0;
}

static int vx__download(const vx_fit_device *g, vx_fit_model *f, int all) {
    if (f->nc != g->m.nc) return vx_error("fit: host model has %d channels, the device %d", f->nc, g->m.nc);
    memcpy(f->box_lo, g->m.box_lo, sizeof f->box_lo);
    memcpy(f->box_hi, g->m.box_hi, sizeof f->box_hi);
    if (f->nx != g->m.nx || f->ny != g->m.ny || f->nz != g->m.nz || f->nslots != g->m.nslots) {
        int res[3] = {g->m.nx, g->m.ny, g->m.nz};
        if (vx_fit_model_resize_cpu(f, res, g->m.nslots)) return -1;
    } else if (vx_fit_update_params(f, f->mp.stop)) {
        return -1;
    }
    if (f->nslots && (vx_cuda_download(f->table, g->d_table, vx_fitd_entries(f) * sizeof(int32_t)) ||
                      vx_cuda_download(f->bxyz, g->d_bxyz, 3 * f->nslots * sizeof(int32_t)) ||
                      vx_fit_view_update(f)))
        return -1;
    size_t nv = vx_fitd_nv(f), n = nv * f->nc;
    if (!all && f->grad) { /* a parameters-only copy (to write or render): drop what it never uses */
        free(f->grad); free(f->adam_m); free(f->adam_v); free(f->wmax);
        f->grad = f->adam_m = f->adam_v = f->wmax = NULL;
    }
    if (all && !f->grad) return vx_error("fit: the host model holds parameters only");
    if (vx_cuda_download(f->data, g->d_data, n * sizeof(float)) || vx_cuda_download(f->alive, g->d_alive, nv))
        return -1;
    if (f->mlp_layers != g->m.mlp_layers) return vx_error("fit: host and device models differ in their decoder");
    size_t nw = f->mlp_layers ? (size_t)vx_mlp_weight_count(f->mlp_layers) * sizeof(float) : 0;
    if (nw && (vx_cuda_download(f->mlp, g->d_mlp, nw) ||
               (all && (vx_cuda_download(f->mlp_m, g->d_mlp_m, nw) || vx_cuda_download(f->mlp_v, g->d_mlp_v, nw) ||
                        vx_cuda_download(f->mlp_grad, g->d_mlp_grad, nw)))))
        return -1;
    f->t = g->m.t;
    if (!all) return 0;
    if (f->nlevels != g->m.nlevels) return vx_error("fit: host and device coarse levels differ");
    for (int l = 0; l < f->nlevels; l++) {
        vx_fit_level *c = &f->lv[l];
        if (memcmp(c->n, g->m.lv[l].n, sizeof c->n) && vx_fit_coarse_reshape(c, &g->m.lv[l], vx_fit_coarse_nch(f)))
            return -1; /* the device cut its levels to a crop (vx_fit_coarse_rebox_cuda) */
        c->t0 = g->m.lv[l].t0;
        size_t cb = vx_fit_coarse_entries(f, l) * sizeof(float);
        if (!c->val != !g->d_lv[l][3]) return vx_error("fit: host and device coarse level values differ");
        if (vx_cuda_download(c->grad, g->d_lv[l][0], cb) || vx_cuda_download(c->m, g->d_lv[l][1], cb) ||
            vx_cuda_download(c->v, g->d_lv[l][2], cb) || (c->val && vx_cuda_download(c->val, g->d_lv[l][3], cb)))
            return -1;
    }
    return vx_cuda_download(f->grad, g->d_grad, n * sizeof(float)) ||
                   vx_cuda_download(f->adam_m, g->d_m, n * sizeof(float)) ||
                   vx_cuda_download(f->adam_v, g->d_v, n * sizeof(float)) ||
                   vx_cuda_download(f->wmax, g->d_wmax, nv * sizeof(float))
               ? -1
               : 0;
}

extern "C" int vx_fit_model_download_cuda(const vx_fit_device *g, vx_fit_model *f) { return vx__download(g, f, 1); }
extern "C" int vx_fit_params_download_cuda(const vx_fit_device *g, vx_fit_model *f) { return vx__download(g, f, 0); }

extern "C" int vx_fit_zero_grad_cuda(vx_fit_device *g) {
    return vx_cuda_zero(g->d_grad, vx_fitd_nv(&g->m) * g->m.nc * sizeof(float)) ||
                   (g->m.mlp_layers &&
                    vx_cuda_zero(g->d_mlp_grad, (size_t)vx_mlp_weight_count(g->m.mlp_layers) * sizeof(float)))
               ? -1
               : 0;
}

extern "C" int vx_fit_update_params_cuda(vx_fit_device *g, float stop) {
    int occ_b = g->m.mp.occ_b, occ_n[3] = {g->m.mp.occ_n[0], g->m.mp.occ_n[1], g->m.mp.occ_n[2]};
    if (vx_fit_update_params(&g->m, stop)) return -1;
    if (g->d_occ) { /* keep the occupancy grid that is still valid for this lattice */
        g->m.mp.occ_b = occ_b;
        memcpy(g->m.mp.occ_n, occ_n, sizeof occ_n);
    }
    return 0;
}

extern "C" int vx_fit_views_upload_cuda(vx_fit_device *g, const vx_dataset *d) {
    if (d->n < 1 || d->width < 1 || d->height < 1) return vx_error("fit: no training views to upload");
    if ((unsigned long long)d->width * d->height >= (1ull << 32)) /* vx_fit_pick_pixel's 32-bit pixel index */
        return vx_error("fit: %dx%d photos are too large to sample", d->width, d->height);
    vx_cuda_free(g->d_images); vx_cuda_free(g->d_cams); vx_cuda_free(g->d_alpha);
    g->d_images = NULL; g->d_cams = NULL; g->d_alpha = NULL; g->views = 0;
    size_t px = (size_t)d->n * d->width * d->height * 3;
    if (vx_cuda_alloc((void **)&g->d_images, px * sizeof(float), "fit training photos") ||
        vx_cuda_alloc((void **)&g->d_cams, (size_t)d->n * sizeof(vx_camera), "fit training cameras") ||
        vx_cuda_upload(g->d_images, d->rgb, px * sizeof(float)) ||
        (d->alpha && (vx_cuda_alloc((void **)&g->d_alpha, px / 3 * sizeof(float), "fit training photos' coverage") ||
                      vx_cuda_upload(g->d_alpha, d->alpha, px / 3 * sizeof(float)))) ||
        vx_cuda_upload(g->d_cams, d->cams, (size_t)d->n * sizeof(vx_camera)))
        return -1;
    g->views = d->n; g->vw = d->width; g->vh = d->height;
    return 0;
}

/* The regularisers' weights per ray of an n-ray batch (the batch mean, as the loss). */
static vx_fit_reg vx__reg(const vx_fit_device *g, int n) {
    vx_fit_reg r = {g->m.reg_sparsity / (float)n, g->m.reg_distortion / (float)n, g->m.reg_binary / (float)n};
    return r;
}

/* The device model's weights into the kernels' constant memory (Adam changed them). */
static int vx__mlp_bind(const vx_fit_device *g) {
    VX_CUDA_CHECK(cudaMemcpyToSymbolAsync(vx_c_fit_mlp, g->d_mlp, (size_t)vx_mlp_weight_count(g->m.mlp_layers) * sizeof(float),
                                          0, cudaMemcpyDeviceToDevice));
    return 0;
}

/* What both mlp ray steps share: the checks before a step, and each pass's counters
 * (reservations and the end of what was written; rays put off). */
static int vx__mlp_step_check(const vx_fit_device *g, int n) {
    if (n > g->max_batch) return vx_error("fit: the mlp step takes at most the %d rays it was made for, not %d", g->max_batch, n);
    return 0;
}
static int vx__mlp_pass_reset(vx_fit_device *g) {
    return vx_cuda_zero(g->d_rec_count, 2 * sizeof(unsigned long long)) || vx_cuda_zero(g->d_ndefer, sizeof(unsigned))
               ? -1
               : 0;
}
/* After a pass's first kernel: *written ends the samples written, *left rays were put off. */
static int vx__mlp_pass_read(const vx_fit_device *g, unsigned long long *written, unsigned *left) {
    unsigned long long cnt[2];
    if (vx_cuda_download(cnt, g->d_rec_count, sizeof cnt) || vx_cuda_download(left, g->d_ndefer, sizeof *left))
        return -1;
    *written = cnt[1];
    return 0;
}
/* The same, an error when the pass wrote nothing and put every ray off: no progress. */
static int vx__mlp_pass_counts(const vx_fit_device *g, int m, unsigned long long *written, unsigned *left) {
    if (vx__mlp_pass_read(g, written, left)) return -1;
    if (*left >= (unsigned)m && !*written) return vx_error("fit: the mlp ray step made no progress (%d rays left)", m);
    return 0;
}

/* The mlp decoder's ray step (fit_mlp.cuh): the ray kernel writes a record per composited
 * sample, then the records are reduced into dL/dweights (added to d_mlp_grad, which Adam
 * consumes). Rays that found the record buffer full run again in the next pass, after the
 * reduction emptied it; each pass finishes at least the first ray that reserved. */
static int vx__rays_mlp(vx_fit_device *g, const vx_fit_ray_src *src, int n, float *d_rgb) {
    if (vx__mlp_step_check(g, n)) return -1;
    vx_fit_reg reg = vx__reg(g, n);
    if (vx_fit_reg_on(&reg))
        return vx_error("fit: --sparsity, --distortion and --binary-alpha have no CUDA kernel in the mlp decoder's "
                        "per-ray step (the batched one has them)");
    int bs = 128, L = g->m.mlp_layers, m = n;
    const unsigned char *occ = g->m.mp.occ_b ? g->d_occ : NULL;
    float *wmax = g->m.track_wmax ? g->d_wmax : NULL;
    vx_fit_index ix = vx_fitd_index(g);
    if (!g->d_rec && vx_cuda_alloc((void **)&g->d_rec, g->rec_cap * sizeof(vx_fit_mlp_record), "fit mlp records"))
        return -1;
    if (vx_cuda_zero(g->d_sum, sizeof(double)) || vx__mlp_bind(g)) return -1;
    float scale = 1.0f / (3.0f * (float)n);
    const int *list = NULL;
    for (int pass = 0; m > 0; pass++) {
        if (pass > n) return vx_error("fit: the mlp ray step made no progress (%d rays left)", m);
        int *defer = g->d_defer[pass & 1];
        if (vx__mlp_pass_reset(g)) return -1;
        unsigned blocks = vx_ceil_div((size_t)m, bs);
        if (L == 1)
            vx_fit_rays_mlp_kernel<1><<<blocks, bs>>>(g->m.mp, ix, g->d_data, occ, *src, list, m, scale, g->d_grad, wmax,
                                                      d_rgb, g->d_sum, g->d_rec, g->rec_cap, g->d_rec_count, defer,
                                                      g->d_ndefer);
        else
            vx_fit_rays_mlp_kernel<2><<<blocks, bs>>>(g->m.mp, ix, g->d_data, occ, *src, list, m, scale, g->d_grad, wmax,
                                                      d_rgb, g->d_sum, g->d_rec, g->rec_cap, g->d_rec_count, defer,
                                                      g->d_ndefer);
        VX_LAUNCH_CHECK("vx_fit_rays_mlp_kernel");
        unsigned long long nrec = 0;
        unsigned left = 0;
        if (vx__mlp_pass_counts(g, m, &nrec, &left)) return -1;
        if (nrec) {
            const unsigned per_block = 512;
            unsigned rb = vx_ceil_div((size_t)nrec, per_block);
            if (L == 1) vx_fit_mlp_wgrad_kernel<1><<<rb, 256>>>(g->d_rec, nrec, per_block, g->d_mlp_grad);
            else vx_fit_mlp_wgrad_kernel<2><<<rb, 256>>>(g->d_rec, nrec, per_block, g->d_mlp_grad);
            VX_LAUNCH_CHECK("vx_fit_mlp_wgrad_kernel");
        }
        list = defer;
        m = (int)left;
    }
    return 0;
}

/* The batched step's arrays (fit_mlp_batch.cuh), on its first use: 128 samples a ray of the
 * batch (or what a test asked for), at most 4 GiB (180 bytes a sample, so 1.5 GB for 65 536
 * rays: a foggy early stage, hundreds of samples a ray, then needs few passes, each of which
 * marches every ray left again); and the network kernels' shared memory
 * (73 KB: past the 48 KB a kernel gets unless it asks) and persistent grid sizes. */
static int vx__mlpb_alloc(vx_fit_device *g) {
    if (g->mb.x) return 0;
    size_t nb = (size_t)g->max_batch, per = 32 * sizeof(float) + 3 * sizeof(float4) + sizeof(float);
    unsigned long long cap = g->mb_cap ? g->mb_cap : (unsigned long long)nb * 128;
    if (cap * per > ((size_t)4 << 30)) cap = ((size_t)4 << 30) / per;
    g->mb_cap = cap;
    if (vx_cuda_alloc((void **)&g->mb.x, cap * 32 * sizeof(float), "fit mlp sample inputs") ||
        vx_cuda_alloc((void **)&g->mb.pt, cap * sizeof(float4), "fit mlp sample points") ||
        vx_cuda_alloc((void **)&g->mb.rgb, cap * sizeof(float4), "fit mlp sample colours") ||
        vx_cuda_alloc((void **)&g->mb.dout, cap * sizeof(float4), "fit mlp sample gradients") ||
        vx_cuda_alloc((void **)&g->mb.dt, cap * sizeof(float), "fit mlp sample lengths") ||
        vx_cuda_alloc((void **)&g->mb.ray_start, nb * sizeof(unsigned long long), "fit mlp ray starts") ||
        vx_cuda_alloc((void **)&g->mb.ray_n, nb * sizeof(int), "fit mlp ray counts"))
        return -1;
    int dev = 0, sms = 0, smem = (int)VX_MLPB_SMEM;
    VX_CUDA_CHECK(cudaGetDevice(&dev));
    VX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    for (int tc = 0; tc < 2; tc++)
        for (int layers = 1; layers <= 2; layers++) {
            const void *fn[2] = {(const void *)vx_fit_mlpb_forward_pick(layers, tc), (const void *)vx_fit_mlpb_backward_pick(layers, tc)};
            for (int a = 0; a < 2; a++) {
                int k = 0;
                VX_CUDA_CHECK(cudaFuncSetAttribute(fn[a], cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
                VX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&k, fn[a], VX_MLPB_THREADS, VX_MLPB_SMEM));
                if (k < 1) return vx_error("fit: the mlp network kernels do not fit an SM (%zu B of shared memory)", VX_MLPB_SMEM);
                g->mb_blocks[tc][a][layers - 1] = k * sms;
            }
        }
    return 0;
}

/* Gather version 2's staging rows (x, pt, dt), as many as the batched arrays hold, on its
 * first use: 148 bytes a sample, 1.2 GB for 65 536 rays of 128 samples. */
static int vx__mlpb_staging(vx_fit_device *g) {
    if (g->mb_st.x) return 0;
    size_t cap = (size_t)g->mb_cap;
    return vx_cuda_alloc((void **)&g->mb_st.x, cap * 32 * sizeof(float), "fit mlp staging inputs") ||
                   vx_cuda_alloc((void **)&g->mb_st.pt, cap * sizeof(float4), "fit mlp staging points") ||
                   vx_cuda_alloc((void **)&g->mb_st.dt, cap * sizeof(float), "fit mlp staging lengths")
               ? -1
               : 0;
}

/* The batched mlp step (fit_mlp_batch.cuh): gather the composited samples of as many rays
 * as the arrays hold, run the network forward over them, composite, run it backward and
 * scatter; rays that did not fit run in the next pass. */
static int vx__rays_mlp_batched(vx_fit_device *g, const vx_fit_ray_src *src, int n, float *d_rgb) {
    if (vx__mlp_step_check(g, n)) return -1;
    int L = g->m.mlp_layers, m = n;
    const unsigned char *occ = g->m.mp.occ_b ? g->d_occ : NULL;
    float *wmax = g->m.track_wmax ? g->d_wmax : NULL;
    vx_fit_index ix = vx_fitd_index(g);
    if (vx__mlpb_alloc(g) || vx_cuda_zero(g->d_sum, sizeof(double))) return -1;
    float scale = 1.0f / (3.0f * (float)n);
    const int *list = NULL;
    double t = 0.0; /* profiling: each kernel's time (synchronised: only when asked for) */
#define VX__MB_T(k)                                                                                                \
    do {                                                                                                           \
        if (g->profile) {                                                                                          \
            if (vx_cuda_sync()) return -1;                                                                         \
            double now = vx_now();                                                                                 \
            g->prof_mlpb[k] += 1e3 * (now - t);                                                                    \
            t = now;                                                                                               \
        }                                                                                                          \
    } while (0)
    if (g->profile) {
        if (vx_cuda_sync()) return -1;
        t = vx_now();
    }
    for (int pass = 0; m > 0; pass++) {
        if (pass > n) return vx_error("fit: the mlp ray step made no progress (%d rays left)", m);
        int *defer = g->d_defer[pass & 1];
        if (vx__mlp_pass_reset(g)) return -1;
        unsigned rb = vx_ceil_div((size_t)m, 128);
        unsigned long long S = 0, K = g->mb_cap / (unsigned long long)m; /* version 2's slot a ray */
        unsigned left = 0;
        int one = g->mlpb_gather == 2 && K >= VX_MLPB_SLOT_MIN; /* version 2 this pass */
        if (one) {
            if (vx__mlpb_staging(g)) return -1;
            vx_fit_mlpb_gather1_pick(&g->m.mp)<<<rb, 128>>>(g->m.mp, ix, g->d_data, occ, *src, list, m, g->mb_st, K,
                                                            g->mb, g->mb_cap, g->d_rec_count, defer, g->d_ndefer);
            VX_LAUNCH_CHECK("vx_fit_mlpb_gather1_kernel");
            if (vx__mlp_pass_read(g, &S, &left)) return -1;
            /* every ray past its slot: this pass counts first instead (version 1's first
             * reservation starts at row 0, so it writes a ray whenever one fits the arrays) */
            if (!S && left >= (unsigned)m && vx__mlp_pass_reset(g)) return -1;
            one = S || left < (unsigned)m;
        }
        if (!one) {
            vx_fit_mlpb_gather_pick(&g->m.mp)<<<rb, 128>>>(g->m.mp, ix, g->d_data, occ, *src, list, m, g->mb,
                                                           g->mb_cap, g->d_rec_count, defer, g->d_ndefer);
            VX_LAUNCH_CHECK("vx_fit_mlpb_gather_kernel");
            if (vx__mlp_pass_counts(g, m, &S, &left)) return -1;
        }
        unsigned long long tiles = (S + VX_MLPB_TILE - 1) / VX_MLPB_TILE;
        VX__MB_T(0);
        g->prof_samples += (double)S;
        if (S) {
            unsigned long long cap = (unsigned long long)g->mb_blocks[g->mlp_tc][0][L - 1];
            vx_fit_mlpb_forward_pick(L, g->mlp_tc)<<<(unsigned)(tiles < cap ? tiles : cap), VX_MLPB_THREADS, VX_MLPB_SMEM>>>(
                g->d_mlp, g->mb, S);
            VX_LAUNCH_CHECK("vx_fit_mlpb_forward_kernel");
        }
        VX__MB_T(1);
        float pw = g->m.reg_rgbper / (float)n;
        vx_fit_reg reg = vx__reg(g, n);
        vx_fit_mlpb_composite_pick(pw, &reg)<<<rb, 128>>>(g->m.mp, *src, list, m, scale, pw, reg, g->mb, d_rgb, g->d_sum);
        VX_LAUNCH_CHECK("vx_fit_mlpb_composite_kernel");
        VX__MB_T(2);
        if (S) {
            unsigned long long cap = (unsigned long long)g->mb_blocks[g->mlp_tc][1][L - 1];
            vx_fit_mlpb_backward_pick(L, g->mlp_tc)<<<(unsigned)(tiles < cap ? tiles : cap), VX_MLPB_THREADS, VX_MLPB_SMEM>>>(
                g->d_mlp, g->mb, S, g->d_mlp_grad);
            VX_LAUNCH_CHECK("vx_fit_mlpb_backward_kernel");
            VX__MB_T(3);
            vx_fit_mlpb_scatter_kernel<<<vx_ceil_div((size_t)S, 256), 256>>>(ix, g->mb, S, g->d_grad, wmax);
            VX_LAUNCH_CHECK("vx_fit_mlpb_scatter_kernel");
            VX__MB_T(4);
        }
        list = defer;
        m = (int)left;
    }
#undef VX__MB_T
    return 0;
}

/* Launch version 2 for this model's SH degree; the instantiation with the density
 * regularisers only when one is on, the one with the per-point colour loss alone when only
 * it is on (the CUDA default), so neither pays for terms it does not compute, and with
 * none the kernel is the one measured before they existed. */
static int vx__rays_v2(vx_fit_device *g, const vx_fit_ray_src *src, int n, float *d_rgb) {
    if (g->m.reg_rgbper > 0.0f && g->m.mlp_layers && g->mlp_kernel != 2)
        return vx_error("fit: the per-point colour loss (--rgbper) has no CUDA kernel in the mlp decoder's per-ray "
                        "step (the batched one has it)");
    if (g->m.mlp_layers && g->mlp_kernel != 2 && g->mlp_tc)
        return vx_error("fit: the tensor-core network (--mlp-tensor-cores) runs in the mlp decoder's batched step only");
    if (g->m.mlp_layers && g->mlp_kernel != 2 && vx_fit_src_own_bg(src))
        return vx_error("fit: the random background (--random-bg) has no CUDA kernel in the mlp decoder's per-ray "
                        "step (the batched one has it)");
    if (g->m.mlp_layers && g->mlp_kernel != 2 && vx_decoder_mlp_reflect(&g->m.mp.dec))
        return vx_error("fit: the reflected direction (--mlp-reflect) has no CUDA kernel in the mlp decoder's per-ray "
                        "step (the batched one has it)");
    if (g->m.mlp_layers)
        return g->mlp_kernel == 2 ? vx__rays_mlp_batched(g, src, n, d_rgb) : vx__rays_mlp(g, src, n, d_rgb);
    int bs = 128;
    unsigned blocks = vx_ceil_div((size_t)n, bs);
    float scale = 1.0f / (3.0f * (float)n);
    const unsigned char *occ = g->m.mp.occ_b ? g->d_occ : NULL;
    float *wmax = g->m.track_wmax ? g->d_wmax : NULL;
    vx_fit_index L = vx_fitd_index(g);
    vx_fit_reg reg = vx__reg(g, n);
    float pw = g->m.reg_rgbper / (float)n;
    int on = vx_fit_reg_mode(&reg, pw);
    bool rbg = vx_fit_src_own_bg(src);
    if (vx_cuda_zero(g->d_sum, sizeof(double))) return -1;
    /* NONE leaves pw unread (it is 0 there: on is NONE only when pw is) */
#define VX__ARGS g->m.mp, L, g->d_data, occ, *src, n, scale, reg, pw, g->d_grad, wmax, d_rgb, g->d_sum
#define VX__LAUNCH_R(D, R)                                                                                   \
    (on == VX_FIT_REG_ALL  ? vx_fit_rays_v2_kernel<D, VX_FIT_REG_ALL, R><<<blocks, bs>>>(VX__ARGS)            \
     : on == VX_FIT_REG_PX ? vx_fit_rays_v2_kernel<D, VX_FIT_REG_PX, R><<<blocks, bs>>>(VX__ARGS)             \
                           : vx_fit_rays_v2_kernel<D, VX_FIT_REG_NONE, R><<<blocks, bs>>>(VX__ARGS))
#define VX__LAUNCH(D) (rbg ? VX__LAUNCH_R(D, true) : VX__LAUNCH_R(D, false))
    switch (g->m.sh_degree) {
    case 0: VX__LAUNCH(0); break;
    case 1: VX__LAUNCH(1); break;
    case 2: VX__LAUNCH(2); break;
    case 3: VX__LAUNCH(3); break;
    default: return vx_error("fit: SH degree %d has no CUDA kernel", g->m.sh_degree);
    }
#undef VX__LAUNCH
#undef VX__LAUNCH_R
#undef VX__ARGS
    VX_LAUNCH_CHECK("vx_fit_rays_v2_kernel");
    return 0;
}

extern "C" int vx_fit_rays_backward_cuda(vx_fit_device *g, const vx_fit_batch *b, float *out_rgb, double *loss) {
    if (b->n > g->max_batch) return vx_error("fit: batch of %d rays exceeds the CUDA buffers (%d)", b->n, g->max_batch);
    double t0 = 0.0;
    if (vx_fitd_prof_start(g, &t0)) return -1;
    size_t bytes = (size_t)b->n * 3 * sizeof(float);
    if (vx_cuda_upload(g->d_origin, b->origin, bytes) || vx_cuda_upload(g->d_dir, b->dir, bytes) ||
        vx_cuda_upload(g->d_target, b->target, bytes))
        return -1;
    if (g->version == 1 && g->m.mlp_layers) return vx_error("fit: ray kernel version 1 has no mlp decoder");
    if (g->version == 1 && g->m.reg_rgbper > 0.0f) return vx_error("fit: ray kernel version 1 has no per-point colour loss");
    if (g->version == 1 && b->random_bg) return vx_error("fit: ray kernel version 1 has no random background");
    if (b->random_bg && vx_cuda_upload(g->d_bg, b->bg, bytes)) return -1;
    if (g->version == 2) {
        vx_fit_ray_src src;
        memset(&src, 0, sizeof src);
        src.origin = g->d_origin; src.dir = g->d_dir; src.target = g->d_target;
        src.bg = b->random_bg ? g->d_bg : NULL;
        if (vx__rays_v2(g, &src, b->n, g->d_rgb) || vx_cuda_download(loss, g->d_sum, sizeof(double))) return -1;
    } else {
        int bs = 128;
        vx_fit_rays_backward_kernel<<<vx_ceil_div((size_t)b->n, bs), bs>>>(
            g->m.mp, vx_fitd_index(g), g->d_data, g->m.mp.occ_b ? g->d_occ : NULL, g->d_origin, g->d_dir, g->d_target, b->n,
            1.0f / (3.0f * (float)b->n), vx__reg(g, b->n), g->d_grad, g->m.track_wmax ? g->d_wmax : NULL, g->d_rgb,
            g->d_loss);
        VX_LAUNCH_CHECK("vx_fit_rays_backward_kernel");
        if (vx_cuda_download(g->h_loss, g->d_loss, (size_t)b->n * sizeof(float))) return -1;
        double s = 0.0;
        for (int r = 0; r < b->n; r++) s += g->h_loss[r];
        *loss = s;
    }
    if (out_rgb && vx_cuda_download(out_rgb, g->d_rgb, bytes)) return -1;
    return vx_fitd_prof_stop(g, VX_FIT_PROF_RAYS, t0);
}

extern "C" int vx_fit_rays_sampled_cuda(vx_fit_device *g, int n, uint64_t seed, double *loss) {
    if (!g->d_images) return vx_error("fit: no training views on the device (vx_fit_views_upload_cuda)");
    if (n < 1 || n > (1 << 26)) return vx_error("fit: batch of %d rays is outside 1..%d", n, 1 << 26);
    double t0 = 0.0;
    if (vx_fitd_prof_start(g, &t0)) return -1;
    vx_fit_ray_src src;
    memset(&src, 0, sizeof src);
    src.images = g->d_images; src.cams = g->d_cams; src.alpha = g->d_alpha;
    src.tiles = g->tiles;
    src.tiles.views = g->views; src.tiles.w = g->vw; src.tiles.h = g->vh;
    src.tiles.jitter = g->jitter;
    src.tiles.random_bg = g->random_bg;
    src.seed = seed;
    int map = g->tiles.n_map > 0;
    if (map) {
        if (n != g->tiles_batch) return vx_error("fit: error map made for %d rays, batch of %d", g->tiles_batch, n);
        src.ray_err = g->d_loss; /* version 1's per-ray losses: free in version 2 */
    }
    if (vx__rays_v2(g, &src, n, NULL) || vx_cuda_download(loss, g->d_sum, sizeof(double))) return -1;
    if (map) {
        int bs = 256;
        vx_fit_errmap_add_kernel<<<vx_ceil_div((size_t)n, bs), bs>>>(src.tiles, seed, n, g->d_loss, g->d_eacc);
        VX_LAUNCH_CHECK("vx_fit_errmap_add_kernel");
    }
    return vx_fitd_prof_stop(g, VX_FIT_PROF_RAYS, t0);
}

extern "C" int vx_fit_errmap_upload_cuda(vx_fit_device *g, const vx_fit_tiles *t, int batch) {
    if (!t) {
        memset(&g->tiles, 0, sizeof g->tiles);
        return 0;
    }
    if (t->views != g->views || t->w != g->vw || t->h != g->vh)
        return vx_error("fit: error map of %d %dx%d views for %d %dx%d training views", t->views, t->w, t->h, g->views,
                        g->vw, g->vh);
    if (batch > g->max_batch || t->n_map > batch) return vx_error("fit: error map for %d rays (%d from the map)", batch, t->n_map);
    if (!g->d_cdf || g->tiles.n != t->n) {
        vx_cuda_free(g->d_cdf); vx_cuda_free(g->d_eacc);
        g->d_cdf = g->d_eacc = NULL;
        memset(&g->tiles, 0, sizeof g->tiles);
        if (vx_cuda_alloc((void **)&g->d_cdf, ((size_t)t->n + 1) * sizeof(float), "fit error-map CDF") ||
            vx_cuda_alloc((void **)&g->d_eacc, (size_t)t->n * 2 * sizeof(float), "fit error-map sums") ||
            vx_cuda_zero(g->d_eacc, (size_t)t->n * 2 * sizeof(float)))
            return -1;
    }
    if (vx_cuda_upload(g->d_cdf, t->cdf, ((size_t)t->n + 1) * sizeof(float))) return -1;
    g->tiles = *t;
    g->tiles.cdf = g->d_cdf;
    g->tiles_batch = batch;
    return 0;
}

extern "C" int vx_fit_errmap_fetch_cuda(vx_fit_device *g, float *acc) {
    if (!g->d_eacc || !g->tiles.n) return 0; /* no map */
    size_t n = (size_t)g->tiles.n * 2;
    float *h = (float *)vx_malloc(n * sizeof(float), "fit error-map sums");
    if (!h) return -1;
    int rc = vx_cuda_download(h, g->d_eacc, n * sizeof(float)) || vx_cuda_zero(g->d_eacc, n * sizeof(float)) ? -1 : 0;
    if (!rc)
        for (size_t k = 0; k < n; k++) acc[k] += h[k];
    free(h);
    return rc;
}

extern "C" int vx_fit_render_view_cuda(vx_fit_device *g, const vx_camera *c, float *rgb) {
    size_t n = (size_t)c->width * c->height * 3;
    if (n > g->render_cap) {
        vx_cuda_free(g->d_render);
        g->d_render = NULL;
        g->render_cap = 0;
        if (vx_cuda_alloc((void **)&g->d_render, n * sizeof(float), "fit validation frame")) return -1;
        g->render_cap = n;
    }
    dim3 bs(16, 8), grid(vx_ceil_div((size_t)c->width, 16), vx_ceil_div((size_t)c->height, 8));
    vx_fit_index L = vx_fitd_index(g);
    const unsigned char *occ = g->m.mp.occ_b ? g->d_occ : NULL;
    if (g->m.mlp_layers) {
        if (vx__mlp_bind(g)) return -1;
        bool refl = vx_decoder_mlp_reflect(&g->m.mp.dec);
        if (g->m.mlp_layers == 1)
            (refl ? vx_fit_render_mlp_kernel<1, true> : vx_fit_render_mlp_kernel<1, false>)<<<grid, bs>>>(
                g->m.mp, L, g->d_data, occ, *c, g->d_render);
        else
            (refl ? vx_fit_render_mlp_kernel<2, true> : vx_fit_render_mlp_kernel<2, false>)<<<grid, bs>>>(
                g->m.mp, L, g->d_data, occ, *c, g->d_render);
        VX_LAUNCH_CHECK("vx_fit_render_mlp_kernel");
        return vx_cuda_download(rgb, g->d_render, n * sizeof(float));
    }
    switch (g->m.sh_degree) {
    case 0: vx_fit_render_kernel<0><<<grid, bs>>>(g->m.mp, L, g->d_data, occ, *c, g->d_render); break;
    case 1: vx_fit_render_kernel<1><<<grid, bs>>>(g->m.mp, L, g->d_data, occ, *c, g->d_render); break;
    case 2: vx_fit_render_kernel<2><<<grid, bs>>>(g->m.mp, L, g->d_data, occ, *c, g->d_render); break;
    case 3: vx_fit_render_kernel<3><<<grid, bs>>>(g->m.mp, L, g->d_data, occ, *c, g->d_render); break;
    default: return vx_error("fit: SH degree %d has no CUDA kernel", g->m.sh_degree);
    }
    VX_LAUNCH_CHECK("vx_fit_render_kernel");
    return vx_cuda_download(rgb, g->d_render, n * sizeof(float));
}

extern "C" int vx_fit_tv_backward_cuda(vx_fit_device *g, float w_sigma, float w_sh, float fraction, uint64_t seed,
                                       float eps, double *term) {
    if (!g->n_active) { if (term) *term = 0.0; return 0; }
    double t0 = 0.0;
    if (vx_fitd_prof_start(g, &t0)) return -1;
    double *d_term = term ? g->d_sum + 1 : NULL;
    if (d_term && vx_cuda_zero(d_term, sizeof(double))) return -1;
    int bs = 256;
    vx_fit_tv_kernel<<<vx_ceil_div(g->n_active, bs), bs>>>(g->d_data, g->d_grad, g->d_active, g->n_active, vx_fitd_index(g),
                                                            g->m.nc, w_sigma, w_sh, fraction, seed,
                                                            eps, d_term);
    VX_LAUNCH_CHECK("vx_fit_tv_kernel");
    if (term && vx_cuda_download(term, d_term, sizeof(double))) return -1;
    return vx_fitd_prof_stop(g, VX_FIT_PROF_TV, t0);
}

extern "C" int vx_fit_adam_step_cuda(vx_fit_device *g, const vx_fit_hparams *h, float lr_sigma, float lr_sh) {
    g->m.t++;
    float bc1 = (float)(1.0 - pow(h->beta1, (double)g->m.t)), bc2 = (float)(1.0 - pow(h->beta2, (double)g->m.t));
    if (!g->n_active) return 0;
    int gw = g->m.nc % 4 == 0 ? 4 : 1, ng = g->m.nc / gw;
    double t0 = 0.0;
    if (vx_fitd_prof_start(g, &t0)) return -1;
    /* launches of at most 2^31 work items keep the kernel's index 32-bit */
    size_t chunk = ((size_t)1 << 31) / (size_t)ng;
    for (size_t k0 = 0; k0 < g->n_active; k0 += chunk) {
        size_t nk = g->n_active - k0 < chunk ? g->n_active - k0 : chunk, n = nk * (size_t)ng;
        int bs = 256;
        vx_fit_adam_kernel<<<vx_ceil_div(n, bs), bs>>>(g->d_data, g->d_m, g->d_v, g->d_grad, g->d_active + k0,
                                                       (unsigned)n, ng, gw, lr_sigma, lr_sh, h->beta1, h->beta2,
                                                       h->eps, bc1, bc2, h->lazy);
        VX_LAUNCH_CHECK("vx_fit_adam_kernel");
    }
    return vx_fitd_prof_stop(g, VX_FIT_PROF_ADAM, t0);
}

extern "C" int vx_fit_adam_step_mlp_cuda(vx_fit_device *g, const vx_fit_hparams *h, float lr) {
    if (!g->m.mlp_layers) return 0;
    float bc1 = (float)(1.0 - pow(h->beta1, (double)g->m.t)), bc2 = (float)(1.0 - pow(h->beta2, (double)g->m.t));
    int n = vx_mlp_weight_count(g->m.mlp_layers), lo, hi;
    vx_mlp_dir_cut(h->mlp_dir_terms, &lo, &hi);
    vx_fit_mlp_adam_kernel<<<vx_ceil_div((size_t)n, 256), 256>>>(g->d_mlp, g->d_mlp_m, g->d_mlp_v, g->d_mlp_grad, n, lo,
                                                                  hi, lr, h->beta1, h->beta2, h->eps, bc1, bc2);
    VX_LAUNCH_CHECK("vx_fit_mlp_adam_kernel");
    return 0;
}

extern "C" int vx_fit_occupancy_build_cuda(vx_fit_device *g, int cell) {
    vx_march_params *mp = &g->m.mp;
    int n[3] = {g->m.nx, g->m.ny, g->m.nz};
    if (cell < 1) return vx_error("fit: occupancy cell %d must be >= 1", cell);
    double t0 = 0.0;
    if (vx_fitd_prof_start(g, &t0)) return -1;
    for (int a = 0; a < 3; a++) mp->occ_n[a] = n[a] > 1 ? (n[a] - 1) / cell + 1 : 1;
    size_t count = (size_t)mp->occ_n[0] * mp->occ_n[1] * mp->occ_n[2];
    if (count != g->occ_count) {
        vx_cuda_free(g->d_occ);
        g->d_occ = NULL;
        g->occ_count = 0;
        if (vx_cuda_alloc((void **)&g->d_occ, count, "fit occupancy grid")) return -1;
        g->occ_count = count;
    }
    mp->occ_b = cell;
    if (vx_cuda_zero(g->d_occ, count)) return -1;
    if (g->n_active) {
        int bs = 256;
        vx_fit_occ_kernel<<<vx_ceil_div(g->n_active, bs), bs>>>(g->d_data, g->d_active, g->n_active, vx_fitd_index(g),
                                                                 g->m.nc, cell, mp->occ_n[0], mp->occ_n[1],
                                                                 mp->occ_n[2], g->d_occ);
        VX_LAUNCH_CHECK("vx_fit_occ_kernel");
    }
    return vx_fitd_prof_stop(g, VX_FIT_PROF_OCC, t0);
}

extern "C" int vx_fit_occupancy_download_cuda(const vx_fit_device *g, unsigned char *occ, size_t count) {
    if (!g->d_occ || count != g->occ_count)
        return vx_error("fit: the device occupancy grid has %zu cells, not %zu", g->occ_count, count);
    return vx_cuda_download(occ, g->d_occ, count);
}

