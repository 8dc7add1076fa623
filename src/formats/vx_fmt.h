/* vx_fmt.h - private seam between the volume readers in src/formats/: each reader parses
 * its header into a vx_vol_info, and volume.c reads the payload (raw or gzip/zlib, any
 * endian) into a float32 vx_grid. Only the readers in src/formats/ and the fuzz targets include it. */
#ifndef VX_FMT_H
#define VX_FMT_H

#include <stddef.h>
#include "decode.h"
#include "grid.h"
#include "scene.h"

#define VX_FMT_MAX_HEADER ((size_t)1 << 20) /* text headers longer than this are refused */

typedef enum { VX_ENC_RAW = 0, VX_ENC_GZIP = 1 } vx_encoding; /* GZIP: gzip or zlib stream */

typedef struct {
    const char *format;     /* "NRRD", "NIfTI-1", ... */
    char path[1024];        /* the header file, named in messages */
    long long dims[3];      /* nx, ny, nz (x fastest) as the header says */
    long long nvol;         /* volumes in a 4-D file (>= 1) */
    vx_dtype dtype;
    int big_endian;
    int encoding;           /* vx_encoding */
    char data_path[1024];   /* file that holds the payload (may equal path) */
    long long data_offset;  /* bytes into data_path where the payload/compressed stream starts */
    int data_at_end;        /* raw payload is the last bytes of data_path (byte skip -1) */
    long long gz_skip;      /* decompressed bytes before the payload (e.g. the .nii.gz header) */
    long long comp_size;    /* compressed bytes when the header says (0: to end of file) */
    double i2w[12];         /* row-major 3x4, world = M*(x,y,z) + t */
    double slope, inter;    /* value = slope * stored + inter */
    char notes[512];        /* extra header facts for `voxray info` */
    int allow_outside;      /* data_path may resolve outside the header's directory */
} vx_vol_info;

/* Identity placement, one volume, slope 1; data_path = path. */
void vx_vol_info_init(vx_vol_info *v, const char *format, const char *path);

/* Check dims, volume count, sizes and placement before anything is allocated. */
int vx_vol_check(const vx_vol_info *v);

/* 0 when data_path resolves (after symlinks) inside the header's directory, or is the
 * header itself, or allow_outside is set; else -1 naming both and the flag. */
int vx_vol_data_inside(const vx_vol_info *v);

/* Read volume `index` of the payload into g (float32, one channel, placement set). */
int vx_vol_read(const vx_vol_info *v, int index, vx_grid *g);

/* Header facts as text lines. */
void vx_vol_describe(const vx_vol_info *v, char *buf, size_t cap);

/* ---- helpers --------------------------------------------------------------------------- */
/* Size of a regular file; error names `path`. */
int vx_fmt_file_size(const char *path, long long *size);
/* First up to `max` bytes of a file (NUL-terminated); *len gets the count read. */
int vx_fmt_read_head(const char *path, size_t max, unsigned char **buf, size_t *len);
/* 1 if the file starts with the gzip magic. */
int vx_fmt_is_gzip(const char *path);
/* Decompress a gzip/zlib stream starting at byte `offset` of `path` (comp_size bytes, 0 =
 * to the end): skip `skip` output bytes, then return exactly `n` bytes in a malloc'd
 * buffer. The buffer grows only as data arrives. Fails on corrupt or short data. With
 * allow_short, returns what there is (up to n) in *got instead of failing when short. */
int vx_gz_read(const char *path, long long offset, long long comp_size, size_t skip, size_t n,
               int allow_short, unsigned char **out, size_t *got, const char *what);
/* Convert n elements of type t (file byte order big_endian) to float32. */
void vx_fmt_to_float(const unsigned char *src, size_t n, vx_dtype t, int big_endian, float *dst);
/* Map a dtype name ("uint8", "u8", "float32", "f4", ...) to vx_dtype; -1 if unknown. */
int vx_fmt_dtype_from_name(const char *s);
/* Case-insensitive suffix test. */
int vx_fmt_has_ext(const char *path, const char *ext);
/* Trim spaces in place; returns the trimmed start. */
char *vx_fmt_trim(char *s);
/* The whole of s (spaces around allowed) as an integer in [lo, hi] into *out; 0, or -1
 * when it is not an integer or is out of range (no wrapping: 4294967299 is not 3). */
int vx_fmt_int(const char *s, long long lo, long long hi, long long *out);
/* Whitespace-separated numbers (strtod: "nan" allowed) into out; count, or -1 when
 * an entry is not a number or there are more than max. */
int vx_fmt_doubles(const char *s, double *out, int max);

/* ---- the readers (header only; payload through vx_vol_read) ----------------------------- */
int vx_nrrd_info(const char *path, vx_vol_info *v);
int vx_nifti_info(const char *path, vx_vol_info *v);
int vx_metaimage_info(const char *path, vx_vol_info *v);
int vx_inr_info(const char *path, vx_vol_info *v);
int vx_den_info(const char *path, vx_vol_info *v);
int vx_raw_info(const char *path, const char *spec, const double spacing[3], vx_vol_info *v);

/* Plenoxels (svox2) .npz checkpoint -> sh grid + decoder. */
int vx_plenoxels_load(const char *path, vx_grid *g, vx_decoder *dec);
int vx_plenoxels_describe(const char *path, char *buf, size_t cap);

#endif
