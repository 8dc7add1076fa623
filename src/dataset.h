/* dataset.h - posed photos in the NeRF "Blender synthetic" layout (transforms_<split>.json
 * + RGBA PNGs), composited on white, for `voxray fit` and `voxray eval`. Every malformed
 * input is rejected with one line naming the file. */
#ifndef VX_DATASET_H
#define VX_DATASET_H

#include "camera.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vx_dataset_s {
    int n;                  /* views */
    int width, height;      /* every view has this size (after downscaling) */
    float *rgb;             /* n * height * width * 3, in [0,1], composited on white */
    float *alpha;           /* n * height * width coverage in [0,1]; NULL when every pixel is
                             * opaque. The photo against background b is rgb + (b - 1)(1 - alpha) */
    vx_camera *cams;        /* n cameras at width x height */
    char (*names)[256];     /* image file of each view, for reports */
} vx_dataset;

/* Load DIR/transforms_SPLIT.json and its images. downscale >= 1 averages
 * downscale x downscale pixel blocks (sizes must divide). Returns 0 or -1 (vx_error). */
int vx_dataset_load(const char *dir, const char *split, int downscale, vx_dataset *d);
void vx_dataset_free(vx_dataset *d);

/* Split `all` into views with index % every != 0 (train) and index % every == 0 (held
 * out); both are fresh copies. every >= 2, and both sides must be non-empty. */
int vx_dataset_holdout(const vx_dataset *all, int every, vx_dataset *train, vx_dataset *held);

/* Copy of the listed views (indices into d), in that order. */
int vx_dataset_subset(const vx_dataset *d, const int *views, int count, vx_dataset *out);

/* Pixel block of view v. */
static inline const float *vx_dataset_image(const vx_dataset *d, int v) {
    return d->rgb + (size_t)v * d->width * d->height * 3;
}
/* Coverage of view v's pixels. */
static inline const float *vx_dataset_alpha(const vx_dataset *d, int v) {
    return d->alpha + (size_t)v * d->width * d->height;
}

#ifdef __cplusplus
}
#endif

#endif
