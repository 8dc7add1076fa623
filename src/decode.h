/* decode.h - the four decoders (rgba, sh, scalar + transfer function, feature grid + MLP)
 * that turn trilinearly interpolated raw channels into density and colour. Shared by the
 * CPU renderer and the CUDA kernels (VX_HD); docs/RENDERING.md gives the maths. */
#ifndef VX_DECODE_H
#define VX_DECODE_H

#include <string.h>

#include "vx_math.h"

#define VX_MAX_CHANNELS 64
#define VX_TF_MAX 32

typedef enum { VX_DEC_RGBA = 0, VX_DEC_SH = 1, VX_DEC_SCALAR = 2, VX_DEC_MLP = 3 } vx_decoder_type;
typedef enum { VX_DACT_RELU = 0, VX_DACT_SOFTPLUS, VX_DACT_EXP, VX_DACT_NONE } vx_density_act;
typedef enum { VX_CACT_CLAMP = 0, VX_CACT_SIGMOID, VX_CACT_PLENOXELS } vx_color_act;

typedef struct {
    int type;            /* vx_decoder_type */
    int density_act;     /* vx_density_act (rgba, sh) */
    int color_act;       /* vx_color_act */
    float density_scale; /* multiplies sigma for every decoder */
    int sh_degree;       /* 0..3 for the sh decoder */
    float window_lo, window_hi; /* scalar: value window mapped to [0,1] */
    int tf_n;            /* scalar: number of control points (>= 2) */
    int shade;           /* scalar: light by the interpolated gradient (march.h vx_shade);
                          * mlp: the direction input (vx_decoder_mlp_dir_mode): 1 the view direction
                          * reflected about it, 2 the view direction with the reflected one */
    float tf[VX_TF_MAX][5]; /* scalar: [v, r, g, b, sigma], v ascending in [0,1] */
} vx_decoder;

/* The mlp decoder keeps its hidden-layer count (1 or 2) in sh_degree and the address of its
 * packed weights (vx_mlp_pack; not owned: the scene's) in the first bytes of tf, the scalar
 * decoder's table. So vx_decoder, and the march parameters every CUDA kernel takes by
 * value, keep their size and layout: a bigger struct moved the kernel parameters and
 * changed the code of every render kernel (SASS compared), which would need timing anew. */
VX_HD int vx_decoder_mlp_layers(const vx_decoder *d) { return d->sh_degree; }
VX_HD const float *vx_decoder_mlp_weights(const vx_decoder *d) {
    const float *w;
    memcpy(&w, d->tf, sizeof w);
    return w;
}
VX_HD void vx_decoder_set_mlp(vx_decoder *d, int layers, const float *w) {
    d->sh_degree = layers;
    memcpy(d->tf, &w, sizeof w);
}

/* The mlp decoder's direction input (vx_mlp_input_dir), kept in the scalar decoder's shade:
 * VX_MLP_DIR_VIEW the view direction d (scene "direction": "view", the default);
 * VX_MLP_DIR_REFLECTED d mirrored about the density gradient's plane (vx_reflect_dir;
 * "reflected", fit --mlp-reflect), as Ref-NeRF feeds its network, so one highlight is
 * shared by surfaces of every orientation; VX_MLP_DIR_BOTH d as before and, beside it, the
 * reflected direction's degree-1 terms and n.d ("view+reflected", fit --mlp-view-reflected),
 * so the network keeps the direction it had and may use the mirror image. */
enum { VX_MLP_DIR_VIEW = 0, VX_MLP_DIR_REFLECTED = 1, VX_MLP_DIR_BOTH = 2 };
VX_HD int vx_decoder_mlp_dir_mode(const vx_decoder *d) { return d->type == VX_DEC_MLP ? d->shade : VX_MLP_DIR_VIEW; }
/* The manifest's name of a direction mode (scene.c reads them in this order). */
VX_HD const char *vx_mlp_dir_name(int mode) {
    return mode == VX_MLP_DIR_BOTH ? "view+reflected" : mode == VX_MLP_DIR_REFLECTED ? "reflected" : "view";
}
/* Whether the network's input reads the density gradient (modes reflected and both). */
VX_HD int vx_decoder_mlp_reflect(const vx_decoder *d) { return d->type == VX_DEC_MLP && d->shade; }

/* Whether a sample with density reads the six gradient probes (march.h: the scalar
 * decoder's shading, the mlp's reflected direction), half a voxel around it. */
VX_HD int vx_decoder_probes(const vx_decoder *d) {
    return d->shade && (d->type == VX_DEC_SCALAR || d->type == VX_DEC_MLP);
}

/* The mlp decoder: channel 0 is raw density, channels 1..15 features. Colour is a small
 * network shared by every voxel: in = the 15 features and the view direction's degree-3
 * SH basis (16), then 1 or 2 hidden layers of 64 relu units, then 3 sigmoid outputs.
 * Weights come in the PyTorch nn.Linear order (weight[out][in], then bias, layer after
 * layer) and are packed for the decode: the first layer transposed to [in][64], so that
 * one input updates 64 contiguous accumulators (the CUDA renderer reads them from
 * constant memory as FMA operands). Offsets in floats: */
#define VX_MLP_FEATURES 15
#define VX_MLP_IN 31          /* features + 16 direction terms */
#define VX_MLP_WIDTH 64
#define VX_MLP_CHANNELS 16    /* density + features */
#define VX_MLP_B0 (VX_MLP_IN * VX_MLP_WIDTH)          /* after W0^T [31][64] */
#define VX_MLP_L1 (VX_MLP_B0 + VX_MLP_WIDTH)          /* W1 [64][64], b1 [64] (2 layers) */
#define VX_MLP_L1_SIZE (VX_MLP_WIDTH * VX_MLP_WIDTH + VX_MLP_WIDTH)
#define VX_MLP_MAX_WEIGHTS (VX_MLP_L1 + VX_MLP_L1_SIZE + 3 * VX_MLP_WIDTH + 3)

/* Offset of the output layer (W2 [3][64], then b2 [3]) and the total weight count. */
VX_HD int vx_mlp_out_offset(int layers) { return VX_MLP_L1 + (layers == 2 ? VX_MLP_L1_SIZE : 0); }
VX_HD int vx_mlp_weight_count(int layers) { return vx_mlp_out_offset(layers) + 3 * VX_MLP_WIDTH + 3; }
/* The packed first-layer weights [*lo, *hi) that read the view direction's SH terms past
 * the first `terms` (1, 4 or 9: degree 0, 1 or 2; 0 or 16: none): `fit --mlp-dir-degree`
 * holds them at zero, so the network sees the direction up to that degree and a renderer
 * multiplying the other terms by zero needs no change. */
VX_HD void vx_mlp_dir_cut(int terms, int *lo, int *hi) {
    *lo = *hi = 0;
    if (terms > 0 && terms < 16) {
        *lo = (VX_MLP_FEATURES + terms) * VX_MLP_WIDTH;
        *hi = VX_MLP_IN * VX_MLP_WIDTH;
    }
}

/* Channels a decoder needs. */
VX_HD int vx_decoder_channels(const vx_decoder *d) {
    if (d->type == VX_DEC_RGBA) return 4;
    if (d->type == VX_DEC_SH) return 1 + 3 * (d->sh_degree + 1) * (d->sh_degree + 1);
    if (d->type == VX_DEC_MLP) return VX_MLP_CHANNELS;
    return 1;
}

VX_HD float vx_density_activate(int act, float s) {
    switch (act) {
    case VX_DACT_SOFTPLUS: return s > 20.0f ? s : log1pf(expf(s));
    case VX_DACT_EXP: return expf(vx_minf(s, 80.0f));
    default: return vx_maxf(s, 0.0f); /* relu; 'none' also composites negatives as 0 */
    }
}

VX_HD float vx_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The density a voxel exports to OpenVDB / NanoVDB (convert): the raw value for scalar
 * decoders, else the decoder's activation of channel 0 (density_scale left out). */
VX_HD float vx_export_density(const vx_decoder *d, const float *v) {
    return d->type == VX_DEC_SCALAR ? v[0] : vx_density_activate(d->density_act, v[0]);
}

/* Real spherical-harmonic basis, svox2/Plenoxels order and signs, for unit dir d. */
VX_HD int vx_sh_basis(int degree, vx_vec3 d, float *b) {
    const float C0 = 0.28209479177387814f, C1 = 0.4886025119029199f;
    float x = d.x, y = d.y, z = d.z;
    b[0] = C0;
    if (degree < 1) return 1;
    b[1] = -C1 * y; b[2] = C1 * z; b[3] = -C1 * x;
    if (degree < 2) return 4;
    float xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
    b[4] = 1.0925484305920792f * xy;
    b[5] = -1.0925484305920792f * yz;
    b[6] = 0.31539156525252005f * (2.0f * zz - xx - yy);
    b[7] = -1.0925484305920792f * xz;
    b[8] = 0.5462742152960396f * (xx - yy);
    if (degree < 3) return 9;
    b[9] = -0.5900435899266435f * y * (3.0f * xx - yy);
    b[10] = 2.890611442640554f * xy * z;
    b[11] = -0.4570457994644658f * y * (4.0f * zz - xx - yy);
    b[12] = 0.3731763325901154f * z * (2.0f * zz - 3.0f * xx - 3.0f * yy);
    b[13] = -0.4570457994644658f * x * (4.0f * zz - xx - yy);
    b[14] = 1.445305721320277f * z * (xx - yy);
    b[15] = -0.5900435899266435f * x * (xx - 3.0f * yy);
    return 16;
}

/* Windowed value in [0,1] for the scalar decoder. */
VX_HD float vx_window(const vx_decoder *d, float v) {
    float w = d->window_hi - d->window_lo;
    return vx_clampf(w > 0 ? (v - d->window_lo) / w : (v >= d->window_hi ? 1.0f : 0.0f), 0.0f, 1.0f);
}

/* Piecewise-linear transfer function at t in [0,1]: out = [r, g, b, sigma]. */
VX_HD void vx_tf_eval(const vx_decoder *d, float t, float *out) {
    int n = d->tf_n, k;
    if (t <= d->tf[0][0]) { for (k = 0; k < 4; k++) out[k] = d->tf[0][1 + k]; return; }
    if (t >= d->tf[n - 1][0]) { for (k = 0; k < 4; k++) out[k] = d->tf[n - 1][1 + k]; return; }
    int i = 0;
    while (i + 2 < n && t >= d->tf[i + 1][0]) i++;
    float v0 = d->tf[i][0], v1 = d->tf[i + 1][0];
    float f = v1 > v0 ? (t - v0) / (v1 - v0) : 1.0f;
    for (k = 0; k < 4; k++) out[k] = d->tf[i][1 + k] + f * (d->tf[i + 1][1 + k] - d->tf[i][1 + k]);
}

/* Fully unroll the next loop in CUDA device code, where a constant trip count (a template
 * parameter propagated through these inline functions) keeps arrays in registers. */
#if defined(__CUDA_ARCH__)
#define VX_UNROLL _Pragma("unroll")
#define VX_NO_UNROLL _Pragma("unroll 1")
#else
#define VX_UNROLL
#define VX_NO_UNROLL
#endif

/* The three decoders, each returning sigma (scaled) and writing rgb. The CUDA renderer
 * calls them with the type and SH degree as constants; vx_decode() picks at run time. */
VX_HD float vx_decode_scalar(const vx_decoder *d, const float *raw, float *rgb) {
    float o[4];
    vx_tf_eval(d, vx_window(d, raw[0]), o);
    rgb[0] = o[0]; rgb[1] = o[1]; rgb[2] = o[2];
    return vx_maxf(o[3], 0.0f) * d->density_scale;
}

VX_HD float vx_decode_sh(const vx_decoder *d, int degree, const float *raw, vx_vec3 dir, float *rgb) {
    float b[16];
    int nb = (degree + 1) * (degree + 1);
    vx_sh_basis(degree, dir, b);
    VX_UNROLL
    for (int c = 0; c < 3; c++) {
        const float *k = raw + 1 + c * nb;
        float s = 0.0f;
        VX_UNROLL
        for (int i = 0; i < nb; i++) s += k[i] * b[i];
        rgb[c] = d->color_act == VX_CACT_SIGMOID ? vx_sigmoidf(s) : vx_maxf(s + 0.5f, 0.0f);
    }
    return vx_density_activate(d->density_act, raw[0]) * d->density_scale;
}

VX_HD float vx_decode_rgba(const vx_decoder *d, const float *raw, float *rgb) {
    VX_UNROLL
    for (int c = 0; c < 3; c++)
        rgb[c] = d->color_act == VX_CACT_SIGMOID ? vx_sigmoidf(raw[1 + c]) : vx_clampf(raw[1 + c], 0.0f, 1.0f);
    return vx_density_activate(d->density_act, raw[0]) * d->density_scale;
}

/* The network's input: features raw[1..15], then the SH basis of the view direction. */
VX_HD void vx_mlp_input(const float *raw, vx_vec3 dir, float *x) {
    VX_UNROLL
    for (int i = 0; i < VX_MLP_FEATURES; i++) x[i] = raw[1 + i];
    vx_sh_basis(3, dir, x + VX_MLP_FEATURES);
}

/* The view direction d mirrored in the plane whose normal is the density gradient g (world
 * space), d - 2 (d.n) n with n = g / |g| (either sign of n gives the same mirror image). A
 * zero or non-finite gradient (flat density, inside a constant block) leaves d as it is. */
VX_HD vx_vec3 vx_reflect_dir(vx_vec3 d, vx_vec3 g) {
    float gg = vx_dot(g, g);
    if (!(gg > 1e-30f) || !(gg < 1e30f)) return d;
    float k = 2.0f * vx_dot(d, g) / gg;
    return vx_v3(d.x - k * g.x, d.y - k * g.y, d.z - k * g.z);
}

/* VX_MLP_DIR_BOTH's direction slots: 0-3 the view direction's SH up to degree 1, from
 * VX_MLP_DIR_BOTH_SLOT the reflected direction's three degree-1 terms, then n.d, then its
 * five degree-2 terms (slots 8-12; 13-15 keep the view direction's last degree-3 terms).
 * fit --mlp-view-reflected holds the weights of the slots past n.d at zero
 * (VX_MLP_DIR_BOTH_TERMS, the reflected direction to degree 1) or past slot 12 with
 * --mlp-dir-degree 2 (VX_MLP_DIR_BOTH_TERMS2), vx_mlp_dir_cut. */
#define VX_MLP_DIR_BOTH_SLOT 4
#define VX_MLP_DIR_BOTH_TERMS 8
#define VX_MLP_DIR_BOTH_TERMS2 13

/* The network's input at a sample with density gradient g (world space, any scale; the
 * modes that read it, vx_decoder_mlp_reflect) seen along d, in direction mode `mode`. */
VX_HD void vx_mlp_input_dir(const float *raw, vx_vec3 d, vx_vec3 g, int mode, float *x) {
    if (mode != VX_MLP_DIR_BOTH) {
        vx_mlp_input(raw, mode == VX_MLP_DIR_REFLECTED ? vx_reflect_dir(d, g) : d, x);
        return;
    }
    float r[9], gg = vx_dot(g, g);
    vx_mlp_input(raw, d, x);
    vx_sh_basis(2, vx_reflect_dir(d, g), r);
    float *s = x + VX_MLP_FEATURES + VX_MLP_DIR_BOTH_SLOT;
    s[0] = r[1];
    s[1] = r[2];
    s[2] = r[3];
    s[3] = gg > 1e-30f && gg < 1e30f ? vx_dot(d, g) / sqrtf(gg) : 0.0f; /* n.d, 0 where vx_reflect_dir keeps d */
    for (int k = 0; k < 5; k++) s[4 + k] = r[4 + k];
}

/* The network itself: input x (VX_MLP_IN), packed weights w, sigmoid colours out, for the
 * direction modes that read the density gradient (vx_decode_mlp_dir). A copy of
 * vx_decode_mlp's loops on purpose: vx_decode_mlp built on it compiled the CPU fit 7-12%
 * slower with gcc (session 33), so the view direction keeps its own text (and the CUDA
 * kernels timed with it their code). */
VX_HD void vx_mlp_network(const float *w, int layers, const float *x, float *rgb) {
    float h[VX_MLP_WIDTH];
    VX_UNROLL
    for (int o = 0; o < VX_MLP_WIDTH; o++) h[o] = w[VX_MLP_B0 + o];
    VX_NO_UNROLL
    for (int i = 0; i < VX_MLP_IN; i++) {
        float xi = x[i];
        VX_UNROLL
        for (int o = 0; o < VX_MLP_WIDTH; o++) h[o] += w[i * VX_MLP_WIDTH + o] * xi;
    }
    VX_UNROLL
    for (int o = 0; o < VX_MLP_WIDTH; o++) h[o] = vx_maxf(h[o], 0.0f);
    const float *w2 = w + vx_mlp_out_offset(layers);
    float out[3] = {w2[3 * VX_MLP_WIDTH], w2[3 * VX_MLP_WIDTH + 1], w2[3 * VX_MLP_WIDTH + 2]};
    if (layers == 2) { /* each second-layer unit feeds the outputs as soon as it is known */
        const float *w1 = w + VX_MLP_L1;
        VX_NO_UNROLL /* loops (also over the inputs above): fully unrolled, render.cu's 16 mlp kernels took
                      * ptxas 2 min 49 s instead of 16 s; the run-time difference is not measured yet */
        for (int o = 0; o < VX_MLP_WIDTH; o++) {
            float a = w1[VX_MLP_WIDTH * VX_MLP_WIDTH + o];
            VX_UNROLL
            for (int i = 0; i < VX_MLP_WIDTH; i++) a += w1[o * VX_MLP_WIDTH + i] * h[i];
            a = vx_maxf(a, 0.0f);
            VX_UNROLL
            for (int c = 0; c < 3; c++) out[c] += w2[c * VX_MLP_WIDTH + o] * a;
        }
    } else {
        VX_UNROLL
        for (int o = 0; o < VX_MLP_WIDTH; o++) {
            VX_UNROLL
            for (int c = 0; c < 3; c++) out[c] += w2[c * VX_MLP_WIDTH + o] * h[o];
        }
    }
    VX_UNROLL
    for (int c = 0; c < 3; c++) rgb[c] = vx_sigmoidf(out[c]);
}

/* The mlp decoder with packed weights w (the decoder's, or the CUDA renderer's constant
 * copy) and `layers` hidden layers, seeing the view direction dir. The network runs only
 * where sigma > 0 (elsewhere rgb is 0 and nothing composites it). */
VX_HD float vx_decode_mlp(const vx_decoder *d, const float *w, int layers, const float *raw, vx_vec3 dir,
                          float *rgb) {
    float sigma = vx_density_activate(d->density_act, raw[0]) * d->density_scale;
    if (!(sigma > 0.0f)) {
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        return 0.0f;
    }
    float x[VX_MLP_IN], h[VX_MLP_WIDTH];
    vx_mlp_input(raw, dir, x);
    VX_UNROLL
    for (int o = 0; o < VX_MLP_WIDTH; o++) h[o] = w[VX_MLP_B0 + o];
    VX_NO_UNROLL
    for (int i = 0; i < VX_MLP_IN; i++) {
        float xi = x[i];
        VX_UNROLL
        for (int o = 0; o < VX_MLP_WIDTH; o++) h[o] += w[i * VX_MLP_WIDTH + o] * xi;
    }
    VX_UNROLL
    for (int o = 0; o < VX_MLP_WIDTH; o++) h[o] = vx_maxf(h[o], 0.0f);
    const float *w2 = w + vx_mlp_out_offset(layers);
    float out[3] = {w2[3 * VX_MLP_WIDTH], w2[3 * VX_MLP_WIDTH + 1], w2[3 * VX_MLP_WIDTH + 2]};
    if (layers == 2) { /* each second-layer unit feeds the outputs as soon as it is known */
        const float *w1 = w + VX_MLP_L1;
        VX_NO_UNROLL /* loops (also over the inputs above): fully unrolled, render.cu's 16 mlp kernels took
                      * ptxas 2 min 49 s instead of 16 s; the run-time difference is not measured yet */
        for (int o = 0; o < VX_MLP_WIDTH; o++) {
            float a = w1[VX_MLP_WIDTH * VX_MLP_WIDTH + o];
            VX_UNROLL
            for (int i = 0; i < VX_MLP_WIDTH; i++) a += w1[o * VX_MLP_WIDTH + i] * h[i];
            a = vx_maxf(a, 0.0f);
            VX_UNROLL
            for (int c = 0; c < 3; c++) out[c] += w2[c * VX_MLP_WIDTH + o] * a;
        }
    } else {
        VX_UNROLL
        for (int o = 0; o < VX_MLP_WIDTH; o++) {
            VX_UNROLL
            for (int c = 0; c < 3; c++) out[c] += w2[c * VX_MLP_WIDTH + o] * h[o];
        }
    }
    VX_UNROLL
    for (int c = 0; c < 3; c++) rgb[c] = vx_sigmoidf(out[c]);
    return sigma;
}

/* The same where the input reads the density gradient g (the decoder's direction mode,
 * vx_mlp_input_dir; vx_decoder_mlp_reflect). */
VX_HD float vx_decode_mlp_dir(const vx_decoder *d, const float *w, int layers, const float *raw, vx_vec3 dir,
                              vx_vec3 g, float *rgb) {
    float sigma = vx_density_activate(d->density_act, raw[0]) * d->density_scale;
    if (!(sigma > 0.0f)) {
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        return 0.0f;
    }
    float x[VX_MLP_IN];
    vx_mlp_input_dir(raw, dir, g, d->shade, x);
    vx_mlp_network(w, layers, x, rgb);
    return sigma;
}

/* Decode interpolated raw channels at view direction dir (unit, world space).
 * Returns sigma >= 0 (already scaled) and writes rgb in [0,1]. */
VX_HD float vx_decode(const vx_decoder *d, const float *raw, vx_vec3 dir, float *rgb) {
    if (d->type == VX_DEC_SCALAR) return vx_decode_scalar(d, raw, rgb);
    if (d->type == VX_DEC_SH) return vx_decode_sh(d, d->sh_degree, raw, dir, rgb);
#ifndef __CUDA_ARCH__ /* host only: the weights' address is a host one. CUDA decodes the mlp in render.cu and
                       * in the fit's own mlp kernels (fit_mlp.cuh, fit_mlp_batch.cuh), from their copies of
                       * the weights; the HDDA kernel takes no decoder but scalar. Left out of device code,
                       * the kernels that call this compile as they did before the mlp decoder existed. */
    if (d->type == VX_DEC_MLP) return vx_decode_mlp(d, vx_decoder_mlp_weights(d), vx_decoder_mlp_layers(d), raw, dir, rgb);
#endif
    return vx_decode_rgba(d, raw, rgb);
}

/* Largest decoded sigma for any raw channel-0 value in [vmin, vmax]; used to mark
 * occupancy cells empty (0 means every sample there has zero density). Exact for
 * relu/none and the piecewise-linear transfer function; conservative otherwise. */
VX_HD float vx_decoder_max_sigma(const vx_decoder *d, float vmin, float vmax) {
    if (d->density_scale <= 0.0f) return 0.0f;
    if (d->type == VX_DEC_SCALAR) {
        float a = vx_window(d, vmin), b = vx_window(d, vmax), o[4], m;
        vx_tf_eval(d, a, o); m = o[3];
        vx_tf_eval(d, b, o); m = vx_maxf(m, o[3]);
        for (int i = 0; i < d->tf_n; i++)
            if (d->tf[i][0] > a && d->tf[i][0] < b) m = vx_maxf(m, d->tf[i][4]);
        return vx_maxf(m, 0.0f) * d->density_scale;
    }
    if (d->density_act == VX_DACT_RELU || d->density_act == VX_DACT_NONE)
        return vx_maxf(vmax, 0.0f) * d->density_scale;
    return 1.0f; /* softplus / exp are never zero */
}

#endif
