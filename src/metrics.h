/* metrics.h - image quality against a reference: PSNR and SSIM (Gaussian 11x11 window,
 * sigma 1.5, K1 = 0.01, K2 = 0.03, data range 1, 'valid' region, mean over channels as
 * in Wang et al. 2004 and the NeRF papers). Used by `voxray fit` and `voxray eval`. */
#ifndef VX_METRICS_H
#define VX_METRICS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Mean squared error over n floats. */
double vx_mse(const float *a, const float *b, size_t n);

/* PSNR in dB for values in [0,1]: -10 log10(mse); +infinity when the images are equal. */
double vx_psnr(const float *a, const float *b, size_t n);
double vx_psnr_from_mse(double mse);

/* Mean SSIM of two w x h images of `channels` interleaved channels in [0,1]. Images
 * smaller than 11x11 have no valid window: returns NAN. */
double vx_ssim(const float *a, const float *b, int w, int h, int channels);

#ifdef __cplusplus
}
#endif

#endif
