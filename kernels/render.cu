/* render.cu - the fused renderer: one thread per pixel generates its ray, clips it to
 * the box, marches segments, interpolates, decodes and composites in registers, the
 * same march as the CPU reference: vx_march_run (march.h) with this file's op.
 * backend.c reaches it through cuda_render.h (vx_volume_upload_cuda, vx_render_cuda).
 *
 * Speed: kernels are instantiated per storage (dense or sparse bricks, float32 or float16)
 * and decoder (rgba, sh degree 0..3, scalar), so the channel count is a constant and the raw
 * channels live in registers; empty space is crossed one occupancy cell at a time (the
 * same cell-exit jump as march.h, i.e. a DDA over the occupancy grid); rays stop when
 * T < stop. Pixels are 8x8 tiles so neighbouring rays share cache lines. */
#include <cuda_fp16.h>
#include <string.h>

#include "common.cuh"
#include "cuda_device.h"
#include "cuda_render.h"
#include "load.cuh"

struct vx_cuda_volume {
    vx_march_params mp;
    void *d_grid;             /* dense: (z,y,x,c); sparse: the brick pool then nc background values */
    int half;                 /* float16 storage */
    int sparse;               /* bricks: d_table + d_grid */
    int32_t *d_table;         /* sparse brick table (sparse.h) */
    int bn[3];
    size_t nbricks;
    unsigned char *d_occ;     /* occupancy cells, NULL when skipping is off */
    size_t occ_count;
    float *d_rgb, *d_alpha, *d_depth;
    size_t npix_cap;
    unsigned long long *d_counters; /* samples, rays that sampled the volume */
    vx_cuda_timer *timer;
};

// ----------------------------------------------------------------------------------------
// per-sample pieces, specialised

template <int DEC, int DEG> struct vx_dec_traits {
    static constexpr int nc = DEC == VX_DEC_RGBA ? 4 : DEC == VX_DEC_SH ? 1 + 3 * (DEG + 1) * (DEG + 1) : 1;
};

/* Where a lattice point's channels live: dense (z, y, x, c) or sparse bricks (sparse.h),
 * float32 or float16. corners() gives the eight corner pointers of a trilinear cell. */
/* The brick a ray is in: consecutive samples mostly stay in one brick, so its table entry is
 * read once, not once a sample (the table read is a dependent load before the voxels'). */
template <typename T> struct vx_brick_cache {
    size_t key;      /* table index of the cached brick, or SIZE_MAX */
    const T *base;   /* its voxels, or NULL when absent (background) */
};
template <typename T> struct vx_dense_store {
    typedef T elem;
    const T *data;
    size_t sy, sz, nc;        /* element strides of y, z and x (= channels) */
    __device__ __forceinline__ const T *voxel(int x, int y, int z) const {
        return data + (size_t)z * sz + (size_t)y * sy + (size_t)x * nc;
    }
    __device__ __forceinline__ void corners(const vx_cell &c, const T *p[8], vx_brick_cache<T> &) const {
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int x, y, z;
            vx_cell_corner(&c, k, &x, &y, &z);
            p[k] = voxel(x, y, z);
        }
    }
};
template <typename T> struct vx_sparse_store {
    typedef T elem;
    const int32_t *table;
    const T *pool, *background;
    int bn[3], nc;
    __device__ __forceinline__ size_t key(int x, int y, int z) const {
        return ((size_t)(z >> VX_BRICK_LOG2) * bn[1] + (y >> VX_BRICK_LOG2)) * bn[0] + (x >> VX_BRICK_LOG2);
    }
    __device__ __forceinline__ const T *brick(size_t k) const {
        int32_t slot = __ldg(table + k);
        return slot < 0 ? nullptr : pool + (size_t)slot * VX_BRICK_VOXELS * nc;
    }
    __device__ __forceinline__ const T *in_brick(const T *base, int x, int y, int z) const {
        size_t local = ((size_t)(z & (VX_BRICK - 1)) * VX_BRICK + (y & (VX_BRICK - 1))) * VX_BRICK + (x & (VX_BRICK - 1));
        return base ? base + local * nc : background;
    }
    /* Corner 0's brick goes through the ray's cache; a corner in another brick (a cell
     * straddling a brick face) reads the table itself. */
    __device__ __forceinline__ void corners(const vx_cell &c, const T *p[8], vx_brick_cache<T> &cc) const {
        size_t k0 = key(c.x[0], c.y[0], c.z[0]);
        if (k0 != cc.key) { cc.key = k0; cc.base = brick(k0); }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int x, y, z;
            vx_cell_corner(&c, k, &x, &y, &z);
            size_t kk = key(x, y, z);
            p[k] = in_brick(kk == k0 ? cc.base : brick(kk), x, y, z);
        }
    }
};

/* The renderer's op for vx_march_run: march.h's trilinear cell and blend with NC a
 * constant (the channels stay in registers), and decode.h's decoder chosen at compile time.
 * vx_march_run<vx_render_op> calls sample() and visit() directly (march.h). */
template <class S, int DEC, int DEG> struct vx_render_op {
    const vx_march_params *m;
    S store;
    vx_brick_cache<typename S::elem> cache; /* sparse storage: the ray's current brick */

    static __device__ __forceinline__ float sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb) {
        constexpr int NC = vx_dec_traits<DEC, DEG>::nc;
        vx_render_op *r = (vx_render_op *)op;
        const vx_march_params *m = r->m;
        vx_cell c;
        float v[8][NC], raw[NC];
        const typename S::elem *cp[8];
        vx_trilinear_cell(m->nx, m->ny, m->nz, s->p, &c);
        r->store.corners(c, cp, r->cache);
#pragma unroll
        for (int k = 0; k < 8; k++) vx_load_point<NC>(cp[k], v[k]);
        const float *vp[8] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
        vx_cell_blend(&c, vp, NC, raw);
        if constexpr (DEC == VX_DEC_SCALAR) {
            float sigma = vx_decode_scalar(&m->dec, raw, rgb);
            if (m->dec.shade && sigma > 0.0f) { /* march.h's gradient probes, channel 0 */
                float f[6];
                for (int q = 0; q < 6; q++) {
                    vx_trilinear_cell(m->nx, m->ny, m->nz, vx_gradient_probe(s->p, q), &c);
                    r->store.corners(c, cp, r->cache);
#pragma unroll
                    for (int k = 0; k < 8; k++) vx_load_point<1>(cp[k], v[k]);
                    vx_cell_blend(&c, vp, 1, f + q);
                }
                vx_shade(m, f, d, rgb);
            }
            return sigma;
        } else if constexpr (DEC == VX_DEC_SH) {
            return vx_decode_sh(&m->dec, DEG, raw, d, rgb);
        } else {
            return vx_decode_rgba(&m->dec, raw, rgb);
        }
    }
    static __device__ __forceinline__ void visit(void *, const vx_composite *, const vx_sample *, const float *,
                                                 float) {}
};

// ----------------------------------------------------------------------------------------
// the fused kernel: one thread per pixel runs vx_march_run with the renderer's op

template <class S, int DEC, int DEG>
__global__ void __launch_bounds__(128)
vx_render_kernel(const __grid_constant__ vx_march_params m, const __grid_constant__ vx_camera cam, const S store,
                 const unsigned char *__restrict__ occ, float *__restrict__ out_rgb,
                 float *__restrict__ out_alpha, float *__restrict__ out_depth,
                 unsigned long long *__restrict__ counters) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    int inside = j < cam.width && i < cam.height;
    int samples = 0, hit = 0;
    if (inside) {
        vx_vec3 o, d;
        vx_camera_ray(&cam, (float)j + 0.5f, (float)i + 0.5f, &o, &d);
        vx_render_op<S, DEC, DEG> op = {&m, store, {~(size_t)0, nullptr}};
        float u = vx_pixel_jitter(m.jitter_seed, (unsigned long long)i * cam.width + j);
        vx_ray_result r = vx_march_run(&m, occ, o, d, u, &op);
        samples = r.samples;
        hit = r.samples > 0 || r.trans < 1.0f; /* as render_cpu.c counts it */
        size_t px = (size_t)i * cam.width + j;
        for (int c = 0; c < 3; c++) out_rgb[px * 3 + c] = r.rgb[c];
        out_alpha[px] = 1.0f - r.trans;
        if (out_depth) out_depth[px] = r.depth;
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

template <class S>
static int vx__launch_render(const vx_cuda_volume *cv, const S &store, const vx_camera *c, float *depth) {
    dim3 threads(VX_BLOCK_X, VX_BLOCK_Y);
    dim3 blocks(vx_ceil_div(c->width, VX_BLOCK_X), vx_ceil_div(c->height, VX_BLOCK_Y));
    const vx_march_params &m = cv->mp;
#define VX_GO(DEC, DEG) \
    vx_render_kernel<S, DEC, DEG><<<blocks, threads>>>(m, *c, store, cv->d_occ, cv->d_rgb, cv->d_alpha, depth, \
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

/* The store of the uploaded grid, typed. */
template <typename T> static int vx__launch_typed(const vx_cuda_volume *cv, const vx_camera *c, float *depth) {
    const vx_march_params &m = cv->mp;
    if (cv->sparse) {
        const T *pool = (const T *)cv->d_grid;
        vx_sparse_store<T> st = {cv->d_table, pool, pool + cv->nbricks * VX_BRICK_VOXELS * m.nc,
                                 {cv->bn[0], cv->bn[1], cv->bn[2]}, m.nc};
        return vx__launch_render(cv, st, c, depth);
    }
    size_t sy = (size_t)m.nx * m.nc;
    vx_dense_store<T> st = {(const T *)cv->d_grid, sy, sy * m.ny, (size_t)m.nc};
    return vx__launch_render(cv, st, c, depth);
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

/* (Re)build the device occupancy grid: on the device from a dense grid, or, for sparse
 * bricks, copied from the host grid volume.c built (its sparse path reads an absent
 * brick's background once, so it stays cheap at 4096^3). */
static int vx__occ_update(vx_cuda_volume *cv, const vx_volume *v) {
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
    if (!cv->sparse) return vx_occupancy_build_cuda(cv->d_grid, cv->half, mp, cv->d_occ);
    if (!v->occ || v->occ_count != count)
        return vx_error("cuda render: the sparse volume has no host occupancy grid to upload");
    return vx_cuda_upload(cv->d_occ, v->occ, count);
}

/* Upload n floats as float32, or as float16 through a float32 staging buffer. */
static int vx__upload_values(void *d_dst, const float *h_src, size_t n, int half) {
    if (!half) return vx_cuda_upload(d_dst, h_src, n * sizeof(float));
    float *d_tmp = NULL;
    int rc = vx_cuda_alloc((void **)&d_tmp, n * sizeof(float), "float16 upload buffer") ||
             vx_cuda_upload(d_tmp, h_src, n * sizeof(float)) || vx_cuda_to_half(d_tmp, d_dst, n) || vx_cuda_sync();
    vx_cuda_free(d_tmp);
    return rc ? -1 : 0;
}

/* The grid's storage on the device: dense values, or the brick table, the pool and the
 * background (stored right after the pool, so absent bricks read it like any voxel). */
static int vx__upload_grid(vx_cuda_volume *cv, const vx_grid *g) {
    size_t es = cv->half ? 2 : 4;
    if (!g->sparse) {
        size_t count = vx_grid_count(g);
        if (vx_cuda_alloc(&cv->d_grid, count * es, "grid on the device")) return -1;
        return vx__upload_values(cv->d_grid, g->data, count, cv->half);
    }
    const vx_sparse *sp = g->sparse;
    cv->sparse = 1;
    memcpy(cv->bn, sp->bn, sizeof cv->bn);
    cv->nbricks = sp->nbricks;
    size_t ntab = (size_t)sp->bn[0] * sp->bn[1] * sp->bn[2];
    size_t npool = sp->nbricks * VX_BRICK_VOXELS * (size_t)sp->nc;
    if (vx_cuda_alloc((void **)&cv->d_table, ntab * sizeof(int32_t), "brick table on the device") ||
        vx_cuda_upload(cv->d_table, sp->table, ntab * sizeof(int32_t)) ||
        vx_cuda_alloc(&cv->d_grid, (npool + sp->nc) * es, "brick pool on the device") ||
        (npool && vx__upload_values(cv->d_grid, sp->pool, npool, cv->half)))
        return -1;
    return vx__upload_values((char *)cv->d_grid + npool * es, sp->background, (size_t)sp->nc, cv->half);
}

extern "C" int vx_volume_upload_cuda(vx_cuda_volume **out, const vx_volume *v, const vx_grid *g, int half) {
    *out = NULL;
    if (vx__check_params(&v->mp, g->nx, g->ny, g->nz, g->nc)) return -1;
    if (g->sparse && g->sparse->nc != g->nc)
        return vx_error("cuda render: sparse grid has %d channels, the grid says %d", g->sparse->nc, g->nc);
    vx_cuda_volume *cv = (vx_cuda_volume *)vx_calloc(1, sizeof *cv, "CUDA volume");
    if (!cv) return -1;
    cv->mp = v->mp;
    cv->half = half;
    if (vx__upload_grid(cv, g) ||
        vx_cuda_alloc((void **)&cv->d_counters, 2 * sizeof(unsigned long long), "frame counters") ||
        vx_cuda_timer_create(&cv->timer) || vx__occ_update(cv, v) || vx_cuda_sync()) {
        vx_volume_free_cuda(cv);
        return -1;
    }
    *out = cv;
    return 0;
}

extern "C" int vx_volume_update_cuda(vx_cuda_volume *cv, const vx_volume *v) {
    const vx_march_params *mp = &v->mp;
    if (vx__check_params(mp, cv->mp.nx, cv->mp.ny, cv->mp.nz, cv->mp.nc)) return -1;
    int rebuild = memcmp(&mp->dec, &cv->mp.dec, sizeof mp->dec) || mp->occ_b != cv->mp.occ_b ||
                  memcmp(mp->occ_n, cv->mp.occ_n, sizeof mp->occ_n);
    cv->mp = *mp;
    return rebuild ? vx__occ_update(cv, v) : 0;
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
    float *depth = want_depth ? cv->d_depth : NULL, t;
    if (vx_cuda_zero(cv->d_counters, 2 * sizeof(unsigned long long)) || vx_cuda_timer_start(cv->timer)) return -1;
    if (cv->half ? vx__launch_typed<__half>(cv, c, depth) : vx__launch_typed<float>(cv, c, depth)) return -1;
    if (vx_cuda_timer_stop(cv->timer, &t)) return -1;
    if (ms) *ms = t;
    return 0;
}

static int vx__counters(vx_cuda_volume *cv, long long *samples, long long *rays_hit) {
    unsigned long long h[2];
    if (vx_cuda_download(h, cv->d_counters, sizeof h)) return -1;
    *samples = (long long)h[0];
    *rays_hit = (long long)h[1];
    return 0;
}

extern "C" int vx_render_cuda(vx_cuda_volume *cv, const vx_camera *c, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("cuda render: frame %d x %d does not match the camera's %d x %d", f->width,
                        f->height, c->width, c->height);
    if (vx__render(cv, c, f->depth != NULL, NULL)) return -1;
    size_t npix = (size_t)c->width * c->height;
    if (vx_cuda_download(f->rgb, cv->d_rgb, npix * 3 * sizeof(float)) ||
        vx_cuda_download(f->alpha, cv->d_alpha, npix * sizeof(float)) ||
        (f->depth && vx_cuda_download(f->depth, cv->d_depth, npix * sizeof(float))))
        return -1;
    return vx__counters(cv, &f->samples, &f->rays_hit);
}

extern "C" int vx_render_device_cuda(vx_cuda_volume *cv, const vx_camera *c, int want_depth, float *ms,
                                     long long *samples, long long *rays_hit) {
    if (vx__render(cv, c, want_depth, ms)) return -1;
    return vx__counters(cv, samples, rays_hit);
}

extern "C" int vx_volume_occupancy_cuda(const vx_cuda_volume *cv, unsigned char *occ, size_t count) {
    if (count != cv->occ_count)
        return vx_error("cuda occupancy: asked for %zu cells, the device grid has %zu", count, cv->occ_count);
    return count ? vx_cuda_download(occ, cv->d_occ, count) : 0;
}

extern "C" void vx_volume_free_cuda(vx_cuda_volume *cv) {
    if (!cv) return;
    vx_cuda_free(cv->d_grid);
    vx_cuda_free(cv->d_occ);
    vx_cuda_free(cv->d_rgb);
    vx_cuda_free(cv->d_alpha);
    vx_cuda_free(cv->d_depth);
    vx_cuda_free(cv->d_counters);
    vx_cuda_free(cv->d_table);
    vx_cuda_timer_destroy(cv->timer);
    free(cv);
}

/* The device frame buffers of the last render (the viewer's interop reads them). */
extern "C" int vx_volume_frame_cuda(const vx_cuda_volume *cv, const float **d_rgb, const float **d_alpha) {
    if (!cv->d_rgb) return vx_error("cuda render: no frame has been rendered into this volume yet");
    *d_rgb = cv->d_rgb;
    *d_alpha = cv->d_alpha;
    return 0;
}
