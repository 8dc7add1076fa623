/* formats.h - readers for the volume formats people already have (NRRD, NIfTI-1,
 * MetaImage, INRIMAGE, VolPack .den, headerless raw, Plenoxels .npz). scene.c calls
 * vx_format_load() for any path that is not a manifest, a directory or a .npy. */
#ifndef VX_FORMATS_H
#define VX_FORMATS_H

#include <stddef.h>
#include "decode.h"
#include "grid.h"
#include "scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open PATH, picking the reader from opts->raw_spec (headerless raw), the extension,
 * else the first bytes. Fills g with float32 data (scl_slope/inter applied), src_dtype
 * and the index-to-world placement (world is RAS millimetres for medical volumes,
 * align_corners = 0). Plenoxels checkpoints also fill dec (sh decoder) and set
 * *has_decoder = 1; scalar volumes leave *has_decoder = 0. 0 or -1 with vx_error set. */
int vx_format_load(const char *path, const vx_load_opts *opts, vx_grid *g, vx_decoder *dec,
                   int *has_decoder);

/* Header facts of PATH (format, dims, dtype, spacing, affine, encoding) as a few lines
 * into buf, without reading the payload. buf is "" when PATH is not one of these
 * formats. 0, or -1 with vx_error set when the header is broken. */
int vx_format_describe(const char *path, const vx_load_opts *opts, char *buf, size_t cap);

/* 1 if PATH names a file these readers handle (by extension, raw_spec, or magic). */
/* The separate data file of a detached header (NRRD .nhdr, MetaImage .mhd, NIfTI .hdr)
 * into buf, so that outputs can be checked against it; "" when the data is in `path`
 * itself or the file is not a volume voxray knows. Never fails. */
void vx_format_data_file(const char *path, const vx_load_opts *opts, char *buf, size_t cap);

int vx_format_recognized(const char *path, const vx_load_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
