/* voxray.h - voxray's public C API: the one header of the shared library
 * build/libvoxray.so, for programs that embed voxray and for the Python package
 * (python/voxray, through ctypes). The CLI does not use it; src/api.c implements it on
 * top of the modules (scene.h, backend.h, trilinear.h, kernels/cuda_trilinear.h).
 *
 * BUILD
 *   make lib                  -> build/libvoxray.so (CUDA runtime linked in statically
 *                                when nvcc was found at build time; CPU-only otherwise)
 *   cc app.c -Isrc -Lbuild -lvoxray -Wl,-rpath,$PWD/build
 *
 * USE
 *   voxray_scene *s;
 *   if (voxray_scene_load("scenes/orbs", NULL, &s)) { puts(voxray_last_error()); exit(1); }
 *   voxray_render_desc rd;
 *   voxray_render_desc_default(&rd);             // 256x256, the scene's default camera
 *   float *rgb = malloc(rd.width * rd.height * 3 * sizeof(float));
 *   float *alpha = malloc(rd.width * rd.height * sizeof(float));
 *   voxray_render(s, &rd, rgb, alpha, NULL);      // rows top to bottom, RGB interleaved
 *   voxray_scene_free(s);
 *
 *   A grid that is only in memory (Z, Y, X, C float32, channel innermost) becomes a scene
 *   with voxray_scene_from_array(); the desc says where it sits and how it is decoded,
 *   with the same meaning as the fields of a scene.json manifest (docs/FORMAT.md).
 *
 *   The trilinear op (cell form: feats (N,8,F), points (N,3) in [-1,1] -> (N,F)) and the
 *   dense-grid gather / gradient scatter run on host pointers (VOXRAY_HOST) or on CUDA
 *   device pointers (VOXRAY_CUDA) queued on a caller's cudaStream_t (NULL: the default
 *   stream); device calls return as soon as the work is queued. They are the kernels of
 *   kernels/trilinear.cu and the references of src/trilinear_cpu.c, nothing else.
 *
 * RETURN CONVENTION
 *   Every int function returns 0 on success and -1 on failure; voxray_last_error() then
 *   holds one line naming what was wrong (per thread, valid until the next call).
 *   Nothing aborts or exits the process. Warnings (e.g. "using the CPU backend") go to
 *   stderr as one line prefixed "voxray: ".
 *
 * THREADS
 *   Calls on different scenes may run on different threads at once; one scene is used by
 *   one thread at a time (it keeps its renderer). The op entry points keep no state.
 *
 * STABILITY
 *   VOXRAY_API_VERSION changes when a declaration here changes; structs are only ever
 *   extended at the end, and callers fill them through the *_default() functions. */
#ifndef VOXRAY_H
#define VOXRAY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VOXRAY_API_VERSION 1

int voxray_api_version(void);          /* VOXRAY_API_VERSION of the built library */
const char *voxray_version(void);      /* "0.1.0" */
const char *voxray_last_error(void);   /* last failure on this thread ("" if none) */
/* 1 when the library was built with CUDA and a usable device exists, else 0; info gets
 * the device name or the reason (cap bytes, NUL-terminated). */
int voxray_cuda_available(char *info, size_t cap);

/* ---- scenes --------------------------------------------------------------------------- */

typedef struct voxray_scene voxray_scene;

typedef struct {
    const char *raw;       /* "X,Y,Z,dtype[,endian]" for headerless files, or NULL */
    double spacing[3];     /* raw files: voxel spacing (0: 1) */
    int volume;            /* 4-D files: which volume (0: the first) */
    const char *preset;    /* scalar volumes: transfer-function preset, or NULL */
} voxray_load_desc;

/* Open a manifest (.json), a directory holding scene.json, a .npy grid or any volume
 * format voxray reads (docs/FORMATS.md). desc may be NULL. */
int voxray_scene_load(const char *path, const voxray_load_desc *desc, voxray_scene **out);

/* MLP: reported by voxray_scene_get_info for scenes with the mlp decoder (a manifest with its
 * weights file); voxray_scene_from_grid does not build one. */
enum { VOXRAY_DECODER_AUTO = -1, VOXRAY_DECODER_RGBA = 0, VOXRAY_DECODER_SH = 1, VOXRAY_DECODER_SCALAR = 2,
       VOXRAY_DECODER_MLP = 3 };
enum { VOXRAY_DENSITY_RELU = 0, VOXRAY_DENSITY_SOFTPLUS, VOXRAY_DENSITY_EXP, VOXRAY_DENSITY_NONE };
enum { VOXRAY_COLOR_CLAMP = 0, VOXRAY_COLOR_SIGMOID, VOXRAY_COLOR_PLENOXELS };

typedef struct {
    double bbox_min[3], bbox_max[3]; /* world box of the grid (default [-1,1]^3) */
    int align_corners;               /* 1: box = lattice hull (default); 0: half a cell more */
    int decoder;                     /* VOXRAY_DECODER_*; AUTO: from the channel count */
    int density_activation;          /* VOXRAY_DENSITY_* (rgba, sh); -1: relu */
    int color_activation;            /* VOXRAY_COLOR_*; -1: the decoder's default */
    float density_scale;             /* multiplies sigma (default 1) */
    int sh_degree;                   /* sh: 0..3; -1: from the channel count */
    const char *preset;              /* scalar: transfer-function preset, or NULL */
    float window[2];                 /* scalar: value window; lo >= hi keeps the percentiles */
    int tf_n;                        /* scalar: control points in tf (0: the preset's) */
    const float *tf;                 /* scalar: tf_n rows [v, r, g, b, sigma], v ascending */
    float background[3];             /* default white */
    float step;                      /* sample spacing, fraction of a voxel (default 0.5) */
    const char *name;                /* shown in messages (default "array") */
} voxray_scene_desc;

void voxray_scene_desc_default(voxray_scene_desc *d);

/* A scene from nz*ny*nx*nc floats in memory, (Z, Y, X, C) with the channel innermost;
 * the data is copied. Values must be finite. */
int voxray_scene_from_array(const float *data, int nz, int ny, int nx, int nc, const voxray_scene_desc *desc,
                            voxray_scene **out);
void voxray_scene_free(voxray_scene *s);

typedef struct {
    int nx, ny, nz, nc;              /* lattice size and channels */
    int decoder, sh_degree;          /* VOXRAY_DECODER_* and the SH degree */
    double world_min[3], world_max[3];
    double eye[3], target[3], up[3], fov; /* the scene's camera, or the default one */
    float background[3];
    float step;
    char name[256];
} voxray_scene_info;

int voxray_scene_get_info(const voxray_scene *s, voxray_scene_info *info);
/* The scene's grid: nz*ny*nx*nc floats (Z, Y, X, C), owned by the scene. A sparse scene
 * (bricks, a .sparse.npz) is made dense in memory by the first call; NULL (and a message)
 * when that does not fit. */
const float *voxray_scene_grid(voxray_scene *s);

/* ---- rendering ------------------------------------------------------------------------ */

enum { VOXRAY_BACKEND_AUTO = 0, VOXRAY_BACKEND_CPU = 1, VOXRAY_BACKEND_CUDA = 2 };

typedef struct {
    int width, height;               /* pixels (default 256 x 256) */
    int has_camera;                  /* 0: the scene's camera (info.eye ...) */
    double eye[3], target[3], up[3]; /* look-at camera when has_camera */
    double fov;                      /* horizontal field of view, degrees */
    int backend;                     /* VOXRAY_BACKEND_* (default auto) */
    float step;                      /* <= 0: the scene's */
    float stop;                      /* early termination on T; < 0: default 1e-4; 0: off */
    int has_background;
    float background[3];             /* overrides the scene's when has_background */
    int half;                        /* CUDA: store the grid as float16 */
    int threads;                     /* CPU threads (0: all cores) */
    int no_skip;                     /* disable empty-space skipping */
    int mlp_tensor_cores;            /* CUDA, mlp scenes: the network's hidden layers on the
                                      * tensor cores (TF32): 0 where the GPU has them (sm_80
                                      * and up; FP32 elsewhere, said on stderr), 1 always (an
                                      * error without them), -1 never (FP32) */
} voxray_render_desc;

void voxray_render_desc_default(voxray_render_desc *d);

/* Render one frame: rgb (width*height*3 floats, background composited), alpha
 * (width*height, opacity), depth (width*height expected depth, or NULL to skip); rows top
 * to bottom. The scene keeps its prepared renderer between calls (a change of backend or
 * half re-creates it). */
int voxray_render(voxray_scene *s, const voxray_render_desc *d, float *rgb, float *alpha, float *depth);
/* Name of the backend the last voxray_render used ("cpu", "cuda"; "" before any). */
const char *voxray_render_backend(const voxray_scene *s);

/* `voxray convert`: argv as on the command line without the program name, e.g.
 * {"convert", "scan.nii.gz", "out/", "--preset", "ct"}. Returns the command's exit code
 * (0 ok, 1 failure, 2 usage error); messages go to stderr as on the command line. */
int voxray_convert(int argc, const char *const *argv);

/* ---- the trilinear op and the grid gather --------------------------------------------- */

enum { VOXRAY_HOST = 0, VOXRAY_CUDA = 1 };
enum { VOXRAY_F32 = 0, VOXRAY_F64 = 1, VOXRAY_F16 = 2 };

/* Cell form, corner k = 4ix + 2iy + iz, weights from u,v,w = (p+1)/2 (src/trilinear.h).
 * Forward: out (n, f) from feats (n, 8, f) and points (n, 3). Backward: dfeats (n, 8, f)
 * from dout (n, f); points get no gradient. dtype VOXRAY_F32 (host or CUDA) or
 * VOXRAY_F64 (host only), for every array. stream: cudaStream_t for VOXRAY_CUDA. */
int voxray_trilinear_forward(int device, int dtype, const void *feats, const void *points, void *out, long long n,
                             int f, void *stream);
int voxray_trilinear_backward(int device, int dtype, const void *dout, const void *points, void *dfeats,
                              long long n, int f, void *stream);

/* A dense (Z, Y, X, C) grid placed by a world -> index affine (row-major 3x4). */
typedef struct {
    int nx, ny, nz, nc;
    float world_to_index[12];
} voxray_grid_desc;

/* The placement of torch.nn.functional.grid_sample(align_corners=True): world [-1,1]^3
 * maps onto the lattice hull, x along nx, y along ny, z along nz. */
int voxray_grid_desc_unit(voxray_grid_desc *g, int nx, int ny, int nz, int nc);

/* Gather: out (m, nc) = trilinear values at world points pts (m, 3), border clamp.
 * Scatter (its adjoint): dgrid += the gradient of out; the caller zeroes dgrid.
 * grid_dtype: VOXRAY_F32 (everything float), VOXRAY_F64 (host only, everything double)
 * or VOXRAY_F16 (CUDA only: grid / dgrid float16, pts / out / dout float32). Device
 * pointers for VOXRAY_CUDA must be 16-byte aligned when nc % 4 == 0. */
int voxray_grid_gather(int device, int grid_dtype, const voxray_grid_desc *g, const void *grid, const void *pts,
                       long long m, void *out, void *stream);
int voxray_grid_scatter(int device, int grid_dtype, const voxray_grid_desc *g, const void *dout, const void *pts,
                        long long m, void *dgrid, void *stream);

#ifdef __cplusplus
}
#endif

#endif
