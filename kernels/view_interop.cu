/* view_interop.cu - the viewer's GPU display path: render a frame straight into device
 * memory as RGBA8 (the fused renderer of render.cu, then a quantizer that rounds like
 * vx_image_quantize) and share a GL pixel buffer with CUDA (register once, map/unmap per
 * frame). src/view/view_cuda.c calls it through cuda_view.h; the GPU tests call
 * vx_render_rgba8_cuda without any GL. */
#include <stdlib.h>

#include "common.cuh"
#include "cuda_device.h"
#include "cuda_view.h"

/* cuda_gl_interop.h needs the GL headers; a build machine without them (the device's
 * NO_VIEWER build) still compiles this file, with the one declaration it uses. */
#if __has_include(<GL/gl.h>)
#include <GL/gl.h>
#include <cuda_gl_interop.h>
#else
extern "C" cudaError_t cudaGraphicsGLRegisterBuffer(struct cudaGraphicsResource **resource,
                                                    unsigned int buffer, unsigned int flags);
#endif

// ----------------------------------------------------------------------------------------
// quantizer: float rgb -> RGBA8, round to nearest even like lrintf in vx_image_quantize

__device__ __forceinline__ unsigned char vx_q8_dev(float v) {
    if (!(v > 0.0f)) return 0; /* also NaN */
    if (v >= 1.0f) return 255;
    return (unsigned char)__float2int_rn(v * 255.0f);
}

__global__ void vx_quantize_rgba8_kernel(const float *__restrict__ rgb, size_t n, uchar4 *__restrict__ out) {
    size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    out[p] = make_uchar4(vx_q8_dev(rgb[3 * p]), vx_q8_dev(rgb[3 * p + 1]), vx_q8_dev(rgb[3 * p + 2]), 255);
}

extern "C" int vx_cuda_quantize_rgba8(const float *d_rgb, int w, int h, unsigned char *d_rgba8) {
    size_t n = (size_t)w * h;
    if (!n) return 0;
    vx_quantize_rgba8_kernel<<<vx_ceil_div(n, 256), 256>>>(d_rgb, n, (uchar4 *)d_rgba8);
    VX_LAUNCH_CHECK("vx_quantize_rgba8_kernel");
    return 0;
}

extern "C" int vx_render_rgba8_cuda(vx_cuda_volume *cv, const vx_camera *c, unsigned char *d_rgba8,
                                    long long *samples, long long *rays_hit) {
    const float *d_rgb, *d_alpha;
    if (vx_render_device_cuda(cv, c, 0, NULL, samples, rays_hit)) return -1;
    if (vx_volume_frame_cuda(cv, &d_rgb, &d_alpha)) return -1;
    if (vx_cuda_quantize_rgba8(d_rgb, c->width, c->height, d_rgba8)) return -1;
    return vx_cuda_sync();
}

// ----------------------------------------------------------------------------------------
// GL pixel buffer sharing

struct vx_cuda_gl_buffer {
    cudaGraphicsResource_t res;
    int mapped;
};

extern "C" int vx_cuda_gl_register(vx_cuda_gl_buffer **out, unsigned int gl_pbo) {
    *out = NULL;
    vx_cuda_gl_buffer *b = (vx_cuda_gl_buffer *)vx_calloc(1, sizeof *b, "CUDA-GL buffer");
    if (!b) return -1;
    cudaError_t e = cudaGraphicsGLRegisterBuffer(&b->res, gl_pbo, cudaGraphicsRegisterFlagsWriteDiscard);
    if (e != cudaSuccess) {
        cudaGetLastError();
        free(b);
        return vx_error("cudaGraphicsGLRegisterBuffer: %s", cudaGetErrorString(e));
    }
    *out = b;
    return 0;
}

extern "C" int vx_cuda_gl_map(vx_cuda_gl_buffer *b, unsigned char **d_ptr, size_t *bytes) {
    VX_CUDA_CHECK(cudaGraphicsMapResources(1, &b->res, 0));
    b->mapped = 1;
    VX_CUDA_CHECK(cudaGraphicsResourceGetMappedPointer((void **)d_ptr, bytes, b->res));
    return 0;
}

extern "C" int vx_cuda_gl_unmap(vx_cuda_gl_buffer *b) {
    if (!b->mapped) return 0;
    b->mapped = 0;
    VX_CUDA_CHECK(cudaGraphicsUnmapResources(1, &b->res, 0));
    return 0;
}

extern "C" void vx_cuda_gl_unregister(vx_cuda_gl_buffer *b) {
    if (!b) return;
    vx_cuda_gl_unmap(b);
    cudaGraphicsUnregisterResource(b->res);
    free(b);
}
