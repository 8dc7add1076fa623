/* vx_common.h - error reporting, checked allocation and overflow-safe sizes.
 * Every module reports failures through vx_error(); the CLI prints vx_errmsg()
 * once, as one line, and exits non-zero. Shared by all host C code. */
#ifndef VX_COMMON_H
#define VX_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VX_VERSION "0.1.0"

/* Largest grid payload voxray will allocate (bytes of float32 in memory). */
#define VX_MAX_GRID_BYTES ((size_t)16 << 30)

/* The memory voxray lets one grid (and its transient copies) take: by default half of
 * the machine's physical memory, at most VX_MAX_GRID_BYTES; --max-memory sets it.
 * vx_mem_refuse records the one-line refusal naming `what` and returns -1. */
size_t vx_mem_budget(void);
void vx_mem_budget_set(size_t bytes);
int vx_mem_refuse(const char *what, size_t need);
/* "512M", "8G", "1.5G", "100000" (bytes) -> bytes; -1 on a bad value. */
int vx_parse_bytes(const char *s, size_t *out);

/* Record the current error (printf-style). Returns -1 so callers can write
 * `return vx_error("...")`. The message should name the file and the problem. */
int vx_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last message recorded on this thread ("" if none). */
const char *vx_errmsg(void);
void vx_clear_error(void);

/* One-line warning / note on stderr, prefixed "voxray: ". vx_note is for information
 * (which backend runs, ...) that -q silences through vx_set_quiet; warnings always show. */
void vx_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vx_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vx_set_quiet(int quiet);

/* malloc/calloc that record "out of memory (N bytes) for WHAT" and return NULL. */
void *vx_malloc(size_t n, const char *what);
void *vx_calloc(size_t n, size_t size, const char *what);
/* n zeroed floats on a 64-byte boundary (free() releases them): arrays read in rows of 64
 * floats, such as the mlp's weights, start on a cache line whatever the heap did before. */
float *vx_floats64(size_t n, const char *what);

/* a*b (and a*b*c*d) into *out; returns 0 on success, -1 on overflow. */
int vx_mul_size(size_t a, size_t b, size_t *out);
int vx_mul_size4(size_t a, size_t b, size_t c, size_t d, size_t *out);

/* fopen(path, "rb") that refuses anything but a regular file without blocking (a FIFO
 * would wait forever for a writer). NULL with vx_error set naming the path. */
FILE *vx_fopen_read(const char *path);
/* 0 if path is a regular file, else -1 with vx_error set (for libraries that open it). */
int vx_check_regular(const char *path);

/* Read a whole file into a malloc'd buffer (NUL-terminated for text use).
 * max_bytes caps the size; errors name the path. */
int vx_read_file(const char *path, size_t max_bytes, unsigned char **data, size_t *len);

/* Write `len` bytes to `path` atomically: write PATH.tmp.PID then rename (outputs.c, like
 * the two below: the temporaries are tracked there for the signal handler). */
int vx_write_file_atomic(const char *path, const void *data, size_t len);

/* Temporary name for atomic writes: "<path>.tmp.<pid>" into buf. */
void vx_temp_name(const char *path, char *buf, size_t cap);

/* Finish an atomic write: rename tmp over path, or remove tmp on failure. */
int vx_commit_temp(const char *tmp, const char *path, int ok);

/* splitmix64: advances *state and returns the next 64 random bits; vx_rand01 gives a
 * double uniform in [0, 1) from the top 53 of them. Deterministic for a given seed. */
uint64_t vx_splitmix64(uint64_t *state);
double vx_rand01(uint64_t *state);

/* Monotonic wall clock in seconds (for timings and frame pacing). */
double vx_now(void);

/* Median of n values (sorts t in place): the benchmarks' statistic. */
double vx_median(double *t, int n);

/* IEEE half <-> float, exact for all halves, round-to-nearest-even to half. */
float vx_half_to_float(uint16_t h);
uint16_t vx_float_to_half(float f);

/* Directory of a path ("." if none) into buf; join dir + relative name. */
void vx_dirname(const char *path, char *buf, size_t cap);
/* vx_path_join returns 0, or -1 (vx_error set) when the result does not fit in cap. */
int vx_path_join(const char *dir, const char *name, char *buf, size_t cap);

/* -1 with vx_error naming `file` when JSON text holds a \u0000 escape (C strings would
 * stop there, so a name would be silently cut); 0 otherwise. */
int vx_json_refuse_nul(const char *text, size_t len, const char *file);

/* mkdir -p for the directory part of a file path pattern. */
int vx_mkdirs_for(const char *file_path);

#ifdef __cplusplus
}
#endif

#endif
