/* nvdb.h - the C face of nvdb.cpp: NanoVDB .nvdb float grids read into voxray's sparse
 * grid, and a scene written as a .nvdb fog grid, through NanoVDB's headers (header-only).
 * Built only with VX_HAVE_NANOVDB (Makefile: nanovdb/NanoVDB.h found, NO_NANOVDB unset). */
#ifndef VX_NVDB_H
#define VX_NVDB_H

#include <stddef.h>
#include "decode.h"
#include "grid.h"
#include "scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read float grid `grid_name` (NULL: `density`, else the first float grid) of PATH into
 * out: one 8^3 brick per NanoVDB leaf, active lower/upper tiles filled as bricks, the
 * grid's affine map as i2w. Level sets become density clamp(0.5 - phi / w, 0, 1) as in
 * vdb.h; fog volumes get the grey-smoke decoder (*has_dec = 1). Codecs: none and zip
 * (blosc is refused with one line). Every offset of the file is checked against its size
 * before it is followed. 0, or -1 with vx_error set naming the file. */
int vx_nvdb_load(const char *path, const char *grid_name, vx_grid *out, vx_decoder *dec, int *has_dec);

/* The grids of PATH (name, type, class, codec, active voxels, index box) as text. */
int vx_nvdb_describe(const char *path, char *buf, size_t cap);

/* Write scene s as PATH: one float `density` fog grid (the same density vx_vdb_write
 * writes: decoded sigma / density_scale, active where > 0) with the scene's transform. */
int vx_nvdb_write(const char *path, const vx_scene *s);

#ifdef __cplusplus
}
#endif

#endif
