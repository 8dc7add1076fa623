/* vx_common.c - the error buffer, checked allocation, file helpers and half floats
 * used by every host module (see vx_common.h). */
#include "vx_common.h"
#include "vx_math.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char vx__errbuf[1024];

int vx_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vx__errbuf, sizeof vx__errbuf, fmt, ap);
    va_end(ap);
    /* keep it one line */
    for (char *p = vx__errbuf; *p; p++) if (*p == '\n' || *p == '\r') *p = ' ';
    return -1;
}

const char *vx_errmsg(void) { return vx__errbuf; }
void vx_clear_error(void) { vx__errbuf[0] = 0; }

/* "voxray: MESSAGE" on stderr: the one place warnings and notes are printed. */
static void vx__say(const char *fmt, va_list ap) {
    fputs("voxray: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void vx_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vx__say(fmt, ap);
    va_end(ap);
}

static size_t vx__mem_budget;

size_t vx_mem_budget(void) {
    if (vx__mem_budget) return vx__mem_budget;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    size_t half = pages > 0 && psize > 0 ? (size_t)pages / 2 * (size_t)psize : VX_MAX_GRID_BYTES;
    return half < VX_MAX_GRID_BYTES ? half : VX_MAX_GRID_BYTES;
}

void vx_mem_budget_set(size_t bytes) { vx__mem_budget = bytes; }

static void vx__human(size_t b, char *buf, size_t cap) {
    if (b >= ((size_t)1 << 30)) snprintf(buf, cap, "%.1f GiB", (double)b / (1 << 30));
    else if (b >= ((size_t)1 << 20)) snprintf(buf, cap, "%.1f MiB", (double)b / (1 << 20));
    else snprintf(buf, cap, "%.1f KiB", (double)b / 1024);
}

int vx_mem_refuse(const char *what, size_t need) {
    char n[32], have[32];
    vx__human(need, n, sizeof n);
    vx__human(vx_mem_budget(), have, sizeof have);
    if (vx__mem_budget) return vx_error("%s needs %s in memory, more than the %s --max-memory allows", what, n, have);
    return vx_error("%s needs %s in memory, more than the %s allowed (half of this machine's memory, at "
                    "most 16 GiB); raise it with --max-memory SIZE", what, n, have);
}

int vx_parse_bytes(const char *s, size_t *out) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    double unit = 1;
    if (*end == 'k' || *end == 'K') unit = 1024.0, end++;
    else if (*end == 'm' || *end == 'M') unit = 1024.0 * 1024, end++;
    else if (*end == 'g' || *end == 'G') unit = 1024.0 * 1024 * 1024, end++;
    else if (*end == 't' || *end == 'T') unit = 1024.0 * 1024 * 1024 * 1024, end++;
    if (*end == 'i' && unit > 1) end++;
    if (*end == 'B' || *end == 'b') end++;
    if (end == s || *end || errno || !isfinite(x) || x < 1 || x * unit > 1e18) return -1;
    *out = (size_t)(x * unit);
    return 0;
}

static int vx__quiet;
void vx_set_quiet(int quiet) { vx__quiet = quiet; }

void vx_note(const char *fmt, ...) {
    if (vx__quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vx__say(fmt, ap);
    va_end(ap);
}

void *vx_malloc(size_t n, const char *what) {
    void *p = malloc(n ? n : 1);
    if (!p) vx_error("out of memory allocating %zu bytes for %s", n, what);
    return p;
}

void *vx_calloc(size_t n, size_t size, const char *what) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) vx_error("out of memory allocating %zu x %zu bytes for %s", n, size, what);
    return p;
}

float *vx_floats64(size_t n, const char *what) {
    void *p = NULL;
    if (n > SIZE_MAX / sizeof(float) || posix_memalign(&p, 64, (n ? n : 1) * sizeof(float))) {
        vx_error("out of memory allocating %zu floats for %s", n, what);
        return NULL;
    }
    memset(p, 0, (n ? n : 1) * sizeof(float));
    return (float *)p;
}

int vx_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

int vx_mul_size4(size_t a, size_t b, size_t c, size_t d, size_t *out) {
    size_t ab, abc;
    if (vx_mul_size(a, b, &ab) || vx_mul_size(ab, c, &abc) || vx_mul_size(abc, d, out)) return -1;
    return 0;
}

FILE *vx_fopen_read(const char *path) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) { vx_error("%s: cannot open: %s", path, strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        vx_error("%s: not a regular file", path);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "rb");
    if (!f) { vx_error("%s: cannot open: %s", path, strerror(errno)); close(fd); }
    return f;
}

int vx_check_regular(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return vx_error("%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return vx_error("%s: not a regular file", path);
    return 0;
}

int vx_read_file(const char *path, size_t max_bytes, unsigned char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = vx_fopen_read(path);
    if (!f) return -1;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return vx_error("%s: cannot stat: %s", path, strerror(errno));
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        fclose(f);
        return vx_error("%s: file is %lld bytes, more than the %zu allowed", path,
                        (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    unsigned char *buf = vx_malloc(n + 1, path);
    if (!buf) { fclose(f); return -1; }
    if (n && fread(buf, 1, n, f) != n) {
        int e = ferror(f) ? errno : 0;
        free(buf);
        fclose(f);
        return vx_error("%s: read failed: %s", path, e ? strerror(e) : "file is shorter than its size");
    }
    fclose(f);
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

uint64_t vx_splitmix64(uint64_t *state) { return vx_mix64(*state += 0x9E3779B97F4A7C15ull); }

double vx_rand01(uint64_t *state) { return (double)(vx_splitmix64(state) >> 11) / 9007199254740992.0; }

double vx_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

float vx_half_to_float(uint16_t h) {
    int sign = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 1024), e - 25);
    return sign ? -v : v;
}

uint16_t vx_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow -> inf */
    if (ax < 0x38800000u) {                                    /* subnormal half */
        float a;
        memcpy(&a, &ax, 4);
        uint32_t m = (uint32_t)lrintf(a * 16777216.0f); /* 2^24, rounds to nearest even */
        return (uint16_t)(sign | m);
    }
    uint32_t e = (ax >> 23) - 112, m = ax & 0x7fffffu;
    uint32_t h = (e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

void vx_dirname(const char *path, char *buf, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) { snprintf(buf, cap, "."); return; }
    size_t n = (size_t)(slash - path);
    if (n == 0) n = 1; /* "/x" -> "/" */
    if (n >= cap) n = cap - 1;
    memcpy(buf, path, n);
    buf[n] = 0;
}

int vx_path_join(const char *dir, const char *name, char *buf, size_t cap) {
    int n;
    if (name[0] == '/' || !dir || !dir[0] || strcmp(dir, ".") == 0) n = snprintf(buf, cap, "%s", name);
    else n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) return vx_error("%s/%s: path is longer than %zu bytes", dir ? dir : "", name, cap - 1);
    return 0;
}

int vx_json_refuse_nul(const char *text, size_t len, const char *file) {
    for (size_t i = 0; i + 6 <= len; i++) {
        if (text[i] != '\\') continue;
        if (text[i + 1] == 'u' && !strncmp(text + i + 2, "0000", 4))
            return vx_error("%s: a JSON string holds \\u0000, which voxray does not accept", file);
        i++; /* skip the escaped character (an escaped backslash before u0000 is text, not a NUL) */
    }
    return 0;
}

int vx_mkdirs_for(const char *file_path) {
    char dir[4096];
    vx_dirname(file_path, dir, sizeof dir);
    for (char *p = dir + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(dir, 0777) != 0 && errno != EEXIST)
                return vx_error("%s: cannot create directory: %s", dir, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

static int vx__cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double vx_median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, vx__cmp_double);
    return t[n / 2];
}
