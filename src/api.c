/* api.c - the public C API of the shared library (voxray.h) on top of the modules:
 * scenes through scene.h, frames through backend.h, the op through trilinear.h and the
 * CUDA launchers of cuda_trilinear.h. Checks every argument, never prints except vx_warn. */
#include "voxray.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "commands.h"
#include "scene.h"
#include "sparse_grid.h"
#include "trilinear.h"
#include "vx_common.h"
#ifdef VX_HAVE_CUDA
#include "cuda_device.h"
#include "cuda_trilinear.h"
#endif

_Static_assert(sizeof(voxray_grid_desc) == sizeof(vx_grid_desc), "voxray_grid_desc mirrors vx_grid_desc");

struct voxray_scene {
    vx_scene scene;
    vx_renderer *r;          /* prepared on the first render, kept between calls */
    int r_backend, r_half, r_no_skip;
};

int voxray_api_version(void) { return VOXRAY_API_VERSION; }
const char *voxray_version(void) { return VX_VERSION; }
const char *voxray_last_error(void) { return vx_errmsg(); }

int voxray_cuda_available(char *info, size_t cap) {
#ifdef VX_HAVE_CUDA
    char buf[256];
    int ok = vx_cuda_probe(buf, sizeof buf);
#else
    const char *buf = "this voxray was built without CUDA (nvcc was not found)";
    int ok = 0;
#endif
    if (info && cap) snprintf(info, cap, "%s", buf);
    return ok;
}

/* ---- scenes --------------------------------------------------------------------------- */

int voxray_scene_load(const char *path, const voxray_load_desc *desc, voxray_scene **out) {
    if (!out) return vx_error("voxray_scene_load: out is NULL");
    *out = NULL;
    if (!path || !path[0]) return vx_error("voxray_scene_load: no path given");
    vx_load_opts lo;
    memset(&lo, 0, sizeof lo);
    if (desc) {
        lo.raw_spec = desc->raw;
        memcpy(lo.spacing, desc->spacing, sizeof lo.spacing);
        lo.volume_index = desc->volume;
        lo.preset = desc->preset;
        if (desc->volume < 0) return vx_error("%s: volume index %d is negative", path, desc->volume);
    }
    voxray_scene *s = vx_calloc(1, sizeof *s, "scene");
    if (!s) return -1;
    if (vx_scene_load(path, &lo, &s->scene)) { free(s); return -1; }
    *out = s;
    return 0;
}

void voxray_scene_desc_default(voxray_scene_desc *d) {
    memset(d, 0, sizeof *d);
    for (int a = 0; a < 3; a++) { d->bbox_min[a] = -1.0; d->bbox_max[a] = 1.0; d->background[a] = 1.0f; }
    d->align_corners = 1;
    d->decoder = VOXRAY_DECODER_AUTO;
    d->density_activation = -1;
    d->color_activation = -1;
    d->density_scale = 1.0f;
    d->sh_degree = -1;
    d->step = 0.5f;
    d->name = "array";
}

/* The decoder a desc asks for, with the manifest's defaults (scene.c, docs/FORMAT.md). */
static int vx__desc_decoder(vx_scene *sc, const voxray_scene_desc *d, const char *name) {
    vx_decoder *dec = &sc->dec;
    int nc = sc->grid.nc;
    if (d->decoder == VOXRAY_DECODER_AUTO) {
        if (vx_scene_default_decoder(sc)) return -1;
    } else if (d->decoder == VOXRAY_DECODER_RGBA || d->decoder == VOXRAY_DECODER_SH) {
        memset(dec, 0, sizeof *dec);
        dec->type = d->decoder;
        dec->color_act = d->decoder == VOXRAY_DECODER_SH ? VX_CACT_PLENOXELS : VX_CACT_CLAMP;
        if (d->decoder == VOXRAY_DECODER_SH) {
            int deg = d->sh_degree;
            if (deg < 0)
                for (int k = 0; k <= 3; k++) if (1 + 3 * (k + 1) * (k + 1) == nc) deg = k;
            if (deg < 0 || deg > 3)
                return vx_error("%s: sh decoder: %d channels is not 1 + 3(d+1)^2 for d in 0..3", name, nc);
            dec->sh_degree = deg;
        }
    } else if (d->decoder == VOXRAY_DECODER_SCALAR) {
        if (nc != 1) return vx_error("%s: scalar decoder needs 1 channel but the grid has %d", name, nc);
        if (vx_scalar_decoder_init(dec, &sc->grid, d->preset)) return -1;
        if (d->window[1] > d->window[0]) { dec->window_lo = d->window[0]; dec->window_hi = d->window[1]; }
        if (d->tf_n) {
            if (d->tf_n < 2 || d->tf_n > VX_TF_MAX || !d->tf)
                return vx_error("%s: transfer function needs 2..%d control points, has %d", name, VX_TF_MAX, d->tf_n);
            for (int i = 0; i < d->tf_n; i++)
                for (int k = 0; k < 5; k++) dec->tf[i][k] = d->tf[i * 5 + k];
            dec->tf_n = d->tf_n;
            dec->density_scale = 1.0f;
        }
    } else {
        return vx_error("%s: decoder %d is not one of rgba (0), sh (1), scalar (2)%s", name, d->decoder,
                        d->decoder == VOXRAY_DECODER_MLP ? ": an mlp decoder comes with its weights, from a scene file" : "");
    }
    if (dec->type != VX_DEC_SCALAR) {
        if (d->preset || d->tf_n) return vx_error("%s: preset and transfer function apply only to the scalar decoder", name);
        if (d->density_activation >= 0) {
            if (d->density_activation > VX_DACT_NONE)
                return vx_error("%s: density activation %d is not one of relu, softplus, exp, none", name,
                                d->density_activation);
            dec->density_act = d->density_activation;
        }
        if (d->color_activation >= 0) {
            int ca = d->color_activation;
            int ok = ca == VX_CACT_SIGMOID || (ca == VX_CACT_CLAMP && dec->type == VX_DEC_RGBA) ||
                     (ca == VX_CACT_PLENOXELS && dec->type == VX_DEC_SH);
            if (!ok) return vx_error("%s: colour activation %d is not valid for the %s decoder", name, ca,
                                     dec->type == VX_DEC_RGBA ? "rgba (clamp, sigmoid)" : "sh (plenoxels, sigmoid)");
            dec->color_act = ca;
        }
    } else if (d->density_activation >= 0 || d->color_activation >= 0) {
        return vx_error("%s: density and colour activations do not apply to the scalar decoder", name);
    }
    if (!(d->density_scale >= 0.0f && d->density_scale <= 1e9f))
        return vx_error("%s: density scale %g is outside [0, 1e9]", name, d->density_scale);
    if (d->density_scale != 1.0f || dec->type != VX_DEC_SCALAR) dec->density_scale = d->density_scale;
    return vx_decoder_validate(dec, nc, name);
}

int voxray_scene_from_array(const float *data, int nz, int ny, int nx, int nc, const voxray_scene_desc *desc,
                            voxray_scene **out) {
    if (!out) return vx_error("voxray_scene_from_array: out is NULL");
    *out = NULL;
    voxray_scene_desc defaults;
    if (!desc) { voxray_scene_desc_default(&defaults); desc = &defaults; }
    const char *name = desc->name && desc->name[0] ? desc->name : "array";
    if (!data) return vx_error("%s: no grid data", name);
    voxray_scene *s = vx_calloc(1, sizeof *s, "scene");
    if (!s) return -1;
    vx_scene *sc = &s->scene;
    if (vx_grid_alloc(&sc->grid, nx, ny, nz, nc, name)) { free(s); return -1; }
    size_t n = vx_grid_count(&sc->grid);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(data[i])) {
            vx_error("%s: grid value %zu (voxel %zu, channel %zu) is not finite", name, i, i / (size_t)nc, i % (size_t)nc);
            goto fail;
        }
    memcpy(sc->grid.data, data, n * sizeof(float));
    snprintf(sc->name, sizeof sc->name, "%s", name);
    snprintf(sc->path, sizeof sc->path, "%s", name);
    for (int a = 0; a < 3; a++)
        if (!(desc->bbox_max[a] > desc->bbox_min[a]) || !isfinite(desc->bbox_min[a]) || !isfinite(desc->bbox_max[a])) {
            vx_error("%s: bbox_max[%d] must be greater than bbox_min[%d] (both finite)", name, a, a);
            goto fail;
        }
    if (desc->align_corners && (nx < 2 || ny < 2 || nz < 2)) {
        vx_error("%s: align_corners needs at least 2 samples per axis (grid is %dx%dx%d)", name, nx, ny, nz);
        goto fail;
    }
    vx_grid_set_bbox(&sc->grid, desc->bbox_min, desc->bbox_max, desc->align_corners != 0);
    float w2i[12];
    if (vx_grid_world_to_index(&sc->grid, w2i)) goto fail;
    if (vx__desc_decoder(sc, desc, name)) goto fail;
    for (int c = 0; c < 3; c++) {
        if (!(desc->background[c] >= 0.0f && desc->background[c] <= 1.0f)) {
            vx_error("%s: background[%d] = %g is outside [0, 1]", name, c, desc->background[c]);
            goto fail;
        }
        sc->background[c] = desc->background[c];
    }
    if (!(desc->step >= 1e-3f && desc->step <= 16.0f)) {
        vx_error("%s: step %g is outside [0.001, 16]", name, desc->step);
        goto fail;
    }
    sc->step = desc->step;
    sc->up[1] = 1.0;
    sc->fov_deg = 40.0;
    *out = s;
    return 0;
fail:
    vx_scene_free(sc);
    free(s);
    return -1;
}

void voxray_scene_free(voxray_scene *s) {
    if (!s) return;
    vx_renderer_destroy(s->r);
    vx_scene_free(&s->scene);
    free(s);
}

/* The camera a scene opens with: its manifest's, else the default one (as the CLI). */
static void vx__scene_camera(const vx_scene *s, double eye[3], double target[3], double up[3], double *fov) {
    vx_scene_default_camera(s, eye, target, up, fov);
    if (s->has_camera) {
        memcpy(eye, s->eye, 3 * sizeof(double));
        memcpy(target, s->target, 3 * sizeof(double));
        memcpy(up, s->up, 3 * sizeof(double));
        *fov = s->fov_deg;
    }
}

int voxray_scene_get_info(const voxray_scene *s, voxray_scene_info *info) {
    if (!s || !info) return vx_error("voxray_scene_get_info: NULL argument");
    memset(info, 0, sizeof *info);
    const vx_scene *sc = &s->scene;
    info->nx = sc->grid.nx; info->ny = sc->grid.ny; info->nz = sc->grid.nz; info->nc = sc->grid.nc;
    info->decoder = sc->dec.type;
    info->sh_degree = sc->dec.sh_degree;
    vx_grid_world_bounds(&sc->grid, info->world_min, info->world_max);
    vx__scene_camera(sc, info->eye, info->target, info->up, &info->fov);
    memcpy(info->background, sc->background, sizeof info->background);
    info->step = sc->step;
    snprintf(info->name, sizeof info->name, "%s", sc->name);
    return 0;
}

const float *voxray_scene_grid(voxray_scene *s) {
    if (!s) return NULL;
    if (s->scene.grid.sparse) { /* the renderer keeps pointers into the grid: drop it first */
        if (s->r) { vx_renderer_destroy(s->r); s->r = NULL; }
        if (vx_grid_densify(&s->scene.grid)) return NULL;
    }
    return s->scene.grid.data;
}

/* ---- rendering ------------------------------------------------------------------------ */

void voxray_render_desc_default(voxray_render_desc *d) {
    memset(d, 0, sizeof *d);
    d->width = d->height = 256;
    d->up[1] = 1.0;
    d->fov = 40.0;
    d->backend = VOXRAY_BACKEND_AUTO;
    d->stop = -1.0f;
}

int voxray_render(voxray_scene *s, const voxray_render_desc *d, float *rgb, float *alpha, float *depth) {
    if (!s || !d || !rgb || !alpha) return vx_error("voxray_render: scene, desc, rgb and alpha are required");
    if (d->backend < VOXRAY_BACKEND_AUTO || d->backend > VOXRAY_BACKEND_CUDA)
        return vx_error("voxray_render: backend %d is not auto (0), cpu (1) or cuda (2)", d->backend);
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.step = d->step > 0.0f ? d->step : 0.0f;
    if (d->stop >= 0.0f) o.stop = d->stop;
    if (!(o.stop < 1.0f)) return vx_error("voxray_render: stop %g must be below 1", d->stop);
    if (d->has_background) {
        o.has_background = 1;
        for (int c = 0; c < 3; c++) {
            if (!(d->background[c] >= 0.0f && d->background[c] <= 1.0f))
                return vx_error("voxray_render: background[%d] = %g is outside [0, 1]", c, d->background[c]);
            o.background[c] = d->background[c];
        }
    }
    o.want_depth = depth != NULL;
    o.threads = d->threads > 0 ? d->threads : 0;
    o.no_skip = d->no_skip != 0;
    o.half = d->half != 0;
    o.mlp_tc = d->mlp_tensor_cores > 0 ? 1 : d->mlp_tensor_cores < 0 ? -1 : 0;

    vx_camera cam;
    double eye[3], target[3], up[3], fov;
    vx__scene_camera(&s->scene, eye, target, up, &fov);
    if (d->has_camera) {
        memcpy(eye, d->eye, sizeof eye);
        memcpy(target, d->target, sizeof target);
        memcpy(up, d->up, sizeof up);
        fov = d->fov;
    }
    if (!(fov > 0.0 && fov < 180.0)) return vx_error("voxray_render: fov %g is outside (0, 180) degrees", fov);
    if (vx_camera_look_at(&cam, eye, target, up, fov, d->width, d->height)) return -1;

    if (s->r && (s->r_backend != d->backend || s->r_half != o.half || s->r_no_skip != o.no_skip)) {
        vx_renderer_destroy(s->r);
        s->r = NULL;
    }
    if (!s->r) {
        if (vx_renderer_create(&s->r, &s->scene, &o, (vx_backend_kind)d->backend)) return -1;
        s->r_backend = d->backend;
        s->r_half = o.half;
        s->r_no_skip = o.no_skip;
    } else if (vx_renderer_set_opts(s->r, &o)) {
        return -1;
    }
    vx_frame f;
    if (vx_frame_alloc(&f, d->width, d->height, depth != NULL)) return -1;
    int rc = vx_renderer_render(s->r, &cam, &f);
    if (!rc) {
        size_t n = (size_t)d->width * d->height;
        memcpy(rgb, f.rgb, n * 3 * sizeof(float));
        memcpy(alpha, f.alpha, n * sizeof(float));
        if (depth) memcpy(depth, f.depth, n * sizeof(float));
    }
    vx_frame_free(&f);
    return rc;
}

const char *voxray_render_backend(const voxray_scene *s) {
    return s && s->r ? vx_renderer_backend_name(s->r) : "";
}

int voxray_convert(int argc, const char *const *argv) {
    if (argc < 1 || !argv || !argv[0] || strcmp(argv[0], "convert") != 0) {
        vx_error("voxray_convert: argv[0] must be \"convert\"");
        return 2;
    }
    vx_clear_error();
    return vx_cmd_convert(argc, (char **)argv);
}

/* ---- the trilinear op and the grid gather --------------------------------------------- */

/* Checks shared by the op entry points; sets *ni to n as an int. */
static int vx__check_call(const char *what, int device, int dtype, long long n, int *ni, int allow_f16) {
    if (device != VOXRAY_HOST && device != VOXRAY_CUDA)
        return vx_error("%s: device %d is not host (0) or cuda (1)", what, device);
    if (dtype != VOXRAY_F32 && dtype != VOXRAY_F64 && !(allow_f16 && dtype == VOXRAY_F16))
        return vx_error("%s: dtype %d is not supported here", what, dtype);
    if (dtype == VOXRAY_F64 && device == VOXRAY_CUDA)
        return vx_error("%s: float64 runs on the host only (the CUDA kernels are float32)", what);
    if (dtype == VOXRAY_F16 && device == VOXRAY_HOST)
        return vx_error("%s: float16 grids are stored on CUDA only", what);
    if (n < 0 || n > INT_MAX) return vx_error("%s: %lld points is outside 0..%d", what, n, INT_MAX);
#ifndef VX_HAVE_CUDA
    if (device == VOXRAY_CUDA) return vx_error("%s: this voxray was built without CUDA (nvcc was not found)", what);
#endif
    *ni = (int)n;
    return 0;
}

/* The fastest versions on the H200 (docs/BENCHMARKS.md): version 2 both ways. */
#define VX__FWD_VERSION 2
#define VX__BWD_VERSION 2

int voxray_trilinear_forward(int device, int dtype, const void *feats, const void *points, void *out, long long n,
                             int f, void *stream) {
    int ni;
    if (vx__check_call("trilinear forward", device, dtype, n, &ni, 0)) return -1;
    if (f < 1 || (size_t)n * 8 * (size_t)f > ((size_t)1 << 40))
        return vx_error("trilinear forward: F = %d with N = %lld is outside the op's range", f, n);
    if (ni == 0) return 0;
    if (!feats || !points || !out) return vx_error("trilinear forward: NULL array");
    if (device == VOXRAY_HOST) {
        if (dtype == VOXRAY_F64) vx_trilinear_forward_f64_cpu(feats, points, out, ni, f);
        else vx_trilinear_forward_cpu(feats, points, out, ni, f);
        return 0;
    }
#ifdef VX_HAVE_CUDA
    return vx_trilinear_forward_stream_cuda(VX__FWD_VERSION, feats, points, out, ni, f, 0, stream);
#else
    (void)stream;
    return -1;
#endif
}

int voxray_trilinear_backward(int device, int dtype, const void *dout, const void *points, void *dfeats,
                              long long n, int f, void *stream) {
    int ni;
    if (vx__check_call("trilinear backward", device, dtype, n, &ni, 0)) return -1;
    if (f < 1 || (size_t)n * 8 * (size_t)f > ((size_t)1 << 40))
        return vx_error("trilinear backward: F = %d with N = %lld is outside the op's range", f, n);
    if (ni == 0) return 0;
    if (!dout || !points || !dfeats) return vx_error("trilinear backward: NULL array");
    if (device == VOXRAY_HOST) {
        if (dtype == VOXRAY_F64) vx_trilinear_backward_f64_cpu(dout, points, dfeats, ni, f);
        else vx_trilinear_backward_cpu(dout, points, dfeats, ni, f);
        return 0;
    }
#ifdef VX_HAVE_CUDA
    return vx_trilinear_backward_stream_cuda(VX__BWD_VERSION, dout, points, dfeats, ni, f, 0, stream);
#else
    (void)stream;
    return -1;
#endif
}

int voxray_grid_desc_unit(voxray_grid_desc *g, int nx, int ny, int nz, int nc) {
    if (!g) return vx_error("voxray_grid_desc_unit: g is NULL");
    if (nx < 2 || ny < 2 || nz < 2 || nc < 1 || nc > 64)
        return vx_error("grid %d x %d x %d x %d: need at least 2 samples per axis and 1..64 channels", nx, ny, nz, nc);
    memset(g, 0, sizeof *g);
    g->nx = nx; g->ny = ny; g->nz = nz; g->nc = nc;
    /* index = (p + 1) / 2 * (n - 1) per axis */
    g->world_to_index[0] = 0.5f * (float)(nx - 1); g->world_to_index[3] = 0.5f * (float)(nx - 1);
    g->world_to_index[5] = 0.5f * (float)(ny - 1); g->world_to_index[7] = 0.5f * (float)(ny - 1);
    g->world_to_index[10] = 0.5f * (float)(nz - 1); g->world_to_index[11] = 0.5f * (float)(nz - 1);
    return 0;
}

static int vx__check_grid(const char *what, const voxray_grid_desc *g) {
    if (!g) return vx_error("%s: grid desc is NULL", what);
    if (g->nx < 1 || g->ny < 1 || g->nz < 1 || g->nc < 1 || g->nc > 64)
        return vx_error("%s: grid %d x %d x %d x %d is not valid (channels 1..64)", what, g->nx, g->ny, g->nz, g->nc);
    for (int i = 0; i < 12; i++)
        if (!isfinite(g->world_to_index[i])) return vx_error("%s: world_to_index[%d] is not finite", what, i);
    return 0;
}

int voxray_grid_gather(int device, int grid_dtype, const voxray_grid_desc *g, const void *grid, const void *pts,
                       long long m, void *out, void *stream) {
    int mi;
    if (vx__check_call("grid gather", device, grid_dtype, m, &mi, 1) || vx__check_grid("grid gather", g)) return -1;
    if (mi == 0) return 0;
    if (!grid || !pts || !out) return vx_error("grid gather: NULL array");
    const vx_grid_desc *vg = (const vx_grid_desc *)g;
    if (device == VOXRAY_HOST) {
        if (grid_dtype == VOXRAY_F64) vx_grid_gather_f64_cpu(vg, grid, pts, mi, out);
        else vx_grid_gather_cpu(vg, grid, pts, mi, out);
        return 0;
    }
#ifdef VX_HAVE_CUDA
    return vx_grid_gather_stream_cuda(vg, grid, grid_dtype == VOXRAY_F16, pts, mi, out, stream);
#else
    (void)stream;
    return -1;
#endif
}

int voxray_grid_scatter(int device, int grid_dtype, const voxray_grid_desc *g, const void *dout, const void *pts,
                        long long m, void *dgrid, void *stream) {
    int mi;
    if (vx__check_call("grid scatter", device, grid_dtype, m, &mi, 1) || vx__check_grid("grid scatter", g)) return -1;
    if (mi == 0) return 0;
    if (!dout || !pts || !dgrid) return vx_error("grid scatter: NULL array");
    const vx_grid_desc *vg = (const vx_grid_desc *)g;
    if (device == VOXRAY_HOST)
        return grid_dtype == VOXRAY_F64 ? vx_grid_scatter_f64_cpu(vg, dout, pts, mi, dgrid)
                                        : vx_grid_scatter_cpu(vg, dout, pts, mi, dgrid);
#ifdef VX_HAVE_CUDA
    return vx_grid_scatter_stream_cuda(vg, dout, pts, mi, dgrid, grid_dtype == VOXRAY_F16, stream);
#else
    (void)stream;
    return -1;
#endif
}
