/* cuda_device.h - the one device API every kernels/ .cu file and every C caller uses
 * (kernels/device.cu): the probe, checked memory, copies, fills, synchronisation and
 * event timers. Each returns 0, or -1 with "file:line: call: reason" in vx_errmsg(). */
#ifndef VX_CUDA_DEVICE_H
#define VX_CUDA_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if a usable CUDA device exists (writes its name to info), else 0 and the reason
 * (no driver, no device, error string) to info. Never aborts. */
int vx_cuda_probe(char *info, size_t cap);

/* Make device (index modulo the device count) current for this process; 0 without a
 * device or driver (the probe reports why), -1 when cudaSetDevice fails. */
int vx_cuda_select(int index);

/* The tensor-core mode of an mlp network (render/fit --mlp-tensor-cores): 1 asks for the
 * TF32 tensor cores (an error on a GPU older than sm_80), -1 for FP32, 0 for the default,
 * the tensor cores where the current GPU has them and FP32 otherwise, which it says on
 * stderr (who: the command). Returns 1 (tensor cores), 0 (FP32) or -1 (vx_errmsg). */
int vx_cuda_mlp_tc_resolve(int mode, const char *who);

int vx_cuda_alloc(void **d, size_t bytes, const char *what);
void vx_cuda_free(void *d);
int vx_cuda_upload(void *d, const void *h, size_t bytes);
int vx_cuda_download(void *h, const void *d, size_t bytes);
int vx_cuda_copy(void *d_dst, const void *d_src, size_t bytes); /* device to device */
int vx_cuda_zero(void *d, size_t bytes);  /* asynchronous (stream order), like every launch */
int vx_cuda_fill_bytes(void *d, int value, size_t bytes); /* asynchronous memset */
int vx_cuda_sync(void);                   /* wait for all work; reports asynchronous faults */
/* Device memory in use now (total - free, all processes), bytes; 0 if unknown. */
size_t vx_cuda_mem_in_use(void);
/* Fill n floats with uniform values in [lo, hi) from a counter hash of (seed, index). */
int vx_cuda_fill_uniform(float *d, size_t n, unsigned seed, float lo, float hi);
/* float32 -> float16 on the device (round to nearest even). */
int vx_cuda_to_half(const float *d_src, void *d_dst, size_t n);
typedef struct vx_cuda_timer vx_cuda_timer;
int vx_cuda_timer_create(vx_cuda_timer **t);
int vx_cuda_timer_start(vx_cuda_timer *t);
int vx_cuda_timer_stop(vx_cuda_timer *t, float *ms); /* waits for the work to finish */
void vx_cuda_timer_destroy(vx_cuda_timer *t);

#ifdef __cplusplus
}
#endif

#endif
