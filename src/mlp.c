/* mlp.c - the mlp decoder's weights: pack/unpack between the file's PyTorch order and the
 * decode order, load and save as .npy, and the initial weights a fit starts from. */
#include "mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "vx_common.h"

void vx_mlp_pack(int layers, const float *f, float *p) {
    int n = vx_mlp_weight_count(layers);
    for (int o = 0; o < VX_MLP_WIDTH; o++)
        for (int i = 0; i < VX_MLP_IN; i++) p[i * VX_MLP_WIDTH + o] = f[o * VX_MLP_IN + i];
    memcpy(p + VX_MLP_B0, f + VX_MLP_B0, (size_t)(n - VX_MLP_B0) * sizeof(float));
}

void vx_mlp_unpack(int layers, const float *p, float *f) {
    int n = vx_mlp_weight_count(layers);
    for (int o = 0; o < VX_MLP_WIDTH; o++)
        for (int i = 0; i < VX_MLP_IN; i++) f[o * VX_MLP_IN + i] = p[i * VX_MLP_WIDTH + o];
    memcpy(f + VX_MLP_B0, p + VX_MLP_B0, (size_t)(n - VX_MLP_B0) * sizeof(float));
}

int vx_mlp_load(const char *path, int layers, float **packed) {
    *packed = NULL;
    if (layers < 1 || layers > 2) return vx_error("%s: mlp decoder: %d hidden layers (1 or 2)", path, layers);
    size_t want = (size_t)vx_mlp_weight_count(layers), len;
    unsigned char *buf;
    /* at most a header and the largest network's values as float64: the size is ours, not the
     * file's, and a file of the wrong count still gets read far enough to be told so */
    if (vx_read_file(path, 4096 + (size_t)VX_MLP_MAX_WEIGHTS * 8, &buf, &len)) return -1;
    vx_npy_header h;
    float *vals = NULL;
    int rc = vx_npy_load_buffer(buf, len, path, &h, &vals);
    free(buf);
    if (rc) return -1;
    size_t n = 1;
    for (int k = 0; k < h.ndim; k++) n *= h.shape[k];
    if (h.ndim != 1 || n != want) {
        free(vals);
        return vx_error("%s: mlp weights must be a 1-D array of %zu values for %d hidden layer%s (%d-%d%s-3), "
                        "the file holds %s%zu", path, want, layers, layers == 2 ? "s" : "", VX_MLP_IN, VX_MLP_WIDTH,
                        layers == 2 ? "-64" : "", h.ndim == 1 ? "" : "a multi-dimensional array of ", n);
    }
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(vals[i]) <= 1e6f)) {
            float v = vals[i];
            free(vals);
            return vx_error("%s: mlp weight %zu is %g (weights must be finite, within +-1e6)", path, i, v);
        }
    float *p = vx_floats64(n, "mlp weights"); /* the decode reads them in rows of 64 */
    if (!p) { free(vals); return -1; }
    vx_mlp_pack(layers, vals, p);
    free(vals);
    *packed = p;
    return 0;
}

int vx_mlp_save(const char *path, int layers, const float *packed) {
    size_t n = (size_t)vx_mlp_weight_count(layers);
    float *f = (float *)vx_malloc(n * sizeof(float), "mlp weights");
    if (!f) return -1;
    vx_mlp_unpack(layers, packed, f);
    int rc = vx_npy_write_f32(path, f, 1, &n);
    free(f);
    return rc;
}

/* A uniform float in [-b, b) from (seed, i). */
static float vx__uniform(unsigned seed, unsigned i, float b) {
    unsigned long long z = vx_mix64(((unsigned long long)seed << 32) ^ (i * 0x9E3779B97F4A7C15ull));
    return b * (2.0f * (float)(z >> 40) * (1.0f / 16777216.0f) - 1.0f);
}

void vx_mlp_init(int layers, unsigned seed, float *p) {
    int n = vx_mlp_weight_count(layers);
    float f[VX_MLP_MAX_WEIGHTS];
    for (int i = 0; i < n; i++) {
        int fan_in = i < VX_MLP_L1 ? VX_MLP_IN : VX_MLP_WIDTH; /* the first layer's, else 64 */
        f[i] = vx__uniform(seed, (unsigned)i, 1.0f / sqrtf((float)fan_in));
    }
    vx_mlp_pack(layers, f, p);
}
