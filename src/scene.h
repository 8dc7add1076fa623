/* scene.h - a loaded scene: grid + decoder + background + step + default camera.
 * Read from a JSON manifest (docs/FORMAT.md), a bare .npy, or any volume format that
 * formats.h knows; the CLI and the viewer start here. */
#ifndef VX_SCENE_H
#define VX_SCENE_H

#include "decode.h"
#include "grid.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *raw_spec;   /* "--raw X,Y,Z,dtype[,endian]" for headerless files, or NULL */
    double spacing[3];      /* --spacing for raw files (0: 1) */
    int volume_index;       /* 4-D files: which volume (default 0) */
    const char *preset;     /* transfer-function preset to use instead of the default */
    int allow_outside_data; /* detached data may lie outside the header's directory */
    const char *grid_name;  /* --grid: which grid of a .vdb file (NULL: density, else the first) */
    struct vx_piece_req *piece; /* sort-last: read only this piece where the format allows (piece.h) */
} vx_load_opts;

typedef struct {
    vx_grid grid;
    vx_decoder dec;
    float background[3];
    float step;             /* segment length as a fraction of the smallest voxel spacing */
    int has_camera;
    int z_up;               /* default camera keeps +Z up (medical, NeRF data) instead of +Y */
    double eye[3], target[3], up[3], fov_deg;
    char name[256];         /* shown in window titles and info */
    char path[1024];        /* what was opened */
    int has_content;        /* scalar volumes: content_lo/hi hold the world box of the voxels */
    double content_lo[3], content_hi[3]; /* that decode to density > 0 (the default camera frames it) */
    float *mlp;             /* the mlp decoder's packed weights (the decoder points here), owned */
} vx_scene;

/* Open SCENE: a manifest (.json), a directory holding scene.json, a .npy grid, or a
 * volume file in any supported format. Returns 0 or -1 with vx_error set. */
int vx_scene_load(const char *path, const vx_load_opts *opts, vx_scene *s);
void vx_scene_free(vx_scene *s);

/* Decoder chosen from the channel count: 1 scalar, 4 rgba, 1+3(d+1)^2 sh degree d. */
int vx_scene_default_decoder(vx_scene *s);

/* Scalar decoder with window from robust percentiles and a named preset
 * (NULL: "default"). Lists names on failure. */
int vx_scalar_decoder_init(vx_decoder *d, const vx_grid *g, const char *preset);
int vx_tf_preset(vx_decoder *d, const char *name);
/* The default look of an OpenVDB / NanoVDB fog volume: grey smoke (visible on white), sigma
 * = the value per world unit as Blender and Houdini read it, window [0, vmax]. */
void vx_fog_decoder(vx_decoder *d, float vmax);
const char *vx_tf_preset_names(void);

/* Check decoder/grid agreement and finite values; message names `where`. */
int vx_decoder_validate(const vx_decoder *d, int channels, const char *where);

/* Scalar volumes: find the box of the voxels whose decoded density is > 0 (one voxel of
 * margin) and set has_content when it is smaller than the grid; call again after the
 * decoder changes (--window, --preset). Other decoders: has_content = 0. */
void vx_scene_find_content(vx_scene *s);

/* The default camera: looks at the centre of the world box (of the content box for
 * scalar volumes) from azimuth 35, elevation 25, near enough that the box fills the
 * horizontal field of view. */
void vx_scene_default_camera(const vx_scene *s, double eye[3], double target[3], double up[3],
                             double *fov_deg);

#ifdef __cplusplus
}
#endif

#endif
