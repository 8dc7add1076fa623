/* vdb.h - the C face of vdb.cpp: OpenVDB .vdb files read into voxray's sparse grid and
 * written from a scene, through libopenvdb. Built only with VX_HAVE_VDB (Makefile: the
 * libopenvdb-dev headers found, NO_VDB unset); formats.c and convert.c call it. */
#ifndef VX_VDB_H
#define VX_VDB_H

#include <stddef.h>
#include "decode.h"
#include "grid.h"
#include "scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read grid `grid_name` (NULL: `density`, else the first float grid) of PATH into out
 * (sparse storage, one 8^3 brick per OpenVDB leaf). A Vec3 `color`/`Cd` grid beside the
 * density makes channels 1..3 and sets *has_dec (rgba decoder); level sets become
 * density clamp(0.5 - phi / w, 0, 1) with w the band's half width (the background) in
 * world units. 0, or -1 with vx_error set naming the file. */
int vx_vdb_load(const char *path, const char *grid_name, vx_grid *out, vx_decoder *dec, int *has_dec);

/* The grids of PATH (name, type, class, active voxels, index box, voxel size) as text. */
int vx_vdb_describe(const char *path, char *buf, size_t cap);

/* Write scene s as PATH: a `density` fog grid (decoded sigma / density_scale, active where
 * > 0) and for rgba/sh scenes a Vec3f `color` grid, with the scene's transform. */
int vx_vdb_write(const char *path, const vx_scene *s);

#ifdef __cplusplus
}
#endif

#endif
