/* fit_march.h - the per-ray maths of `voxray fit`, shared (VX_HD) by fit_cpu.c and the
 * CUDA twin kernels/fit.cu: the backward of vx_march() for the sh decoder (relu density,
 * plenoxels colour) through compositing, decoding and the trilinear gather, scattered
 * into a grid-shaped gradient. docs/FIT.md derives every line. */
#ifndef VX_FIT_MARCH_H
#define VX_FIT_MARCH_H

#include "march.h"

#ifndef __CUDACC__
#include <string.h>
#endif

/* ---- scatter helpers: atomics on the GPU, OpenMP atomics on the CPU --------------------- */
#ifdef __CUDACC__
static __host__ __device__ __forceinline__ void vx_fit_add(float *p, float v) {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v; /* host code in a .cu file is single-threaded here */
#endif
}
static __host__ __device__ __forceinline__ void vx_fit_max(float *p, float v) {
#ifdef __CUDA_ARCH__
    if (v > *p) atomicMax((int *)p, __float_as_int(v)); /* non-negative floats order like ints */
#else
    if (v > *p) *p = v;
#endif
}
#else
static inline void vx_fit_add(float *p, float v) {
    _Pragma("omp atomic") *p += v;
}
static inline void vx_fit_max(float *p, float v) {
    /* non-negative floats order like their bit patterns: compare-and-swap on ints */
    int *ip = (int *)p, want, cur = __atomic_load_n(ip, __ATOMIC_RELAXED);
    memcpy(&want, &v, sizeof want);
    while (want > cur && !__atomic_compare_exchange_n(ip, &cur, want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
#endif

/* ---- voxel addressing: dense or bricked storage (fit.h) ----------------------------------- */

/* How lattice points map to entries of the model's per-voxel arrays. table NULL: dense,
 * (z*ny + y)*nx + x. Otherwise brick (x>>3, y>>3, z>>3) has pool slot table[...] (0: the
 * null brick of zeros) and the entry is slot*512 + the point's place in the brick (sparse.h
 * order); bxyz[3*slot] gives a slot's brick back. */
typedef struct vx_fit_index_s {
    int nx, ny, nz;
    int bn[3];
    const int32_t *table, *bxyz;
} vx_fit_index;

VX_HD size_t vx_fit_vid(const vx_fit_index *L, int x, int y, int z) {
    if (!L->table) return ((size_t)z * L->ny + y) * L->nx + x;
    size_t slot = (size_t)L->table[((size_t)(z >> VX_BRICK_LOG2) * L->bn[1] + (y >> VX_BRICK_LOG2)) * L->bn[0] +
                                   (x >> VX_BRICK_LOG2)];
    return slot * VX_BRICK_VOXELS +
           (((size_t)(z & (VX_BRICK - 1)) * VX_BRICK + (y & (VX_BRICK - 1))) * VX_BRICK + (x & (VX_BRICK - 1)));
}

/* Entry v is in the null brick (bricked storage only): it reads zero and takes no
 * gradient or weight (nothing ever consumes them), so scatters skip it. */
VX_HD int vx_fit_is_null(const vx_fit_index *L, size_t v) { return L->table && v < VX_BRICK_VOXELS; }

/* The lattice point of entry v; 0 when it is one (dense: always; bricked: not the null
 * brick and inside the lattice, since the last bricks on each axis stick out). */
VX_HD int vx_fit_xyz(const vx_fit_index *L, size_t v, int *x, int *y, int *z) {
    if (!L->table) {
        *x = (int)(v % L->nx);
        *y = (int)((v / L->nx) % L->ny);
        *z = (int)(v / ((size_t)L->nx * L->ny));
        return 0;
    }
    size_t slot = v / VX_BRICK_VOXELS, local = v % VX_BRICK_VOXELS;
    if (slot == 0) return -1;
    *x = L->bxyz[3 * slot] * VX_BRICK + (int)(local % VX_BRICK);
    *y = L->bxyz[3 * slot + 1] * VX_BRICK + (int)((local / VX_BRICK) % VX_BRICK);
    *z = L->bxyz[3 * slot + 2] * VX_BRICK + (int)(local / (VX_BRICK * VX_BRICK));
    return *x < L->nx && *y < L->ny && *z < L->nz ? 0 : -1;
}

/* ---- pieces (each has its own gradient check in tests/test_fit.c) ----------------------- */

/* One compositing step's backward. Forward: alpha = 1 - exp(-sigma*delta), w = T*alpha,
 * colour += w*c, T' = T*(1 - alpha), final C = sum w c + T_end*bg.
 * Given g = dL/dC, acc = sum_{j<=k} w_j c_j (this sample included), T' = T after this
 * sample and the final C: dL/dc = w*g and dL/dsigma = delta*g.(T'*c - (C - acc)). */
VX_HD float vx_fit_composite_dsigma(const float *g, const float *c, float t_after, const float *acc,
                                    const float *C, float delta) {
    float s = 0.0f;
    for (int k = 0; k < 3; k++) s += g[k] * (t_after * c[k] - (C[k] - acc[k]));
    return delta * s;
}

/* Backward of the sh decoder (relu density x scale, colour max(0, SH.basis + 0.5)) at raw
 * channels `raw`, basis b (nb functions): draw = dL/draw from dsigma and drgb. */
VX_HD void vx_fit_decode_sh_backward(const vx_decoder *dec, const float *raw, const float *b, int nb,
                                     float dsigma, const float *drgb, float *draw) {
    draw[0] = raw[0] > 0.0f ? dsigma * dec->density_scale : 0.0f;
    for (int c = 0; c < 3; c++) {
        const float *k = raw + 1 + c * nb;
        float s = 0.0f;
        for (int i = 0; i < nb; i++) s += k[i] * b[i];
        float gc = s + 0.5f > 0.0f ? drgb[c] : 0.0f;
        for (int i = 0; i < nb; i++) draw[1 + c * nb + i] = gc * b[i];
    }
}

/* The mlp decoder's backward at one sample, split so the CPU and the CUDA fit share the
 * maths: vx_fit_mlp_backward recomputes the network's activations (no per-sample storage)
 * and fills the record below with what dL/dweights needs; the CPU adds that into one array
 * per thread at once (vx_fit_mlp_record_grad), the CUDA fit writes records to a buffer that
 * a reduction kernel sums (kernels/fit_mlp.cuh). h2 and d2 are used with 2 hidden layers
 * only; x[31] and dout[3] pad to 16-byte multiples (the record is 292 floats). */
#ifdef __cplusplus
#define VX_ALIGN16 alignas(16)
#else
#define VX_ALIGN16 _Alignas(16)
#endif
typedef struct {
    VX_ALIGN16 float x[VX_MLP_IN + 1]; /* the input: features, then the direction's SH basis
                                        * (16-byte aligned: the CUDA fit copies records as float4s) */
    float h1[VX_MLP_WIDTH], d1[VX_MLP_WIDTH]; /* first hidden layer: activation, dL/d(pre-activation) */
    float h2[VX_MLP_WIDTH], d2[VX_MLP_WIDTH]; /* second hidden layer, likewise */
    float dout[4];                     /* dL/d(output pre-activation), r g b */
} vx_fit_mlp_record;

/* Given dL/drgb at raw channels `raw` seen along d, with packed weights w: the record and
 * dL/dfeatures (15 values). */
VX_HD void vx_fit_mlp_backward(const float *w, int layers, const float *raw, vx_vec3 d, const float *drgb,
                               vx_fit_mlp_record *a, float *dfeat) {
    const int W = VX_MLP_WIDTH;
    vx_mlp_input(raw, d, a->x);
    a->x[VX_MLP_IN] = 0.0f;
    for (int o = 0; o < W; o++) a->h1[o] = w[VX_MLP_B0 + o];
    for (int i = 0; i < VX_MLP_IN; i++)
        for (int o = 0; o < W; o++) a->h1[o] += w[i * W + o] * a->x[i];
    for (int o = 0; o < W; o++) a->h1[o] = vx_maxf(a->h1[o], 0.0f);
    const float *w1 = w + VX_MLP_L1, *hl = a->h1;
    if (layers == 2) {
        for (int o = 0; o < W; o++) {
            float s = w1[W * W + o];
            for (int i = 0; i < W; i++) s += w1[o * W + i] * a->h1[i];
            a->h2[o] = vx_maxf(s, 0.0f);
        }
        hl = a->h2;
    }
    const float *w2 = w + vx_mlp_out_offset(layers);
    for (int c = 0; c < 3; c++) {
        float s = w2[3 * W + c];
        for (int o = 0; o < W; o++) s += w2[c * W + o] * hl[o];
        float sg = vx_sigmoidf(s);
        a->dout[c] = drgb[c] * sg * (1.0f - sg);
    }
    a->dout[3] = 0.0f;
    /* back through the output layer and the last hidden layer's relu */
    float *dl = layers == 2 ? a->d2 : a->d1;
    for (int o = 0; o < W; o++) {
        float g = w2[o] * a->dout[0] + w2[W + o] * a->dout[1] + w2[2 * W + o] * a->dout[2];
        dl[o] = hl[o] > 0.0f ? g : 0.0f;
    }
    if (layers == 2) {
        for (int i = 0; i < W; i++) a->d1[i] = 0.0f;
        for (int o = 0; o < W; o++) {
            if (a->d2[o] == 0.0f) continue;
            for (int i = 0; i < W; i++) a->d1[i] += w1[o * W + i] * a->d2[o];
        }
        for (int i = 0; i < W; i++) a->d1[i] = a->h1[i] > 0.0f ? a->d1[i] : 0.0f;
    }
    for (int i = 0; i < VX_MLP_FEATURES; i++) {
        float g = 0.0f;
        for (int o = 0; o < W; o++) g += w[i * W + o] * a->d1[o];
        dfeat[i] = g;
    }
}

/* The same with the network's input already in the record (a->x, its first VX_MLP_IN
 * entries), for the direction modes that read the density gradient (vx_mlp_input_dir).
 * A copy of vx_fit_mlp_backward's body on purpose: with the view direction's backward built
 * as vx_mlp_input and then this, gcc compiled the CPU fit's step 7-12% slower (session 33,
 * the same iterations timed before and after), so the view direction keeps its own text. */
VX_HD void vx_fit_mlp_backward_x(const float *w, int layers, const float *drgb, vx_fit_mlp_record *a, float *dfeat) {
    const int W = VX_MLP_WIDTH;
    a->x[VX_MLP_IN] = 0.0f;
    for (int o = 0; o < W; o++) a->h1[o] = w[VX_MLP_B0 + o];
    for (int i = 0; i < VX_MLP_IN; i++)
        for (int o = 0; o < W; o++) a->h1[o] += w[i * W + o] * a->x[i];
    for (int o = 0; o < W; o++) a->h1[o] = vx_maxf(a->h1[o], 0.0f);
    const float *w1 = w + VX_MLP_L1, *hl = a->h1;
    if (layers == 2) {
        for (int o = 0; o < W; o++) {
            float s = w1[W * W + o];
            for (int i = 0; i < W; i++) s += w1[o * W + i] * a->h1[i];
            a->h2[o] = vx_maxf(s, 0.0f);
        }
        hl = a->h2;
    }
    const float *w2 = w + vx_mlp_out_offset(layers);
    for (int c = 0; c < 3; c++) {
        float s = w2[3 * W + c];
        for (int o = 0; o < W; o++) s += w2[c * W + o] * hl[o];
        float sg = vx_sigmoidf(s);
        a->dout[c] = drgb[c] * sg * (1.0f - sg);
    }
    a->dout[3] = 0.0f;
    /* back through the output layer and the last hidden layer's relu */
    float *dl = layers == 2 ? a->d2 : a->d1;
    for (int o = 0; o < W; o++) {
        float g = w2[o] * a->dout[0] + w2[W + o] * a->dout[1] + w2[2 * W + o] * a->dout[2];
        dl[o] = hl[o] > 0.0f ? g : 0.0f;
    }
    if (layers == 2) {
        for (int i = 0; i < W; i++) a->d1[i] = 0.0f;
        for (int o = 0; o < W; o++) {
            if (a->d2[o] == 0.0f) continue;
            for (int i = 0; i < W; i++) a->d1[i] += w1[o * W + i] * a->d2[o];
        }
        for (int i = 0; i < W; i++) a->d1[i] = a->h1[i] > 0.0f ? a->d1[i] : 0.0f;
    }
    for (int i = 0; i < VX_MLP_FEATURES; i++) {
        float g = 0.0f;
        for (int o = 0; o < W; o++) g += w[i * W + o] * a->d1[o];
        dfeat[i] = g;
    }
}


/* dL/dweights of one record added into wgrad (packed layout), each thread its own array:
 * the host's twin of fit_mlp.cuh's reduction (vx_fit_mlp_wgrad_kernel). */
#define VX__WADD(p, v) (*(p) += (v))
VX_HDI void vx_fit_mlp_record_grad(int layers, const vx_fit_mlp_record *a, float *wgrad) {
    const int W = VX_MLP_WIDTH;
    const float *hl = layers == 2 ? a->h2 : a->h1;
    float *g2 = wgrad + vx_mlp_out_offset(layers);
    for (int c = 0; c < 3; c++) {
        if (a->dout[c] == 0.0f) continue;
        VX__WADD(g2 + 3 * W + c, a->dout[c]);
        for (int o = 0; o < W; o++) VX__WADD(g2 + c * W + o, a->dout[c] * hl[o]);
    }
    if (layers == 2)
        for (int o = 0; o < W; o++) {
            if (a->d2[o] == 0.0f) continue;
            float *g1 = wgrad + VX_MLP_L1;
            VX__WADD(g1 + W * W + o, a->d2[o]);
            for (int i = 0; i < W; i++) VX__WADD(g1 + o * W + i, a->d2[o] * a->h1[i]);
        }
    for (int o = 0; o < W; o++) {
        if (a->d1[o] == 0.0f) continue;
        VX__WADD(wgrad + VX_MLP_B0 + o, a->d1[o]);
        for (int i = 0; i < VX_MLP_IN; i++) VX__WADD(wgrad + i * W + o, a->x[i] * a->d1[o]);
    }
}
#undef VX__WADD

/* The host's backward of the mlp decoder at raw channels `raw` seen along d: draw[0] from
 * dsigma as for the sh decoder, draw[1..15] = dL/dfeatures, and dL/dweights added into
 * wgrad when it is not NULL. */
VX_HD void vx_fit_decode_mlp_backward(const vx_decoder *dec, const float *raw, vx_vec3 d, float dsigma,
                                      const float *drgb, float *draw, float *wgrad) {
    vx_fit_mlp_record a;
    draw[0] = raw[0] > 0.0f ? dsigma * dec->density_scale : 0.0f;
    vx_fit_mlp_backward(vx_decoder_mlp_weights(dec), vx_decoder_mlp_layers(dec), raw, d, drgb, &a, draw + 1);
    if (wgrad) vx_fit_mlp_record_grad(vx_decoder_mlp_layers(dec), &a, wgrad);
}

/* The trilinear cell at index-space point p and its eight corners' entries (in
 * vx_trilinear_cell's corner order). */
VX_HD void vx_fit_cell(const vx_fit_index *L, vx_vec3 p, vx_cell *c, size_t *idx) {
    vx_trilinear_cell(L->nx, L->ny, L->nz, p, c);
    for (int k = 0; k < 8; k++) {
        int x, y, z;
        vx_cell_corner(c, k, &x, &y, &z);
        idx[k] = vx_fit_vid(L, x, y, z);
    }
}

/* The corners' entries and weights only. */
VX_HD void vx_fit_corners(const vx_fit_index *L, vx_vec3 p, size_t *idx, float *w) {
    vx_cell c;
    vx_fit_cell(L, p, &c, idx);
    for (int k = 0; k < 8; k++) w[k] = c.w[k];
}

/* Trilinear interpolation of the nc channels at p: the renderer's blend (vx_cell_blend, the
 * same corner order and rounding) over either storage. */
VX_HD void vx_fit_fetch(const vx_fit_index *L, const float *data, int nc, vx_vec3 p, float *out) {
    vx_cell c;
    size_t idx[8];
    const float *v[8];
    vx_fit_cell(L, p, &c, idx);
    for (int k = 0; k < 8; k++) v[k] = data + idx[k] * (size_t)nc;
    vx_cell_blend(&c, v, nc, out);
}

/* Channel 0 alone at p: the density the reflected direction's probes read. */
VX_HD float vx_fit_density_at(const vx_fit_index *L, const float *data, int nc, vx_vec3 p) {
    vx_cell c;
    size_t idx[8];
    const float *v[8];
    float out;
    vx_fit_cell(L, p, &c, idx);
    for (int k = 0; k < 8; k++) v[k] = data + idx[k] * (size_t)nc;
    vx_cell_blend(&c, v, 1, &out);
    return out;
}

/* The density gradient the mlp's input reads at p when the decoder reflects the direction
 * (vx_decoder_mlp_reflect): march.h's six gradient probes over the fit's storage, the
 * renderer's values bit for bit. No gradient flows through the normal (Ref-NeRF's first
 * form): the backward treats the reflected direction (and n.d) as constant inputs, as it
 * does the view direction. */
VX_CPU_OUTLINE vx_vec3 vx_fit_normal(const vx_march_params *m, const vx_fit_index *L, const float *data,
                                     vx_vec3 p) { /* out of line on the CPU, as vx_grid_op_reflect */
    float f[6];
    for (int k = 0; k < 6; k++) f[k] = vx_fit_density_at(L, data, m->nc, vx_gradient_probe(p, k));
    return vx_mlp_normal(m, f);
}

#ifndef __CUDA_ARCH__
/* vx_fit_decode_mlp_backward where the decoder's input reads the density gradient g
 * (vx_decoder_mlp_reflect): out of line, so that the view direction's backward keeps its
 * code. */
VX_CPU_OUTLINE void vx_fit_decode_mlp_backward_dir(const vx_decoder *dec, const float *raw, vx_vec3 d, vx_vec3 g,
                                                   float dsigma, const float *drgb, float *draw, float *wgrad) {
    vx_fit_mlp_record a;
    draw[0] = raw[0] > 0.0f ? dsigma * dec->density_scale : 0.0f;
    vx_mlp_input_dir(raw, d, g, vx_decoder_mlp_dir_mode(dec), a.x);
    vx_fit_mlp_backward_x(vx_decoder_mlp_weights(dec), vx_decoder_mlp_layers(dec), drgb, &a, draw + 1);
    if (wgrad) vx_fit_mlp_record_grad(vx_decoder_mlp_layers(dec), &a, wgrad);
}
#endif

/* Adjoint of the trilinear gather: grad[corner][c] += w_corner * draw[c]. Corners that
 * coincide at the border (n == 1) simply receive both shares, as the gather read both. */
VX_HD void vx_fit_trilinear_scatter(float *grad, const vx_fit_index *L, int nc, vx_vec3 p, const float *draw) {
    size_t idx[8];
    float w[8];
    vx_fit_corners(L, p, idx, w);
    for (int j = 0; j < 8; j++) {
        if (w[j] == 0.0f || vx_fit_is_null(L, idx[j])) continue;
        float *gp = grad + idx[j] * (size_t)nc;
        for (int c = 0; c < nc; c++)
            if (draw[c] != 0.0f) vx_fit_add(gp + c, w[j] * draw[c]);
    }
}

/* ---- ray regularisers (docs/FIT.md "Ray regularisers") --------------------------------- */

/* Weights of the per-ray regularisers, each already multiplied by 1/batch (the batch's
 * terms are means over its rays, like the photometric loss). 0: off. */
typedef struct {
    float sparsity;   /* lambda_s: sum over the ray's samples of log(1 + 2 sigma^2) */
    float distortion; /* lambda_d: Mip-NeRF 360's L_dist over the ray's samples */
    float binary;     /* lambda_b: sum over the ray's samples of alpha (1 - alpha), alpha =
                       * 1 - exp(-sigma delta): each sample clear or opaque */
} vx_fit_reg;

VX_HD int vx_fit_reg_on(const vx_fit_reg *r) {
    return r && (r->sparsity != 0.0f || r->distortion != 0.0f || r->binary != 0.0f);
}

/* What the forward pass sums over the composited samples (sigma > 0; every other sample
 * has w = 0 and sigma = 0, so it adds nothing to any term): the sparsity and binary sums,
 * and for the distortion W = sum w, S = sum w m, D = L_dist, with the midpoints m taken
 * relative to the first composited sample's (L_dist is invariant to that shift; it keeps
 * the running sums small). */
typedef struct {
    float sparse, binary, W, S, D, m0;
    int n;
} vx_fit_reg_sums;

VX_HD void vx_fit_reg_sums_zero(vx_fit_reg_sums *a) {
    a->sparse = a->binary = a->W = a->S = a->D = a->m0 = 0.0f;
    a->n = 0;
}

/* The backward's running sums over the samples before the current one. */
typedef struct {
    float W, S, P;
} vx_fit_reg_run;

/* Forward: add composited sample (sigma, weight w, midpoint tm, length delta) to a.
 * L_dist = sum_ij w_i w_j |m_i - m_j| + 1/3 sum_i w_i^2 delta_i, the pair sum as
 * 2 sum_i w_i (m_i W_<i - S_<i) since m rises along the ray. */
VX_HD void vx_fit_reg_forward(vx_fit_reg_sums *a, float sigma, float w, float tm, float delta) {
    if (!a->n++) a->m0 = tm;
    float m = tm - a->m0;
    a->sparse += log1pf(2.0f * sigma * sigma);
    float e = expf(-sigma * delta); /* 1 - alpha */
    a->binary += (1.0f - e) * e;
    a->D += 2.0f * w * (m * a->W - a->S) + (1.0f / 3.0f) * w * w * delta;
    a->W += w;
    a->S += w * m;
}

/* Backward: d(lambda_s sparse + lambda_b binary + lambda_d L_dist)/d sigma_k for composited
 * sample k, in ray order, given the forward totals `tot` and the running sums `run` (updated
 * here); t_after = T_{k+1}. With G_i = dL_dist/dw_i = 2 sum_j w_j |m_i - m_j| + 2/3 w_i delta_i
 * = 2 (m_i (2 W_<i - W) + S - 2 S_<i) + 2/3 w_i delta_i, dw_k/dsigma_k = delta_k T_{k+1}
 * and dw_i/dsigma_k = -delta_k w_i (i > k):
 *   dL_dist/dsigma_k = delta_k (T_{k+1} G_k - sum_{i>k} w_i G_i),
 * and sum_i w_i G_i = 2 L_dist (L_dist is quadratic in w), so the suffix is 2 D - P_<=k.
 * The binary term's d(alpha (1 - alpha))/d sigma = delta e (2 e - 1), e = exp(-sigma delta):
 * samples under alpha 1/2 are pushed clear, those above it opaque. */
VX_HD float vx_fit_reg_dsigma(const vx_fit_reg *lam, const vx_fit_reg_sums *tot, vx_fit_reg_run *run, float sigma,
                              float w, float t_after, float tm, float delta) {
    float ds = lam->sparsity * (4.0f * sigma / (1.0f + 2.0f * sigma * sigma));
    if (lam->binary != 0.0f) {
        float e = expf(-sigma * delta);
        ds += lam->binary * delta * e * (2.0f * e - 1.0f);
    }
    if (lam->distortion != 0.0f) {
        float m = tm - tot->m0;
        float G = 2.0f * (m * (2.0f * run->W - tot->W) + tot->S - 2.0f * run->S) + (2.0f / 3.0f) * w * delta;
        run->P += w * G;
        ds += lam->distortion * delta * (t_after * G - (2.0f * tot->D - run->P));
        run->W += w;
        run->S += w * m;
    }
    return ds;
}

/* The ray's regulariser loss from the forward sums. */
VX_HD float vx_fit_reg_loss(const vx_fit_reg *lam, const vx_fit_reg_sums *a) {
    return lam->sparsity * a->sparse + lam->binary * a->binary + lam->distortion * a->D;
}

/* ---- the whole ray --------------------------------------------------------------------- */

/* The forward op: vx_grid_op's fetch and decode over the fit's storage (vx_fit_fetch gives
 * the dense fetch's floats bit for bit), keeping the raw channels for the backward. */
VX_HD float vx_fit_forward_sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb);

typedef struct vx_fit_forward_op {
    vx_march_op op;
    const vx_march_params *m;
    const vx_fit_index *L;
    const float *data;
    float raw[VX_MAX_CHANNELS];
#ifndef __CUDA_ARCH__ /* host only: the CUDA fit trains the mlp in fit_mlp*.cuh */
    vx_vec3 sgrad;        /* the density gradient the last sample's network input read (reflect only) */
#endif
    VX_MARCH_OP_FUNCS(vx_fit_forward_sample, vx_march_no_visit)
} vx_fit_forward_op;

#ifndef __CUDA_ARCH__
/* A sample's decode when the decoder's input reads the density gradient (vx_decoder_mlp_reflect;
 * the gradient kept as sgrad for the backward, 0 where there is no density). Out of line,
 * so that the view direction's sample() below keeps its size and inlining. */
VX_CPU_OUTLINE float vx_fit_forward_reflect(vx_fit_forward_op *f, vx_vec3 p, vx_vec3 d, float *rgb) {
    const vx_decoder *dec = &f->m->dec;
    f->sgrad = vx_v3(0.0f, 0.0f, 0.0f);
    if (vx_density_activate(dec->density_act, f->raw[0]) * dec->density_scale > 0.0f)
        f->sgrad = vx_fit_normal(f->m, f->L, f->data, p);
    return vx_decode_mlp_dir(dec, vx_decoder_mlp_weights(dec), vx_decoder_mlp_layers(dec), f->raw, d, f->sgrad, rgb);
}
#endif

VX_HD float vx_fit_forward_sample(void *op, const vx_sample *s, vx_vec3 d, float *rgb) {
    vx_fit_forward_op *f = (vx_fit_forward_op *)op;
    vx_fit_fetch(f->L, f->data, f->m->nc, s->p, f->raw);
#ifndef __CUDA_ARCH__
    if (vx_decoder_mlp_reflect(&f->m->dec)) return vx_fit_forward_reflect(f, s->p, d, rgb);
#endif
    return vx_decode(&f->m->dec, f->raw, d, rgb);
}

VX_HD vx_fit_forward_op vx_fit_forward_op_make(const vx_march_params *m, const vx_fit_index *L, const float *data) {
    vx_fit_forward_op f;
    VX_MARCH_OP_INIT(&f.op, vx_fit_forward_sample, vx_march_no_visit);
    f.m = m;
    f.L = L;
    f.data = data;
#ifndef __CUDA_ARCH__
    f.sgrad = vx_v3(0.0f, 0.0f, 0.0f);
#endif
    return f;
}

/* vx_march() over the fit's storage: the colour the model renders for one ray. */
VX_HD vx_ray_result vx_fit_march(const vx_march_params *m, const vx_fit_index *L, const float *data,
                                 const unsigned char *occ, vx_vec3 o, vx_vec3 d) {
    vx_fit_forward_op f = vx_fit_forward_op_make(m, L, data);
    return vx_march_run(m, occ, o, d, 0.0f, VX_MARCH_OP_OF(&f));
}

/* The forward op that also sums the regularisers' terms (vx_fit_reg_forward) over the
 * composited samples. */
VX_HD void vx_fit_reg_visit(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w);

typedef struct vx_fit_forward_reg_op {
    vx_fit_forward_op fwd; /* first: its op head is this op's */
    vx_fit_reg_sums sums;
    VX_MARCH_OP_FUNCS(vx_fit_forward_sample, vx_fit_reg_visit)
} vx_fit_forward_reg_op;

VX_HD void vx_fit_reg_visit(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w) {
    vx_fit_forward_reg_op *f = (vx_fit_forward_reg_op *)op;
    (void)c; (void)rgb;
    float sigma = vx_maxf(f->fwd.raw[0], 0.0f) * f->fwd.m->dec.density_scale; /* the sh decoder's sigma */
    vx_fit_reg_forward(&f->sums, sigma, w, s->tm, s->tb - s->ta);
}

/* vx_fit_march() that also writes the regularisers' forward sums of the ray to *sums. */
VX_HD vx_ray_result vx_fit_march_reg(const vx_march_params *m, const vx_fit_index *L, const float *data,
                                     const unsigned char *occ, vx_vec3 o, vx_vec3 d, vx_fit_reg_sums *sums) {
    vx_fit_forward_reg_op f;
    f.fwd = vx_fit_forward_op_make(m, L, data);
    VX_MARCH_OP_INIT(&f.fwd.op, vx_fit_forward_sample, vx_fit_reg_visit);
    vx_fit_reg_sums_zero(&f.sums);
    vx_ray_result r = vx_march_run(m, occ, o, d, 0.0f, VX_MARCH_OP_OF(&f));
    *sums = f.sums;
    return r;
}

/* The per-point colour loss of one ray (DirectVoxGO's rgbper; fit --rgbper): weight x
 * sum over the composited samples of w_k |c_k - target|^2, with w_k = T alpha held
 * constant, so it reaches the colours only: dL/dc_k = 2 weight w_k (c_k - target). The
 * host's backward adds the ray's term to *loss. */
typedef struct {
    const float *target;
    float weight;
    float *loss;
} vx_fit_px_loss;

/* The backward op: the forward fetch and decode, and a visit that turns each composited
 * sample into dL/d(grid). */
VX_HD void vx_fit_backward_visit(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w);

typedef struct vx_fit_backward_op {
    vx_fit_forward_op fwd;  /* first: its op head is this op's, vx_fit_forward_sample fetches */
    const float *C, *g;     /* the forward colour and dL/dC */
    float *grad, *wmax;
    float b[16];            /* SH basis of the ray direction */
    int nb;
    const vx_fit_reg *reg;  /* regulariser weights (NULL: none) and the forward's sums */
    const vx_fit_reg_sums *sums;
    vx_fit_reg_run run;
#ifndef __CUDA_ARCH__      /* host only, like the mlp branch of the visit below */
    vx_vec3 dir;            /* the ray's direction (the mlp decoder's backward; reflect: with fwd.sgrad) */
    float *mlp_grad;        /* dL/d(mlp weights), or NULL */
    const vx_fit_px_loss *px; /* the per-point colour loss, or NULL */
#endif
    VX_MARCH_OP_FUNCS(vx_fit_forward_sample, vx_fit_backward_visit)
} vx_fit_backward_op;

VX_HD void vx_fit_backward_visit(void *op, const vx_composite *c, const vx_sample *s, const float *rgb, float w) {
    vx_fit_backward_op *f = (vx_fit_backward_op *)op;
    const vx_march_params *m = f->fwd.m;
    float draw[VX_MAX_CHANNELS];
    float drgb[3] = {w * f->g[0], w * f->g[1], w * f->g[2]};
    float dsigma = vx_fit_composite_dsigma(f->g, rgb, c->T, c->acc, f->C, s->tb - s->ta);
    if (f->reg)
        dsigma += vx_fit_reg_dsigma(f->reg, f->sums, &f->run, vx_maxf(f->fwd.raw[0], 0.0f) * m->dec.density_scale, w,
                                    c->T, s->tm, s->tb - s->ta);
#ifndef __CUDA_ARCH__ /* the CUDA fit trains the mlp decoder with fit_mlp.cuh's kernels (version 1
                       * refuses it), so device code leaves the branch out and v1 compiles as before */
    if (f->px) { /* the twins: vx_fit_mlpb_composite_kernel (mlp), vx_fit_sh_op's REG visit (SH) */
        float l = 0.0f;
        for (int ch = 0; ch < 3; ch++) {
            float e = rgb[ch] - f->px->target[ch];
            drgb[ch] += 2.0f * f->px->weight * w * e;
            l += e * e;
        }
        *f->px->loss += f->px->weight * w * l;
    }
    if (m->dec.type == VX_DEC_MLP && vx_decoder_mlp_reflect(&m->dec))
        vx_fit_decode_mlp_backward_dir(&m->dec, f->fwd.raw, f->dir, f->fwd.sgrad, dsigma, drgb, draw, f->mlp_grad);
    else if (m->dec.type == VX_DEC_MLP)
        vx_fit_decode_mlp_backward(&m->dec, f->fwd.raw, f->dir, dsigma, drgb, draw, f->mlp_grad);
    else
#endif
        vx_fit_decode_sh_backward(&m->dec, f->fwd.raw, f->b, f->nb, dsigma, drgb, draw);
    vx_fit_trilinear_scatter(f->grad, f->fwd.L, m->nc, s->p, draw);
    if (f->wmax && w > 0.0f) {
        size_t idx[8];
        float cw[8];
        vx_fit_corners(f->fwd.L, s->p, idx, cw);
        for (int j = 0; j < 8; j++)
            if (cw[j] > 0.0f && !vx_fit_is_null(f->fwd.L, idx[j])) vx_fit_max(f->wmax + idx[j], w);
    }
}

/* Backward of vx_fit_march() for the sh or mlp decoder. `fwd` is vx_fit_march(m, L, data, occ, o,
 * d) (the caller runs it; its colour is C), `g` = dL/dC. vx_march_run marches the same
 * samples again (same segments, occupancy skips and early stop) while the visit
 * accumulates dL/d(grid) into grad (atomics). If wmax is not NULL each touched voxel's
 * entry is raised to the sample's weight T*alpha (pruning statistics). Writes the colour
 * recomputed by this pass (equals fwd) to recomputed when not NULL. reg: the regularisers'
 * weights, whose gradient is added too (NULL or both 0: none); sums is then the ray's
 * forward sums from vx_fit_march_reg. px: the per-point colour loss (host only; NULL: off). */
VX_HD void vx_fit_march_backward_ex(const vx_march_params *m, const vx_fit_index *L, const float *data,
                                    const unsigned char *occ, vx_vec3 o, vx_vec3 d, const vx_ray_result *fwd,
                                    const float *g, float *grad, float *wmax, float *recomputed, const vx_fit_reg *reg,
                                    const vx_fit_reg_sums *sums, float *mlp_grad, const vx_fit_px_loss *px) {
    vx_fit_backward_op f;
#ifndef __CUDA_ARCH__
    f.dir = d;
    f.mlp_grad = mlp_grad;
    f.px = px && px->weight > 0.0f ? px : NULL;
#else
    (void)mlp_grad;
    (void)px;
#endif
    f.fwd = vx_fit_forward_op_make(m, L, data);
    VX_MARCH_OP_INIT(&f.fwd.op, vx_fit_forward_sample, vx_fit_backward_visit);
    f.C = fwd->rgb;
    f.g = g;
    f.grad = grad;
    f.wmax = wmax;
    f.reg = vx_fit_reg_on(reg) ? reg : NULL;
    f.sums = sums;
    f.run.W = f.run.S = f.run.P = 0.0f;
    f.nb = vx_sh_basis(m->dec.sh_degree, d, f.b);
    vx_ray_result r = vx_march_run(m, occ, o, d, 0.0f, VX_MARCH_OP_OF(&f));
    if (recomputed)
        for (int c = 0; c < 3; c++) recomputed[c] = r.rgb[c];
}

/* The same without the mlp weights' gradient (the sh decoder; mlp: features and density only). */
VX_HD void vx_fit_march_backward(const vx_march_params *m, const vx_fit_index *L, const float *data,
                                 const unsigned char *occ, vx_vec3 o, vx_vec3 d, const vx_ray_result *fwd,
                                 const float *g, float *grad, float *wmax, float *recomputed, const vx_fit_reg *reg,
                                 const vx_fit_reg_sums *sums) {
    vx_fit_march_backward_ex(m, L, data, occ, o, d, fwd, g, grad, wmax, recomputed, reg, sums, NULL, NULL);
}

/* ---- resampling ---------------------------------------------------------------------------- */

/* New voxel (x, y, z) sits at old index-space point a*i + b per axis (vx_fit_resample_map),
 * the product and the sum rounded separately (the CUDA twin uses __fmul_rn / __fadd_rn). */
#ifdef __CUDA_ARCH__
#define VX__AFFINE(a, i, b) __fadd_rn(__fmul_rn((a), (float)(i)), (b))
#else
#define VX__AFFINE(a, i, b) ((a) * (float)(i) + (b))
#endif
VX_HD vx_vec3 vx_fit_resample_point(const float a[3], const float b[3], int x, int y, int z) {
    return vx_v3(VX__AFFINE(a[0], x, b[0]), VX__AFFINE(a[1], y, b[1]), VX__AFFINE(a[2], z, b[2]));
}
#undef VX__AFFINE

/* The map of a resampling as one kernel argument. */
typedef struct {
    float a[3], b[3];
} vx_fit_affine;

/* A new voxel is alive when any old voxel it interpolates from (weight > 0) was. */
VX_HD int vx_fit_resample_alive(const vx_fit_index *L, const unsigned char *alive, vx_vec3 p) {
    size_t idx[8];
    float w[8];
    vx_fit_corners(L, p, idx, w);
    int a = 0;
    for (int j = 0; j < 8; j++) a |= w[j] > 0.0f && alive[idx[j]];
    return a;
}

/* Photometric loss of one ray: sum over rgb of (C - target)^2 times `scale` (the caller
 * passes 1/(3*batch) for the mean); writes g = dL/dC and returns the ray's term. */
VX_HD float vx_fit_mse_backward(const float *C, const float *target, float scale, float *g) {
    float l = 0.0f;
    for (int c = 0; c < 3; c++) {
        float e = C[c] - target[c];
        l += e * e;
        g[c] = 2.0f * e * scale;
    }
    return l * scale;
}

/* A ray's squared error, the mean over its 3 channels: what the error map of --error-map
 * accumulates (fit_errmap.h), computed alike by the CPU step and the CUDA kernel. */
VX_HD float vx_fit_ray_error(const float *C, const float *target) {
    float l = 0.0f;
    for (int c = 0; c < 3; c++) l += (C[c] - target[c]) * (C[c] - target[c]);
    return l * (1.0f / 3.0f);
}

/* A 64-bit hash of (seed, i) (splitmix64's finaliser): the per-element random numbers
 * both backends draw without sharing a generator's state. */
VX_HD unsigned long long vx_fit_hash(unsigned long long seed, unsigned long long i) {
    return vx_mix64(seed + (i + 1ull) * 0x9E3779B97F4A7C15ull);
}

/* Whether voxel i takes part in this step's TV (a hash of (seed, i) below fraction):
 * the CPU and the GPU pick the same subset. */
VX_HD int vx_fit_tv_selected(unsigned long long seed, unsigned long long i, float fraction) {
    if (fraction >= 1.0f) return 1;
    unsigned long long z = vx_fit_hash(seed, i);
    return (float)(z >> 40) * (1.0f / 16777216.0f) < fraction; /* top 24 bits, uniform in [0,1) */
}

/* Training pixel of ray r in a batch drawn with `seed`: view v (of views) and pixel row i,
 * column j of a w x h photo, uniform over all training pixels. */
VX_HD void vx_fit_pick_pixel(unsigned long long seed, unsigned long long r, int views, int w, int h, int *v, int *i,
                             int *j) {
    unsigned long long z = vx_fit_hash(seed, r);
    unsigned long long p = ((z >> 32) * (unsigned long long)w * (unsigned long long)h) >> 32; /* < w h */
    *v = (int)((z & 0xffffffffull) % (unsigned long long)views);
    *i = (int)(p / (unsigned long long)w);
    *j = (int)(p % (unsigned long long)w);
}

/* Error-driven ray sampling (`fit --error-map F`): every training view cut into tiles of
 * tile x tile pixels (the last row and column of tiles smaller), numbered view by view,
 * row-major; a CDF over all tiles (fit_errmap.c keeps it proportional to each tile's
 * recent squared error times its pixel count). Rays 0..n_map-1 of a batch are drawn from
 * the CDF, the rest uniformly with vx_fit_pick_pixel: n_map = 0 gives exactly its rays. */
typedef struct vx_fit_tiles_s {
    int views, w, h;            /* the training photos */
    int tile, tx, ty, n;        /* tile edge in pixels, tiles per row and column, views*tx*ty */
    int n_map;                  /* rays drawn from the CDF */
    const float *cdf;           /* n + 1 entries rising from cdf[0] = 0 to cdf[n] = 1 */
    int jitter;                 /* rays through a random point of their pixel (`fit --jitter`),
                                 * 0: through its centre (vx_fit_pixel_point) */
    int random_bg;              /* each ray against its own random background colour
                                 * (`fit --random-bg`, vx_fit_ray_background); 0: the model's */
} vx_fit_tiles;

/* Training pixel of ray r: for r < n_map a tile t with probability cdf[t+1] - cdf[t] (from
 * the top 24 bits of the ray's hash), then a pixel uniform inside the tile (from the low 32
 * bits); otherwise vx_fit_pick_pixel's uniform choice. The host sampler and the device
 * kernel both call this, so they draw the same rays. */
VX_HD void vx_fit_pick_pixel_map(const vx_fit_tiles *T, unsigned long long seed, unsigned long long r, int *v, int *i,
                                 int *j) {
    if ((long long)r >= (long long)T->n_map) {
        vx_fit_pick_pixel(seed, r, T->views, T->w, T->h, v, i, j);
        return;
    }
    unsigned long long z = vx_fit_hash(seed, r);
    float u = (float)(z >> 40) * (1.0f / 16777216.0f);
    int lo = 0, hi = T->n; /* invariant: cdf[lo] <= u, and cdf[hi] > u or hi == n */
    while (hi - lo > 1) {
        int mid = (lo + hi) >> 1;
        if (T->cdf[mid] <= u) lo = mid;
        else hi = mid;
    }
    int per = T->tx * T->ty, rem = lo % per;
    int ti = rem / T->tx, tj = rem % T->tx;
    int th = T->h - ti * T->tile, tw = T->w - tj * T->tile;
    if (th > T->tile) th = T->tile;
    if (tw > T->tile) tw = T->tile;
    unsigned long long q = ((z & 0xffffffffull) * (unsigned long long)(th * tw)) >> 32; /* < th tw */
    *v = lo / per;
    *i = ti * T->tile + (int)(q / (unsigned long long)tw);
    *j = tj * T->tile + (int)(q % (unsigned long long)tw);
}

/* Where ray r (of a batch drawn with seed) crosses its pixel (row i, column j), in the
 * pixel coordinates of vx_camera_ray: the centre (j + 0.5, i + 0.5), or with T->jitter a
 * point uniform over the pixel's square from a second hash of (seed, r), independent of
 * the pixel choice. A photo's pixel is the average of the scene over its square (Blender
 * renders it antialiased), so jitter fits that average; measured on mic it blurs what a
 * lattice about a pixel wide cannot hold as a step at the pixel's edge, and loses 0.2 to
 * 0.4 dB (docs/FIT.md, session 15): off by default. */
VX_HD void vx_fit_pixel_point(const vx_fit_tiles *T, unsigned long long seed, unsigned long long r, int i, int j,
                              float *px, float *py) {
    float fx = 0.5f, fy = 0.5f;
    if (T->jitter) {
        unsigned long long z = vx_fit_hash(seed ^ 0x6A09E667F3BCC909ull, r);
        fx = (float)(z >> 40) * (1.0f / 16777216.0f);              /* top 24 bits, [0,1) */
        fy = (float)((z >> 8) & 0xffffffull) * (1.0f / 16777216.0f); /* the next 24 */
    }
    *px = (float)j + fx;
    *py = (float)i + fy;
}

/* The background colour ray r (of a batch drawn with seed) is trained against with
 * `fit --random-bg`: uniform in [0,1]^3, from a third hash of (seed, r), independent of the
 * pixel and the jitter. Against a fixed white background, density of a light colour in
 * front of the photo's background costs nothing; against a random one every bit of
 * coverage where the photo has none costs (instant-ngp and 3D Gaussian Splatting train
 * the synthetic scenes so). */
VX_HD void vx_fit_ray_background(unsigned long long seed, unsigned long long r, float bg[3]) {
    unsigned long long z = vx_fit_hash(seed ^ 0xBB67AE8584CAA73Bull, r);
    bg[0] = (float)(z >> 40) * (1.0f / 16777216.0f);
    bg[1] = (float)((z >> 16) & 0xffffffull) * (1.0f / 16777216.0f);
    bg[2] = (float)(z & 0xffffull) * (1.0f / 65536.0f);
}

/* A photo pixel px composited on white with coverage alpha, seen against background bg
 * instead: the premultiplied colour px - (1 - alpha) plus bg (1 - alpha). */
VX_HD void vx_fit_target_on(const float *px, float alpha, const float bg[3], float tg[3]) {
    for (int c = 0; c < 3; c++) tg[c] = px[c] + (bg[c] - 1.0f) * (1.0f - alpha);
}

/* Tile of pixel (v, i, j) in T's numbering. */
VX_HD int vx_fit_tile_of(const vx_fit_tiles *T, int v, int i, int j) {
    return (v * T->ty + i / T->tile) * T->tx + j / T->tile;
}

/* Occupancy cells c0..c1 (one axis) whose footprint holds lattice index i: cell c covers
 * indices c*b - 1 .. c*b + b (vx_occupancy_build_cpu's one-point margin), n cells. */
VX_HD void vx_fit_occ_cells(int i, int b, int n, int *c0, int *c1) {
    int lo = i - b <= 0 ? 0 : (i - b + b - 1) / b; /* ceil((i - b) / b), at least 0 */
    int hi = (i + 1) / b;
    *c0 = lo;
    *c1 = hi < n - 1 ? hi : n - 1;
}

/* ---- optimiser and regulariser, per element ---------------------------------------------- */

/* One Adam update of parameter x with gradient gr; t is the 1-based step. lazy: a zero
 * gradient leaves x and both moments as they are (sparse Adam: a voxel no ray of the batch
 * touched does not drift on its stale momentum, as Plenoxels updates only touched voxels). */
VX_HD void vx_fit_adam_update(float *x, float *mom, float *var, float gr, float lr, float b1, float b2,
                              float eps, float bc1, float bc2, int lazy) {
    /* bc1 = 1 - b1^t, bc2 = 1 - b2^t (computed once per step by the caller) */
    if (lazy && gr == 0.0f) return;
    *mom = b1 * *mom + (1.0f - b1) * gr;
    *var = b2 * *var + (1.0f - b2) * gr * gr;
    float mh = *mom / bc1, vh = *var / bc2;
    *x -= lr * mh / (sqrtf(vh) + eps);
}

/* Isotropic total variation at voxel (x, y, z), channel c, Plenoxels style:
 * tv = sqrt(dx^2 + dy^2 + dz^2 + eps) with forward differences (zero past the last voxel).
 * Adds weight * d tv / d value to the voxel and its +x, +y, +z neighbours; returns tv. */
VX_HD float vx_fit_tv_voxel(const float *data, float *grad, const vx_fit_index *L, int nc, int x, int y, int z,
                            int c, float weight, float eps) {
    size_t i = vx_fit_vid(L, x, y, z) * nc + c;
    size_t ix = x + 1 < L->nx ? vx_fit_vid(L, x + 1, y, z) * nc + c : 0;
    size_t iy = y + 1 < L->ny ? vx_fit_vid(L, x, y + 1, z) * nc + c : 0;
    size_t iz = z + 1 < L->nz ? vx_fit_vid(L, x, y, z + 1) * nc + c : 0;
    float v = data[i];
    float dx = x + 1 < L->nx ? data[ix] - v : 0.0f;
    float dy = y + 1 < L->ny ? data[iy] - v : 0.0f;
    float dz = z + 1 < L->nz ? data[iz] - v : 0.0f;
    float tv = sqrtf(dx * dx + dy * dy + dz * dz + eps);
    if (grad && weight != 0.0f) {
        float s = weight / tv;
        vx_fit_add(grad + i, -s * (dx + dy + dz));
        if (x + 1 < L->nx && !vx_fit_is_null(L, ix / nc)) vx_fit_add(grad + ix, s * dx);
        if (y + 1 < L->ny && !vx_fit_is_null(L, iy / nc)) vx_fit_add(grad + iy, s * dy);
        if (z + 1 < L->nz && !vx_fit_is_null(L, iz / nc)) vx_fit_add(grad + iz, s * dz);
    }
    return tv;
}

#endif
