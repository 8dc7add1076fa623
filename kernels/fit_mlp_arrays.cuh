/* fit_mlp_arrays.cuh - the per-sample arrays of the mlp decoder's batched training step
 * (fit_mlp_batch.cuh), a type apart so the device model (fit_device.cuh) can hold them
 * without the step's kernels. */
#ifndef VX_FIT_MLP_ARRAYS_CUH
#define VX_FIT_MLP_ARRAYS_CUH

/* A step's per-sample arrays (capacity cap samples): x the network input (32 floats: 15
 * features, 16 direction terms, 0), reused by the backward for dL/d(raw) (draw[0] density,
 * then 15 features); pt (point, sigma), after the composite (point, weight w = T alpha);
 * dt the segment length; rgb the network's colour; dout (dL/d(output pre-activation),
 * dL/d(raw density)). Per ray of the pass: its first sample and count (-1: put off). */
typedef struct {
    float *x;
    float4 *pt, *rgb, *dout;
    float *dt;
    unsigned long long *ray_start;
    int *ray_n;
} vx_fit_mlp_batch;

#endif
