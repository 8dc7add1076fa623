/* npy.h - NumPy .npy reader and writer (format versions 1.0 and 2.0): float32,
 * float16, uint8, uint16 (and a few more on read), C order. Used for grids and depth. */
#ifndef VX_NPY_H
#define VX_NPY_H

#include <stddef.h>
#include "grid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parsed .npy header. */
typedef struct {
    vx_dtype dtype;
    int big_endian;
    int ndim;
    size_t shape[8];
    size_t data_offset; /* byte offset of the payload */
} vx_npy_header;

/* Parse a header from the first bytes of a file; `what` names the file in messages. */
int vx_npy_parse_header(const unsigned char *buf, size_t len, const char *what, vx_npy_header *h);

/* Load a grid: shape (Z, Y, X) or (Z, Y, X, C). Places it in [-1,1]^3, align_corners. */
int vx_npy_load_grid(const char *path, vx_grid *g);

/* Load a .npy held in memory (e.g. a member of an .npz); any shape up to 8-D,
 * converted to float32. *out is malloc'd; shape/ndim filled. */
int vx_npy_load_buffer(const unsigned char *buf, size_t len, const char *what, vx_npy_header *h,
                       float **out);

/* Convert n elements of dtype t (big-endian when be) at src to float32. */
void vx_npy_convert(const unsigned char *src, size_t n, vx_dtype t, int be, float *dst);

/* Write float32 array of `ndim` dims (C order) atomically. */
int vx_npy_write_f32(const char *path, const float *data, int ndim, const size_t *shape);
/* 1 when the grid came from uint8/uint16 and every value is still such an integer. */
int vx_npy_grid_fits_int(const vx_grid *g);
/* Write a grid (Z, Y, X, C), or (Z, Y, X) when nc == 1: as uint8/uint16 when
 * vx_npy_grid_fits_int (the file keeps the source's width), else float32; half=1 writes
 * float16. */
int vx_npy_write_grid(const char *path, const vx_grid *g, int half);

#ifdef __cplusplus
}
#endif

#endif
