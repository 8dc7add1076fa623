/* view_cuda.c - the viewer's CUDA display path: with the CUDA backend, frames are rendered
 * straight into the GL pixel buffer through CUDA-GL interop (kernels/view_interop.cu);
 * when that is unavailable view.c falls back to a host copy. Says on stderr which. */
#include <glad/gl.h>

#include <stdlib.h>

#include "view.h"
#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "cuda_render.h"
#include "cuda_view.h"
#endif

#ifdef VX_HAVE_CUDA
struct vx_view_interop {
    vx_cuda_volume *cv;
    vx_cuda_gl_buffer *buf;   /* registered on g->pbo, or NULL before the first frame */
};

vx_view_interop *vx_view_interop_create(vx_renderer *r) {
    vx_cuda_volume *cv = vx_renderer_cuda_volume(r);
    if (!cv) return NULL;
    vx_view_interop *vi = vx_calloc(1, sizeof *vi, "viewer interop");
    if (!vi) return NULL;
    vi->cv = cv;
    return vi;
}

int vx_view_interop_resize(vx_view_interop *vi, vx_view_gl *g, int w, int h) {
    /* a new buffer store must be unregistered first and registered again after */
    vx_cuda_gl_unregister(vi->buf);
    vi->buf = NULL;
    vx_view_gl_pbo_size(g, w, h);
    return vx_cuda_gl_register(&vi->buf, g->pbo);
}

int vx_view_interop_render(vx_view_interop *vi, vx_view_gl *g, const vx_camera *c, vx_frame *stats) {
    unsigned char *d_ptr = NULL;
    size_t bytes = 0;
    /* the buffer holds a full-size frame; reduced frames (camera moving) use its start */
    if ((!vi->buf || g->pbo_bytes < c->width * c->height * 4) &&
        vx_view_interop_resize(vi, g, c->width, c->height))
        return -1;
    if (vx_cuda_gl_map(vi->buf, &d_ptr, &bytes)) return -1;
    if (bytes < (size_t)c->width * c->height * 4) {
        vx_cuda_gl_unmap(vi->buf);
        return vx_error("CUDA-GL: mapped buffer has %zu bytes, the frame needs %d", bytes,
                        c->width * c->height * 4);
    }
    int rc = vx_render_rgba8_cuda(vi->cv, c, d_ptr, &stats->samples, &stats->rays_hit);
    if (vx_cuda_gl_unmap(vi->buf)) rc = -1;
    if (rc) return -1;
    return vx_view_gl_upload_pbo(g, c->width, c->height);
}

void vx_view_interop_destroy(vx_view_interop *vi) {
    if (!vi) return;
    vx_cuda_gl_unregister(vi->buf);
    free(vi);
}
#else
vx_view_interop *vx_view_interop_create(vx_renderer *r) { (void)r; return NULL; }
int vx_view_interop_render(vx_view_interop *vi, vx_view_gl *g, const vx_camera *c, vx_frame *stats) {
    (void)vi; (void)g; (void)c; (void)stats;
    return vx_error("CUDA-GL interop: this build has no CUDA");
}
int vx_view_interop_resize(vx_view_interop *vi, vx_view_gl *g, int w, int h) {
    (void)vi; (void)g; (void)w; (void)h;
    return 0;
}
void vx_view_interop_destroy(vx_view_interop *vi) { (void)vi; }
#endif
