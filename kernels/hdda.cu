/* hdda.cu - NanoVDB's HDDA ray march on the device for `voxray bench hdda`: one thread per
 * pixel (8x8 blocks, as render.cu) runs vx_hdda_march (src/hdda_march.h) over the grid
 * buffer NanoVDB's GridBuilder made on the host (render_hdda_cpu.cpp); the CPU twin is
 * vx_render_hdda_cpu. Only the march differs from render.cu: camera, segments, decoder
 * and compositing are the same code. */
#include "common.cuh"
#include "cuda_device.h"
#include "cuda_hdda.h"
#include "hdda_march.h"

struct vx_cuda_hdda {
    vx_march_params mp;
    void *d_grid;
    float *d_rgb, *d_alpha;
    size_t npix_cap;
    unsigned long long *d_counters; /* samples, rays that met the volume */
    vx_cuda_timer *timer;
};

__global__ void __launch_bounds__(64)
vx_hdda_render_kernel(const __grid_constant__ vx_march_params m, const __grid_constant__ vx_camera cam,
                      const nanovdb::NanoGrid<float> *__restrict__ grid, float *__restrict__ out_rgb,
                      float *__restrict__ out_alpha, unsigned long long *__restrict__ counters) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    int samples = 0, hit = 0;
    if (j < cam.width && i < cam.height) {
        vx_vec3 o, d;
        vx_camera_ray(&cam, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
        vx_ray_result r = vx_hdda_march(&m, grid, o, d);
        samples = r.samples;
        hit = r.samples > 0 || r.trans < 1.0f;
        size_t px = (size_t)i * cam.width + j;
        for (int c = 0; c < 3; c++) out_rgb[px * 3 + c] = r.rgb[c];
        out_alpha[px] = 1.0f - r.trans;
    }
    unsigned s = (unsigned)samples, h = (unsigned)hit; /* one atomic per warp (8x8 blocks: whole warps) */
    for (int o = 16; o; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        h += __shfl_xor_sync(0xffffffffu, h, o);
    }
    if ((threadIdx.y * blockDim.x + threadIdx.x) % 32 == 0) {
        if (s) atomicAdd(counters, (unsigned long long)s);
        if (h) atomicAdd(counters + 1, (unsigned long long)h);
    }
}

extern "C" int vx_hdda_upload_cuda(vx_cuda_hdda **out, const vx_hdda_grid *h, const vx_march_params *m) {
    *out = NULL;
    if (m->jitter_seed) return vx_error("cuda hdda: the HDDA renderer takes no --jitter");
    if (m->dec.type != VX_DEC_SCALAR) return vx_error("cuda hdda: the HDDA renderer takes scalar decoders only");
    vx_cuda_hdda *d = (vx_cuda_hdda *)calloc(1, sizeof *d);
    if (!d) return vx_error("cuda hdda: out of memory");
    d->mp = *m;
    size_t bytes;
    const void *data = vx_hdda_grid_data(h, &bytes);
    if (vx_cuda_alloc(&d->d_grid, bytes, "NanoVDB grid") || vx_cuda_upload(d->d_grid, data, bytes) ||
        vx_cuda_alloc((void **)&d->d_counters, 2 * sizeof(unsigned long long), "counters") ||
        vx_cuda_timer_create(&d->timer)) {
        vx_hdda_free_cuda(d);
        return -1;
    }
    *out = d;
    return 0;
}

static int vx__hdda_render(vx_cuda_hdda *d, const vx_camera *c, float *ms) {
    if (c->width < 1 || c->height < 1 || c->width > 65536 || c->height > 65536)
        return vx_error("cuda hdda: frame size %d x %d is not valid", c->width, c->height);
    size_t npix = (size_t)c->width * c->height;
    if (npix > d->npix_cap) {
        vx_cuda_free(d->d_rgb);
        vx_cuda_free(d->d_alpha);
        d->d_rgb = d->d_alpha = NULL;
        d->npix_cap = 0;
        if (vx_cuda_alloc((void **)&d->d_rgb, npix * 3 * sizeof(float), "frame rgb") ||
            vx_cuda_alloc((void **)&d->d_alpha, npix * sizeof(float), "frame alpha"))
            return -1;
        d->npix_cap = npix;
    }
    if (vx_cuda_zero(d->d_counters, 2 * sizeof(unsigned long long)) || vx_cuda_timer_start(d->timer)) return -1;
    dim3 block(8, 8), grid((c->width + 7) / 8, (c->height + 7) / 8);
    vx_hdda_render_kernel<<<grid, block>>>(d->mp, *c, (const nanovdb::NanoGrid<float> *)d->d_grid, d->d_rgb,
                                           d->d_alpha, d->d_counters);
    VX_LAUNCH_CHECK("vx_hdda_render_kernel");
    float t;
    if (vx_cuda_timer_stop(d->timer, &t)) return -1;
    if (ms) *ms = t;
    return 0;
}

static int vx__hdda_counters(vx_cuda_hdda *d, long long *samples, long long *rays_hit) {
    unsigned long long h[2];
    if (vx_cuda_download(h, d->d_counters, sizeof h)) return -1;
    *samples = (long long)h[0];
    *rays_hit = (long long)h[1];
    return 0;
}

extern "C" int vx_render_hdda_device_cuda(vx_cuda_hdda *d, const vx_camera *c, float *ms, long long *samples,
                                          long long *rays_hit) {
    if (vx__hdda_render(d, c, ms)) return -1;
    return vx__hdda_counters(d, samples, rays_hit);
}

extern "C" int vx_render_hdda_cuda(vx_cuda_hdda *d, const vx_camera *c, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("cuda hdda: frame %d x %d does not match the camera's %d x %d", f->width, f->height,
                        c->width, c->height);
    if (vx__hdda_render(d, c, NULL)) return -1;
    size_t npix = (size_t)c->width * c->height;
    if (vx_cuda_download(f->rgb, d->d_rgb, npix * 3 * sizeof(float)) ||
        vx_cuda_download(f->alpha, d->d_alpha, npix * sizeof(float)))
        return -1;
    return vx__hdda_counters(d, &f->samples, &f->rays_hit);
}

extern "C" void vx_hdda_free_cuda(vx_cuda_hdda *d) {
    if (!d) return;
    vx_cuda_free(d->d_grid);
    vx_cuda_free(d->d_rgb);
    vx_cuda_free(d->d_alpha);
    vx_cuda_free(d->d_counters);
    vx_cuda_timer_destroy(d->timer);
    free(d);
}
