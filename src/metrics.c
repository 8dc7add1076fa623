/* metrics.c - PSNR and SSIM for `voxray fit` / `voxray eval` (see metrics.h for the
 * exact definition). SSIM filters separably in double, the 'valid' region only. */
#include <stddef.h>

#include "metrics.h"

#include <math.h>
#include <stdlib.h>

double vx_mse(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)b[i];
        s += e * e;
    }
    return n ? s / (double)n : 0.0;
}

double vx_psnr_from_mse(double mse) { return mse > 0 ? -10.0 * log10(mse) : INFINITY; }

double vx_psnr(const float *a, const float *b, size_t n) { return vx_psnr_from_mse(vx_mse(a, b, n)); }

#define VX_SSIM_WIN 11

/* Normalised 1-D Gaussian, sigma 1.5: the 2-D window is its outer product. */
static void vx__gauss(double *g) {
    double s = 0.0;
    for (int i = 0; i < VX_SSIM_WIN; i++) {
        double x = i - VX_SSIM_WIN / 2;
        g[i] = exp(-x * x / (2.0 * 1.5 * 1.5));
        s += g[i];
    }
    for (int i = 0; i < VX_SSIM_WIN; i++) g[i] /= s;
}

double vx_ssim(const float *a, const float *b, int w, int h, int channels) {
    if (w < VX_SSIM_WIN || h < VX_SSIM_WIN || channels < 1) return NAN;
    const double C1 = 0.01 * 0.01, C2 = 0.03 * 0.03;
    int ow = w - VX_SSIM_WIN + 1, oh = h - VX_SSIM_WIN + 1;
    double g[VX_SSIM_WIN];
    vx__gauss(g);
    /* five horizontally filtered planes: a, b, a^2, b^2, ab (h x ow each) */
    size_t plane = (size_t)h * ow;
    double *hf = malloc(5 * plane * sizeof(double));
    if (!hf) return NAN;
    double total = 0.0;
    for (int c = 0; c < channels; c++) {
        for (int y = 0; y < h; y++)
            for (int x = 0; x < ow; x++) {
                double s[5] = {0, 0, 0, 0, 0};
                for (int k = 0; k < VX_SSIM_WIN; k++) {
                    size_t i = ((size_t)y * w + x + k) * channels + c;
                    double va = a[i], vb = b[i];
                    s[0] += g[k] * va; s[1] += g[k] * vb;
                    s[2] += g[k] * va * va; s[3] += g[k] * vb * vb; s[4] += g[k] * va * vb;
                }
                for (int q = 0; q < 5; q++) hf[q * plane + (size_t)y * ow + x] = s[q];
            }
        double sum = 0.0;
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                double s[5] = {0, 0, 0, 0, 0};
                for (int k = 0; k < VX_SSIM_WIN; k++)
                    for (int q = 0; q < 5; q++) s[q] += g[k] * hf[q * plane + (size_t)(y + k) * ow + x];
                double ma = s[0], mb = s[1];
                double va = s[2] - ma * ma, vb = s[3] - mb * mb, cov = s[4] - ma * mb;
                sum += ((2 * ma * mb + C1) * (2 * cov + C2)) / ((ma * ma + mb * mb + C1) * (va + vb + C2));
            }
        total += sum / ((double)ow * oh);
    }
    free(hf);
    return total / channels;
}
