/* tf.c - transfer-function presets and the scalar decoder's defaults (window from
 * robust percentiles), plus decoder validation shared by the manifest reader and the
 * format importers. Preset opacities are per 1/100 of the box diagonal. */
#include <math.h>
#include <string.h>

#include "scene.h"
#include "vx_common.h"

typedef struct {
    const char *name;
    int n;
    float pts[8][5]; /* v, r, g, b, sigma */
} vx_tf_def;

static const vx_tf_def vx__presets[] = {
    /* warm ramp that shows structure at any value range */
    {"default", 5, {{0.00f, 0.0f, 0.0f, 0.0f, 0.0f}, {0.15f, 0.30f, 0.05f, 0.02f, 0.0f},
                    {0.40f, 0.85f, 0.35f, 0.12f, 0.6f}, {0.70f, 1.0f, 0.80f, 0.55f, 2.0f},
                    {1.00f, 1.0f, 1.0f, 0.95f, 6.0f}}},
    /* CT: only dense bone, ivory */
    {"ct-bone", 4, {{0.00f, 0.0f, 0.0f, 0.0f, 0.0f}, {0.58f, 0.80f, 0.62f, 0.45f, 0.0f},
                    {0.70f, 0.95f, 0.88f, 0.75f, 4.0f}, {1.00f, 1.0f, 1.0f, 0.95f, 10.0f}}},
    /* CT: translucent red soft tissue, opaque bone */
    {"ct-soft", 6, {{0.00f, 0.0f, 0.0f, 0.0f, 0.0f}, {0.20f, 0.55f, 0.15f, 0.10f, 0.0f},
                    {0.30f, 0.80f, 0.35f, 0.25f, 0.25f}, {0.45f, 0.85f, 0.50f, 0.40f, 0.15f},
                    {0.60f, 0.95f, 0.90f, 0.80f, 4.0f}, {1.00f, 1.0f, 1.0f, 0.95f, 10.0f}}},
    /* MRI: grey matter and white matter in soft tones, background gone */
    {"mri", 5, {{0.00f, 0.0f, 0.0f, 0.0f, 0.0f}, {0.12f, 0.35f, 0.25f, 0.30f, 0.0f},
                {0.35f, 0.75f, 0.55f, 0.55f, 0.35f}, {0.70f, 0.95f, 0.85f, 0.75f, 1.2f},
                {1.00f, 1.0f, 1.0f, 0.95f, 3.0f}}},
    /* linear grey: colour and opacity proportional to value */
    {"grey", 2, {{0.00f, 0.0f, 0.0f, 0.0f, 0.0f}, {1.00f, 1.0f, 1.0f, 1.0f, 3.0f}}},
    /* emission-like fire for simulation data */
    {"fire", 5, {{0.00f, 0.0f, 0.0f, 0.0f, 0.0f}, {0.25f, 0.45f, 0.02f, 0.0f, 0.2f},
                 {0.50f, 0.95f, 0.30f, 0.02f, 0.8f}, {0.75f, 1.0f, 0.75f, 0.20f, 1.6f},
                 {1.00f, 1.0f, 1.0f, 0.85f, 3.0f}}},
};

const char *vx_tf_preset_names(void) { return "default, ct-bone, ct-soft, mri, grey, fire"; }

int vx_tf_preset(vx_decoder *d, const char *name) {
    for (size_t i = 0; i < sizeof vx__presets / sizeof *vx__presets; i++) {
        if (strcmp(vx__presets[i].name, name)) continue;
        d->tf_n = vx__presets[i].n;
        memcpy(d->tf, vx__presets[i].pts, sizeof(float) * 5 * (size_t)d->tf_n);
        return 0;
    }
    return vx_error("transfer-function preset '%s' is unknown (known: %s)", name, vx_tf_preset_names());
}

/* density_scale that makes preset opacities "per 1/100 of the box diagonal" */
static float vx__preset_scale(const vx_grid *g) {
    double lo[3], hi[3];
    vx_grid_world_bounds(g, lo, hi);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    return diag > 0 ? (float)(100.0 / diag) : 1.0f;
}

int vx_scalar_decoder_init(vx_decoder *d, const vx_grid *g, const char *preset) {
    memset(d, 0, sizeof *d);
    d->type = VX_DEC_SCALAR;
    d->window_lo = vx_grid_quantile(g, 0.01);
    d->window_hi = vx_grid_quantile(g, 0.995);
    if (!(d->window_hi > d->window_lo)) {
        float mn, mx;
        vx_grid_range(g, 0, &mn, &mx);
        d->window_lo = mn;
        d->window_hi = mx > mn ? mx : mn + 1.0f;
    }
    d->density_scale = vx__preset_scale(g);
    d->shade = 1; /* gradient shading: the surfaces of a scan read as surfaces (march.h vx_shade) */
    return vx_tf_preset(d, preset ? preset : "default");
}

void vx_fog_decoder(vx_decoder *d, float vmax) {
    memset(d, 0, sizeof *d);
    d->type = VX_DEC_SCALAR;
    d->density_scale = 1.0f;
    d->window_lo = 0.0f;
    d->window_hi = vmax > 0 ? vmax : 1.0f;
    d->tf_n = 2;
    const float tf[2][5] = {{0, 0.3f, 0.3f, 0.3f, 0}, {1, 0.3f, 0.3f, 0.3f, d->window_hi}};
    memcpy(d->tf, tf, sizeof tf);
}

int vx_decoder_validate(const vx_decoder *d, int channels, const char *where) {
    int need = vx_decoder_channels(d);
    static const char *names[] = {"rgba", "sh", "scalar", "mlp"};
    if (d->type < 0 || d->type > 3) return vx_error("%s: unknown decoder type", where);
    if (d->type == VX_DEC_SH && (d->sh_degree < 0 || d->sh_degree > 3))
        return vx_error("%s: sh degree %d is outside 0..3", where, d->sh_degree);
    if (need != channels)
        return vx_error("%s: decoder '%s'%s needs %d channels but the grid has %d", where, names[d->type],
                        d->type == VX_DEC_SH ? " at this degree" : "", need, channels);
    if (!isfinite(d->density_scale) || d->density_scale < 0)
        return vx_error("%s: density_scale must be a finite number >= 0", where);
    if (d->type == VX_DEC_MLP) {
        int layers = vx_decoder_mlp_layers(d);
        const float *w = vx_decoder_mlp_weights(d);
        if (layers < 1 || layers > 2) return vx_error("%s: mlp decoder: %d hidden layers (1 or 2)", where, layers);
        if (!w) return vx_error("%s: mlp decoder has no weights", where);
        for (int i = 0, n = vx_mlp_weight_count(layers); i < n; i++)
            if (!(fabsf(w[i]) <= 1e6f)) /* also NaN */
                return vx_error("%s: mlp weight %d is %g (weights must be finite, within +-1e6)", where, i, w[i]);
    }
    if (d->type == VX_DEC_SCALAR) {
        if (!isfinite(d->window_lo) || !isfinite(d->window_hi) || !(d->window_hi > d->window_lo))
            return vx_error("%s: window [%g, %g] must be finite with lo < hi", where, d->window_lo, d->window_hi);
        if (d->tf_n < 2 || d->tf_n > VX_TF_MAX)
            return vx_error("%s: transfer_function needs 2..%d control points, has %d", where, VX_TF_MAX, d->tf_n);
        for (int i = 0; i < d->tf_n; i++) {
            for (int k = 0; k < 5; k++)
                if (!isfinite(d->tf[i][k]))
                    return vx_error("%s: transfer_function point %d has a non-finite value", where, i);
            if (d->tf[i][0] < 0 || d->tf[i][0] > 1)
                return vx_error("%s: transfer_function point %d: v=%g is outside [0, 1]", where, i, d->tf[i][0]);
            if (i && d->tf[i][0] < d->tf[i - 1][0])
                return vx_error("%s: transfer_function points must be sorted by v (point %d)", where, i);
            if (d->tf[i][4] < 0) return vx_error("%s: transfer_function point %d has negative sigma", where, i);
            for (int k = 1; k < 4; k++)
                if (d->tf[i][k] < 0 || d->tf[i][k] > 1)
                    return vx_error("%s: transfer_function point %d: colour outside [0, 1]", where, i);
        }
    }
    return 0;
}
