/* backend.c - vx_renderer: picks the CPU or CUDA backend, says on stderr why auto fell
 * back to the CPU, and forwards frames to render_cpu.c or kernels/ (vx_cuda.h). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "vx_cuda.h"
#endif

struct vx_renderer {
    vx_backend_kind kind; /* resolved: CPU or CUDA */
    vx_volume vol;
    vx_render_opts opts;
    const vx_scene *scene;
#ifdef VX_HAVE_CUDA
    vx_cuda_volume *cuda;
#endif
};

int vx_backend_parse(const char *s, vx_backend_kind *k) {
    if (!strcmp(s, "auto")) *k = VX_BACKEND_AUTO;
    else if (!strcmp(s, "cpu")) *k = VX_BACKEND_CPU;
    else if (!strcmp(s, "cuda")) *k = VX_BACKEND_CUDA;
    else return vx_error("--backend: '%s' is not one of auto, cpu, cuda", s);
    return 0;
}

/* Resolve auto/cuda to what this build and machine can do. */
static int vx__resolve(vx_backend_kind want, vx_backend_kind *got) {
    if (want == VX_BACKEND_CPU) { *got = VX_BACKEND_CPU; return 0; }
#ifdef VX_HAVE_CUDA
    char info[256];
    if (vx_cuda_probe(info, sizeof info)) { *got = VX_BACKEND_CUDA; return 0; }
    if (want == VX_BACKEND_CUDA) return vx_error("--backend cuda: no usable CUDA device (%s)", info);
    vx_note("using the CPU backend: no usable CUDA device (%s)", info);
#else
    if (want == VX_BACKEND_CUDA)
        return vx_error("--backend cuda: this voxray was built without CUDA (nvcc was not found)");
    vx_note("using the CPU backend: this voxray was built without CUDA");
#endif
    *got = VX_BACKEND_CPU;
    return 0;
}

int vx_renderer_create(vx_renderer **out, const vx_scene *s, const vx_render_opts *o,
                       vx_backend_kind kind) {
    *out = NULL;
    vx_renderer *r = vx_calloc(1, sizeof *r, "renderer");
    if (!r) return -1;
    r->scene = s;
    r->opts = *o;
    if (vx__resolve(kind, &r->kind) || vx_volume_prepare(&r->vol, s, o)) { free(r); return -1; }
#ifdef VX_HAVE_CUDA
    if (r->kind == VX_BACKEND_CUDA && vx_cuda_volume_create(&r->cuda, &r->vol, &s->grid, o->half)) {
        vx_volume_free(&r->vol);
        free(r);
        return -1;
    }
#endif
    if (r->kind == VX_BACKEND_CPU && o->half)
        vx_warn("--half only changes CUDA storage; the CPU backend renders float32");
    *out = r;
    return 0;
}

int vx_renderer_set_opts(vx_renderer *r, const vx_render_opts *o) {
    if (vx_volume_update(&r->vol, r->scene, o)) return -1;
    r->opts = *o;
#ifdef VX_HAVE_CUDA
    if (r->cuda && vx_cuda_volume_set_params(r->cuda, &r->vol.mp)) return -1;
#endif
    return 0;
}

int vx_renderer_render(vx_renderer *r, const vx_camera *c, vx_frame *f) {
#ifdef VX_HAVE_CUDA
    if (r->kind == VX_BACKEND_CUDA) return vx_cuda_render(r->cuda, c, f);
#endif
    return vx_render_cpu(&r->vol, c, &r->opts, f);
}

const char *vx_renderer_backend_name(const vx_renderer *r) {
    return r->kind == VX_BACKEND_CUDA ? "cuda" : "cpu";
}

const vx_volume *vx_renderer_volume(const vx_renderer *r) { return &r->vol; }

struct vx_cuda_volume *vx_renderer_cuda_volume(const vx_renderer *r) {
#ifdef VX_HAVE_CUDA
    return r->kind == VX_BACKEND_CUDA ? r->cuda : NULL;
#else
    (void)r;
    return NULL;
#endif
}

void vx_renderer_destroy(vx_renderer *r) {
    if (!r) return;
#ifdef VX_HAVE_CUDA
    vx_cuda_volume_destroy(r->cuda);
#endif
    vx_volume_free(&r->vol);
    free(r);
}
