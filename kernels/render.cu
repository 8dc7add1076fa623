/* render.cu - the fused renderer: one thread per pixel generates its ray, clips it to
 * the box, marches segments, interpolates, decodes and composites in registers, the
 * same arithmetic as march.h's vx_march (the CPU reference) sample for sample.
 * backend.c reaches it through vx_cuda.h (vx_cuda_volume_*, vx_cuda_render).
 *
 * Speed: kernels are instantiated per storage type (float32 / float16) and decoder
 * (rgba, sh degree 0..3, scalar), so the channel count is a constant and the raw
 * channels live in registers; empty space is crossed one occupancy cell at a time (the
 * same cell-exit jump as march.h, i.e. a DDA over the occupancy grid); rays stop when
 * T < stop. Pixels are 8x8 tiles so neighbouring rays share cache lines. */
#include <cuda_fp16.h>
#include <string.h>

#include "common.cuh"
#include "cuda_device.h"
#include "cuda_render.h"

struct vx_cuda_volume {
    vx_march_params mp;
    void *d_grid;             /* (z,y,x,c) float32 or float16 */
    int half;
    unsigned char *d_occ;     /* occupancy cells, NULL when skipping is off */
    size_t occ_count;
    float *d_rgb, *d_alpha, *d_depth;
    size_t npix_cap;
    unsigned long long *d_counters; /* samples, rays that sampled the volume */
    cudaEvent_t ev0, ev1;
};

// ----------------------------------------------------------------------------------------
// per-sample pieces, specialised

template <int DEC, int DEG> struct vx_dec_traits {
    static constexpr int nc = DEC == VX_DEC_RGBA ? 4 : DEC == VX_DEC_SH ? 1 + 3 * (DEG + 1) * (DEG + 1) : 1;
};

/* nv channels of one lattice point (offset in elements) as floats. */
template <int NC> __device__ __forceinline__ void vx_load_point(const float *__restrict__ g, size_t off, float *v) {
    if constexpr (NC % 4 == 0) {
#pragma unroll
        for (int j = 0; j < NC; j += 4) {
            float4 q = __ldg((const float4 *)(g + off + j));
            v[j] = q.x; v[j + 1] = q.y; v[j + 2] = q.z; v[j + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < NC; j++) v[j] = __ldg(g + off + j);
    }
}
template <int NC> __device__ __forceinline__ void vx_load_point(const __half *__restrict__ g, size_t off, float *v) {
    if constexpr (NC % 4 == 0) {
#pragma unroll
        for (int j = 0; j < NC; j += 4) {
            uint2 q = __ldg((const uint2 *)(g + off + j));
            float2 a = __half22float2(*(__half2 *)&q.x), b = __half22float2(*(__half2 *)&q.y);
            v[j] = a.x; v[j + 1] = a.y; v[j + 2] = b.x; v[j + 3] = b.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < NC; j++) v[j] = __half2float(g[off + j]);
    }
}

/* march.h's vx_trilinear_fetch with NC a constant; vec says the channel stride allows
 * vector loads (stride == NC, NC % 4 == 0). */
template <typename T, int NC>
__device__ __forceinline__ void vx_fetch(const T *__restrict__ data, const vx_march_params &m, vx_vec3 p,
                                         float *out) {
    int x0, x1, y0, y1, z0, z1;
    float fx, fy, fz;
    vx_axis_cell(p.x, m.nx, &x0, &x1, &fx);
    vx_axis_cell(p.y, m.ny, &y0, &y1, &fy);
    vx_axis_cell(p.z, m.nz, &z0, &z1, &fz);
    size_t sy = (size_t)m.nx * m.nc, sz = (size_t)m.ny * sy;
    float c000[NC], c001[NC], c010[NC], c011[NC], c100[NC], c101[NC], c110[NC], c111[NC];
    vx_load_point<NC>(data, z0 * sz + y0 * sy + (size_t)x0 * m.nc, c000);
    vx_load_point<NC>(data, z0 * sz + y0 * sy + (size_t)x1 * m.nc, c001);
    vx_load_point<NC>(data, z0 * sz + y1 * sy + (size_t)x0 * m.nc, c010);
    vx_load_point<NC>(data, z0 * sz + y1 * sy + (size_t)x1 * m.nc, c011);
    vx_load_point<NC>(data, z1 * sz + y0 * sy + (size_t)x0 * m.nc, c100);
    vx_load_point<NC>(data, z1 * sz + y0 * sy + (size_t)x1 * m.nc, c101);
    vx_load_point<NC>(data, z1 * sz + y1 * sy + (size_t)x0 * m.nc, c110);
    vx_load_point<NC>(data, z1 * sz + y1 * sy + (size_t)x1 * m.nc, c111);
    float w000 = (1 - fz) * (1 - fy) * (1 - fx), w001 = (1 - fz) * (1 - fy) * fx;
    float w010 = (1 - fz) * fy * (1 - fx), w011 = (1 - fz) * fy * fx;
    float w100 = fz * (1 - fy) * (1 - fx), w101 = fz * (1 - fy) * fx;
    float w110 = fz * fy * (1 - fx), w111 = fz * fy * fx;
#pragma unroll
    for (int c = 0; c < NC; c++)
        out[c] = w000 * c000[c] + w001 * c001[c] + w010 * c010[c] + w011 * c011[c] +
                 w100 * c100[c] + w101 * c101[c] + w110 * c110[c] + w111 * c111[c];
}

/* decode.h's vx_decode with the decoder type and sh degree as constants. */
template <int DEC, int DEG>
__device__ __forceinline__ float vx_decode_t(const vx_decoder &d, const float *raw, vx_vec3 dir, float *rgb) {
    float sigma;
    if constexpr (DEC == VX_DEC_SCALAR) {
        float o[4];
        vx_tf_eval(&d, vx_window(&d, raw[0]), o);
        rgb[0] = o[0]; rgb[1] = o[1]; rgb[2] = o[2];
        sigma = vx_maxf(o[3], 0.0f);
    } else if constexpr (DEC == VX_DEC_SH) {
        constexpr int nb = (DEG + 1) * (DEG + 1);
        float b[16];
        vx_sh_basis(DEG, dir, b);
#pragma unroll
        for (int c = 0; c < 3; c++) {
            const float *k = raw + 1 + c * nb;
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < nb; i++) s += k[i] * b[i];
            rgb[c] = d.color_act == VX_CACT_SIGMOID ? vx_sigmoidf(s) : vx_maxf(s + 0.5f, 0.0f);
        }
        sigma = vx_density_activate(d.density_act, raw[0]);
    } else {
#pragma unroll
        for (int c = 0; c < 3; c++)
            rgb[c] = d.color_act == VX_CACT_SIGMOID ? vx_sigmoidf(raw[1 + c]) : vx_clampf(raw[1 + c], 0.0f, 1.0f);
        sigma = vx_density_activate(d.density_act, raw[0]);
    }
    return sigma * d.density_scale;
}

// ----------------------------------------------------------------------------------------
// the fused kernel

/* march.h's vx_occ_cell; occ_shift >= 0 replaces the three integer divisions by the cell
 * size with shifts when it is a power of two (the same result for indices >= 0). */
__device__ __forceinline__ int vx_occ_cell_fast(const vx_march_params &m, int occ_shift, vx_vec3 p, int *cx,
                                                int *cy, int *cz) {
    int ix = (int)floorf(vx_clampf(p.x, 0.0f, (float)(m.nx - 1)));
    int iy = (int)floorf(vx_clampf(p.y, 0.0f, (float)(m.ny - 1)));
    int iz = (int)floorf(vx_clampf(p.z, 0.0f, (float)(m.nz - 1)));
    if (occ_shift >= 0) { ix >>= occ_shift; iy >>= occ_shift; iz >>= occ_shift; }
    else { ix /= m.occ_b; iy /= m.occ_b; iz /= m.occ_b; }
    *cx = vx_mini(ix, m.occ_n[0] - 1);
    *cy = vx_mini(iy, m.occ_n[1] - 1);
    *cz = vx_mini(iz, m.occ_n[2] - 1);
    return (*cz * m.occ_n[1] + *cy) * m.occ_n[0] + *cx;
}

template <typename T, int DEC, int DEG>
__global__ void __launch_bounds__(128)
vx_render_kernel(const vx_march_params m, const vx_camera cam, const T *__restrict__ data,
                 const unsigned char *__restrict__ occ, int occ_shift, float *__restrict__ out_rgb,
                 float *__restrict__ out_alpha, float *__restrict__ out_depth,
                 unsigned long long *__restrict__ counters) {
    constexpr int NC = vx_dec_traits<DEC, DEG>::nc;
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    int inside = j < cam.width && i < cam.height;
    int samples = 0, hit = 0;
    if (inside) {
        vx_vec3 o, d;
        vx_camera_ray(&cam, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
        /* from here on: vx_march, with the specialised fetch and decode */
        float acc[3] = {0.0f, 0.0f, 0.0f}, T_ = 1.0f, depth = 0.0f, t0, t1;
        vx_vec3 oi = vx_affine_point(m.w2i, o), di = vx_affine_dir(m.w2i, d);
        if (vx_ray_box(m.box_lo, m.box_hi, oi, di, &t0, &t1)) {
            int n = vx_segment_count(t1 - t0, m.dt);
            float raw[NC], rgb[3];
            for (int k = 0; k < n; k++) {
                float ta = t0 + (float)k * m.dt;
                float tb = k == n - 1 ? t1 : ta + m.dt;
                float tm = 0.5f * (ta + tb);
                vx_vec3 p = vx_add(oi, vx_scale(di, tm));
                if (occ) {
                    int cx, cy, cz;
                    if (!__ldg(occ + vx_occ_cell_fast(m, occ_shift, p, &cx, &cy, &cz))) {
                        float te = vx_occ_exit(&m, oi, di, cx, cy, cz);
                        float kf = floorf((te - t0) / m.dt - 0.5f);
                        if (kf > (float)n) kf = (float)n;
                        if ((int)kf - 1 > k) k = (int)kf - 1;
                        continue;
                    }
                }
                vx_fetch<T, NC>(data, m, p, raw);
                float sigma = vx_decode_t<DEC, DEG>(m.dec, raw, d, rgb);
                float alpha = 1.0f - expf(-sigma * (tb - ta));
                float w = T_ * alpha;
                acc[0] += w * rgb[0]; acc[1] += w * rgb[1]; acc[2] += w * rgb[2];
                depth += w * tm;
                T_ *= 1.0f - alpha;
                samples++;
                if (T_ < m.stop) break;
            }
        }
        hit = samples > 0 || T_ < 1.0f; /* as render_cpu.c counts it */
        size_t px = (size_t)i * cam.width + j;
        for (int c = 0; c < 3; c++) out_rgb[px * 3 + c] = acc[c] + T_ * m.bg[c];
        out_alpha[px] = 1.0f - T_;
        if (out_depth) out_depth[px] = depth;
    }
    /* frame counters: one atomic per warp (blocks are whole warps: 8 x 8) */
#if __CUDA_ARCH__ >= 800
    unsigned s = __reduce_add_sync(0xffffffffu, (unsigned)samples);
    unsigned h = __reduce_add_sync(0xffffffffu, (unsigned)hit);
#else /* PTX for older GPUs: the same sums by shuffles */
    unsigned s = (unsigned)samples, h = (unsigned)hit;
    for (int o = 16; o; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        h += __shfl_xor_sync(0xffffffffu, h, o);
    }
#endif
    if ((threadIdx.y * blockDim.x + threadIdx.x) % 32 == 0) {
        if (s) atomicAdd(counters, (unsigned long long)s);
        if (h) atomicAdd(counters + 1, (unsigned long long)h);
    }
}

// ----------------------------------------------------------------------------------------
// launch

/* 8 x 8 pixels a block (a warp is an 8 x 4 tile): measured best of 16x8, 8x8, 8x16,
 * 32x4, 4x8 and 32x1 on shell, cloud and sh-glass (docs/BENCHMARKS.md). */
#define VX_BLOCK_X 8
#define VX_BLOCK_Y 8

template <typename T>
static int vx__launch_render(const vx_cuda_volume *cv, const vx_camera *c, float *depth) {
    dim3 threads(VX_BLOCK_X, VX_BLOCK_Y);
    dim3 blocks(vx_ceil_div(c->width, VX_BLOCK_X), vx_ceil_div(c->height, VX_BLOCK_Y));
    const T *g = (const T *)cv->d_grid;
    const vx_march_params &m = cv->mp;
    const unsigned char *occ = cv->d_occ;
    int shift = -1; /* power-of-two cells index by shifting */
    for (int k = 0; k < 31; k++)
        if (m.occ_b == (1 << k)) shift = k;
#define VX_GO(DEC, DEG) \
    vx_render_kernel<T, DEC, DEG><<<blocks, threads>>>(m, *c, g, occ, shift, cv->d_rgb, cv->d_alpha, depth, \
                                                       cv->d_counters)
    switch (m.dec.type) {
    case VX_DEC_RGBA: VX_GO(VX_DEC_RGBA, 0); break;
    case VX_DEC_SCALAR: VX_GO(VX_DEC_SCALAR, 0); break;
    case VX_DEC_SH:
        switch (m.dec.sh_degree) {
        case 0: VX_GO(VX_DEC_SH, 0); break;
        case 1: VX_GO(VX_DEC_SH, 1); break;
        case 2: VX_GO(VX_DEC_SH, 2); break;
        case 3: VX_GO(VX_DEC_SH, 3); break;
        default: return vx_error("cuda render: sh degree %d is not in 0..3", m.dec.sh_degree);
        }
        break;
    default: return vx_error("cuda render: unknown decoder type %d", m.dec.type);
    }
#undef VX_GO
    VX_LAUNCH_CHECK("vx_render_kernel");
    return 0;
}

/* Check that the march parameters fit the uploaded grid and the specialised kernels. */
static int vx__check_params(const vx_march_params *mp, int nx, int ny, int nz, int nc) {
    if (mp->nx != nx || mp->ny != ny || mp->nz != nz || mp->nc != nc)
        return vx_error("cuda render: march parameters (%d x %d x %d x %d) do not match the grid "
                        "(%d x %d x %d x %d)", mp->nx, mp->ny, mp->nz, mp->nc, nx, ny, nz, nc);
    int need = vx_decoder_channels(&mp->dec);
    if (mp->dec.type == VX_DEC_SH && (mp->dec.sh_degree < 0 || mp->dec.sh_degree > 3))
        return vx_error("cuda render: sh degree %d is not in 0..3", mp->dec.sh_degree);
    if (need > nc) return vx_error("cuda render: the decoder needs %d channels, the grid has %d", need, nc);
    if (need % 4 == 0 && nc % 4 != 0)
        return vx_error("cuda render: %d channels with a %d-channel decoder is not supported "
                        "(channel stride must be a multiple of 4)", nc, need);
    if (!(mp->dt > 0.0f)) return vx_error("cuda render: step %g is not positive", mp->dt);
    if (mp->dec.type == VX_DEC_SCALAR && (mp->dec.tf_n < 2 || mp->dec.tf_n > VX_TF_MAX))
        return vx_error("cuda render: transfer function has %d points (2..%d)", mp->dec.tf_n, VX_TF_MAX);
    return 0;
}

static int vx__occ_update(vx_cuda_volume *cv) {
    const vx_march_params *mp = &cv->mp;
    if (mp->occ_b <= 0) {
        vx_cuda_free(cv->d_occ);
        cv->d_occ = NULL;
        cv->occ_count = 0;
        return 0;
    }
    size_t count = (size_t)mp->occ_n[0] * mp->occ_n[1] * mp->occ_n[2];
    if (count != cv->occ_count) {
        vx_cuda_free(cv->d_occ);
        cv->d_occ = NULL;
        cv->occ_count = 0;
        if (vx_cuda_alloc((void **)&cv->d_occ, count, "occupancy grid")) return -1;
        cv->occ_count = count;
    }
    return vx_occupancy_build_cuda(cv->d_grid, cv->half, mp, cv->d_occ);
}

extern "C" int vx_cuda_volume_create(vx_cuda_volume **out, const vx_volume *v, const vx_grid *g, int half) {
    *out = NULL;
    if (vx__check_params(&v->mp, g->nx, g->ny, g->nz, g->nc)) return -1;
    size_t count = vx_grid_count(g);
    vx_cuda_volume *cv = (vx_cuda_volume *)vx_calloc(1, sizeof *cv, "CUDA volume");
    if (!cv) return -1;
    cv->mp = v->mp;
    cv->half = half;
    float *d_tmp = NULL;
    if (vx_cuda_alloc(&cv->d_grid, count * (half ? 2 : 4), "grid on the device")) goto fail;
    if (half) {
        if (vx_cuda_alloc((void **)&d_tmp, count * 4, "grid upload buffer") ||
            vx_cuda_upload(d_tmp, g->data, count * 4) || vx_cuda_to_half(d_tmp, cv->d_grid, count) ||
            vx_cuda_sync())
            goto fail;
        vx_cuda_free(d_tmp);
        d_tmp = NULL;
    } else if (vx_cuda_upload(cv->d_grid, g->data, count * 4)) {
        goto fail;
    }
    if (vx_cuda_alloc((void **)&cv->d_counters, 2 * sizeof(unsigned long long), "frame counters")) goto fail;
    if (cudaEventCreate(&cv->ev0) != cudaSuccess || cudaEventCreate(&cv->ev1) != cudaSuccess) {
        vx_error("%s:%d: cudaEventCreate failed", __FILE__, __LINE__);
        goto fail;
    }
    if (vx__occ_update(cv) || vx_cuda_sync()) goto fail;
    *out = cv;
    return 0;
fail:
    vx_cuda_free(d_tmp);
    vx_cuda_volume_destroy(cv);
    return -1;
}

extern "C" int vx_cuda_volume_set_params(vx_cuda_volume *cv, const vx_march_params *mp) {
    if (vx__check_params(mp, cv->mp.nx, cv->mp.ny, cv->mp.nz, cv->mp.nc)) return -1;
    int rebuild = memcmp(&mp->dec, &cv->mp.dec, sizeof mp->dec) || mp->occ_b != cv->mp.occ_b ||
                  memcmp(mp->occ_n, cv->mp.occ_n, sizeof mp->occ_n);
    cv->mp = *mp;
    return rebuild ? vx__occ_update(cv) : 0;
}

/* Size the device frame buffers for w x h (grow only). */
static int vx__frame_buffers(vx_cuda_volume *cv, int w, int h) {
    size_t npix = (size_t)w * h;
    if (npix > cv->npix_cap) {
        vx_cuda_free(cv->d_rgb);
        vx_cuda_free(cv->d_alpha);
        vx_cuda_free(cv->d_depth);
        cv->d_rgb = cv->d_alpha = cv->d_depth = NULL;
        cv->npix_cap = 0;
        size_t cap = npix;
        if (vx_cuda_alloc((void **)&cv->d_rgb, cap * 3 * sizeof(float), "frame colour") ||
            vx_cuda_alloc((void **)&cv->d_alpha, cap * sizeof(float), "frame opacity") ||
            vx_cuda_alloc((void **)&cv->d_depth, cap * sizeof(float), "frame depth"))
            return -1;
        cv->npix_cap = cap;
    }
    return 0;
}

static int vx__render(vx_cuda_volume *cv, const vx_camera *c, int want_depth, float *ms) {
    if (c->width < 1 || c->height < 1 || c->width > 65536 || c->height > 65536)
        return vx_error("cuda render: frame size %d x %d is not valid", c->width, c->height);
    if (vx__frame_buffers(cv, c->width, c->height)) return -1;
    VX_CUDA_CHECK(cudaMemsetAsync(cv->d_counters, 0, 2 * sizeof(unsigned long long), 0));
    VX_CUDA_CHECK(cudaEventRecord(cv->ev0, 0));
    float *depth = want_depth ? cv->d_depth : NULL;
    if (cv->half ? vx__launch_render<__half>(cv, c, depth) : vx__launch_render<float>(cv, c, depth)) return -1;
    VX_CUDA_CHECK(cudaEventRecord(cv->ev1, 0));
    VX_CUDA_CHECK(cudaEventSynchronize(cv->ev1));
    if (ms) VX_CUDA_CHECK(cudaEventElapsedTime(ms, cv->ev0, cv->ev1));
    return 0;
}

static int vx__counters(vx_cuda_volume *cv, long long *samples, long long *rays_hit) {
    unsigned long long h[2];
    VX_CUDA_CHECK(cudaMemcpy(h, cv->d_counters, sizeof h, cudaMemcpyDeviceToHost));
    *samples = (long long)h[0];
    *rays_hit = (long long)h[1];
    return 0;
}

extern "C" int vx_cuda_render(vx_cuda_volume *cv, const vx_camera *c, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("cuda render: frame %d x %d does not match the camera's %d x %d", f->width,
                        f->height, c->width, c->height);
    if (vx__render(cv, c, f->depth != NULL, NULL)) return -1;
    size_t npix = (size_t)c->width * c->height;
    VX_CUDA_CHECK(cudaMemcpy(f->rgb, cv->d_rgb, npix * 3 * sizeof(float), cudaMemcpyDeviceToHost));
    VX_CUDA_CHECK(cudaMemcpy(f->alpha, cv->d_alpha, npix * sizeof(float), cudaMemcpyDeviceToHost));
    if (f->depth) VX_CUDA_CHECK(cudaMemcpy(f->depth, cv->d_depth, npix * sizeof(float), cudaMemcpyDeviceToHost));
    return vx__counters(cv, &f->samples, &f->rays_hit);
}

extern "C" int vx_cuda_render_device(vx_cuda_volume *cv, const vx_camera *c, int want_depth, float *ms,
                                     long long *samples, long long *rays_hit) {
    if (vx__render(cv, c, want_depth, ms)) return -1;
    return vx__counters(cv, samples, rays_hit);
}

extern "C" int vx_cuda_volume_occupancy(const vx_cuda_volume *cv, unsigned char *occ, size_t count) {
    if (count != cv->occ_count)
        return vx_error("cuda occupancy: asked for %zu cells, the device grid has %zu", count, cv->occ_count);
    if (count) VX_CUDA_CHECK(cudaMemcpy(occ, cv->d_occ, count, cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" void vx_cuda_volume_destroy(vx_cuda_volume *cv) {
    if (!cv) return;
    vx_cuda_free(cv->d_grid);
    vx_cuda_free(cv->d_occ);
    vx_cuda_free(cv->d_rgb);
    vx_cuda_free(cv->d_alpha);
    vx_cuda_free(cv->d_depth);
    vx_cuda_free(cv->d_counters);
    if (cv->ev0) cudaEventDestroy(cv->ev0);
    if (cv->ev1) cudaEventDestroy(cv->ev1);
    free(cv);
}

/* The device frame buffers of the last render (the viewer's interop reads them). */
extern "C" int vx_cuda_volume_frame(const vx_cuda_volume *cv, const float **d_rgb, const float **d_alpha) {
    if (!cv->d_rgb) return vx_error("cuda render: no frame has been rendered into this volume yet");
    *d_rgb = cv->d_rgb;
    *d_alpha = cv->d_alpha;
    return 0;
}
