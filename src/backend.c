/* backend.c - vx_renderer: picks the CPU or CUDA backend, says on stderr why auto fell
 * back to the CPU, and forwards frames to render_cpu.c or kernels/render.cu (cuda_render.h). */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "cuda_device.h"
#include "cuda_render.h"
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

#ifdef VX_HAVE_CUDA
/* The CUDA network's tensor cores for opts o (vx_render_opts.mlp_tc: 0 where the GPU has
 * them, 1 always, -1 never); scenes without the mlp decoder have no network to place. */
static int vx__set_tc(vx_renderer *r, const vx_render_opts *o) {
    int on = 0;
    if (r->vol.mp.dec.type == VX_DEC_MLP && (on = vx_cuda_mlp_tc_resolve(o->mlp_tc, "render")) < 0) return -1;
    return vx_volume_set_mlp_tc_cuda(r->cuda, on);
}
#endif

int vx_backend_parse(const char *s, vx_backend_kind *k) {
    if (!strcmp(s, "auto")) *k = VX_BACKEND_AUTO;
    else if (!strcmp(s, "cpu")) *k = VX_BACKEND_CPU;
    else if (!strcmp(s, "cuda")) *k = VX_BACKEND_CUDA;
    else return vx_error("--backend: '%s' is not one of auto, cpu, cuda", s);
    return 0;
}

int vx_backend_resolve(vx_backend_kind want, const char *fallback, vx_backend_kind *got, char *device,
                       size_t cap) {
    if (device && cap) device[0] = '\0';
    if (want == VX_BACKEND_CPU) { *got = VX_BACKEND_CPU; return 0; }
#ifdef VX_HAVE_CUDA
    char info[256];
    if (vx_cuda_probe(info, sizeof info)) {
        if (device && cap) snprintf(device, cap, "%s", info);
        *got = VX_BACKEND_CUDA;
        return 0;
    }
    if (want == VX_BACKEND_CUDA) return vx_error("--backend cuda: no usable CUDA device (%s)", info);
    vx_note("%s: no usable CUDA device (%s)", fallback, info);
#else
    if (want == VX_BACKEND_CUDA)
        return vx_error("--backend cuda: this voxray was built without CUDA (nvcc was not found); "
                        "use --backend cpu");
    vx_note("%s: this voxray was built without CUDA", fallback);
#endif
    *got = VX_BACKEND_CPU;
    return 0;
}

int vx_backend_use_device(int index) {
#ifdef VX_HAVE_CUDA
    return vx_cuda_select(index);
#else
    (void)index;
    return 0;
#endif
}

int vx_renderer_create(vx_renderer **out, const vx_scene *s, const vx_render_opts *o,
                       vx_backend_kind kind) {
    *out = NULL;
    vx_renderer *r = vx_calloc(1, sizeof *r, "renderer");
    if (!r) return -1;
    r->scene = s;
    r->opts = *o;
    if (vx_backend_resolve(kind, "using the CPU backend", &r->kind, NULL, 0) || vx_volume_prepare(&r->vol, s, o)) { free(r); return -1; }
#ifdef VX_HAVE_CUDA
    if (r->kind == VX_BACKEND_CUDA && (vx_volume_upload_cuda(&r->cuda, &r->vol, &s->grid, o->half) || vx__set_tc(r, o))) {
        vx_volume_free_cuda(r->cuda);
        vx_volume_free(&r->vol);
        free(r);
        return -1;
    }
#endif
    if (r->kind == VX_BACKEND_CPU && o->half)
        vx_warn("--half only changes CUDA storage; the CPU backend renders float32");
    if (o->mlp_tc > 0 && r->vol.mp.dec.type != VX_DEC_MLP)
        vx_warn("--mlp-tensor-cores: %s has no mlp decoder; the flag has no effect", s->name);
    else if (r->kind == VX_BACKEND_CPU && o->mlp_tc > 0)
        vx_warn("--mlp-tensor-cores only changes the CUDA network; the CPU backend renders in float32");
    *out = r;
    return 0;
}

int vx_renderer_set_opts(vx_renderer *r, const vx_render_opts *o) {
    if (vx_volume_update(&r->vol, r->scene, o)) return -1;
    int tc_changed = o->mlp_tc != r->opts.mlp_tc; /* resolved (and said) once, not every frame */
    r->opts = *o;
#ifdef VX_HAVE_CUDA
    if (r->cuda && (vx_volume_update_cuda(r->cuda, &r->vol) || (tc_changed && vx__set_tc(r, o)))) return -1;
#else
    (void)tc_changed;
#endif
    return 0;
}

int vx_renderer_render(vx_renderer *r, const vx_camera *c, vx_frame *f) {
#ifdef VX_HAVE_CUDA
    if (r->kind == VX_BACKEND_CUDA) return vx_render_cuda(r->cuda, c, f);
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
    vx_volume_free_cuda(r->cuda);
#endif
    vx_volume_free(&r->vol);
    free(r);
}
