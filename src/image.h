/* image.h - writing frames: 8-bit PNG (RGB, or RGBA with straight alpha), 16-bit
 * normalised depth PNG, float32 depth .npy. All writes go to a temporary file and are
 * renamed into place, so a failed run never leaves half an image. */
#ifndef VX_IMAGE_H
#define VX_IMAGE_H

#include "frame.h"

#ifdef __cplusplus
extern "C" {
#endif

int vx_image_write_png(const char *path, const vx_frame *f, int transparent);
/* Grey 8-bit PNG of a w*h float buffer scaled from [lo, hi]. */
int vx_image_write_gray8(const char *path, const float *v, int w, int h, float lo, float hi);
/* 16-bit grey PNG of depth, normalised to the hit range (0 where nothing was hit). */
int vx_image_write_depth16(const char *path, const float *depth, const float *alpha, int w, int h);
/* Quantise a frame to 8-bit RGB(A) (rounding, clamped). out has w*h*(3 or 4) bytes.
 * transparent: the frame must have been rendered on a black background; colour is
 * un-premultiplied (straight alpha = 1 - T_end). */
void vx_image_quantize(const vx_frame *f, int transparent, unsigned char *out);

#ifdef __cplusplus
}
#endif

#endif
