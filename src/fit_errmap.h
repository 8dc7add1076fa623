/* fit_errmap.h - error-driven ray sampling for `voxray fit --error-map F`: a per-tile map of
 * the training photos' recent squared error and the CDF both backends draw rays from
 * (vx_fit_pick_pixel_map, fit_march.h). fit_train.c owns it; the backends feed it. */
#ifndef VX_FIT_ERRMAP_H
#define VX_FIT_ERRMAP_H

#include <stdint.h>

#include "dataset.h"
#include "fit_march.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Steps between two refreshes of the CDF from the accumulated ray errors. */
#define VX_FIT_ERRMAP_EVERY 16

typedef struct {
    vx_fit_tiles t;     /* layout, n_map and the CDF rays are drawn from (t.cdf = cdf) */
    float *err;         /* per tile: mean squared error of the rays that last fell in it
                         * (1 until a ray does: unseen tiles come first) */
    float *acc;         /* per tile: sum of ray errors and ray count since the last update */
    float *cdf;         /* n + 1 entries */
    int version;        /* rises with every new CDF (the CUDA backend uploads on change) */
} vx_fit_errmap;

/* Tiles of about 1/50 of the larger photo side (16 pixels at 800x800); n_map is
 * fraction * batch rounded. The CDF starts uniform over pixels. */
int vx_fit_errmap_init(vx_fit_errmap *m, const vx_dataset *d, float fraction, int batch);
void vx_fit_errmap_free(vx_fit_errmap *m);

/* Per-ray error of a batch drawn with seed (ray_err[r]: mean squared error of ray r over
 * its 3 channels) into acc, in the tile vx_fit_pick_pixel_map chose for it. The CUDA twin
 * is vx_fit_errmap_add_cuda (kernels/cuda_fit.h). */
void vx_fit_errmap_add_cpu(const vx_fit_tiles *t, uint64_t seed, int n, const float *ray_err, float *acc);

/* Fold acc into err (tiles without rays keep their value), clear acc, and rebuild the CDF:
 * tile weight = (err + 1% of the mean err) x pixels in the tile. */
void vx_fit_errmap_update(vx_fit_errmap *m);

#ifdef __cplusplus
}
#endif

#endif
