/* outputs.c - one command's output set: checks against inputs and each other before any
 * work, output directories validated then created, stale temporaries cleaned, and the
 * staged write-all-then-rename-all commit with temporaries removed on signals. */
#include "outputs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vx_common.h"

/* ---- temporaries removed on SIGINT/SIGTERM/SIGHUP --------------------------------------- */

enum { VX_TRACK_MAX = 64, VX_PATH_MAX = 4096 };
static char vx__tracked[VX_TRACK_MAX][VX_PATH_MAX];
static volatile sig_atomic_t vx__tracked_used[VX_TRACK_MAX];
static int vx__handlers_set;

static void vx__on_signal(int sig) {
    for (int i = 0; i < VX_TRACK_MAX; i++)
        if (vx__tracked_used[i]) unlink(vx__tracked[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void vx__install_handlers(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    vx__handlers_set = 1;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = vx__on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

void vx_outputs_track(const char *tmp) {
    if (!vx__handlers_set) vx__install_handlers();
    for (int i = 0; i < VX_TRACK_MAX; i++) {
        if (vx__tracked_used[i]) continue;
        snprintf(vx__tracked[i], VX_PATH_MAX, "%s", tmp);
        vx__tracked_used[i] = 1;
        return;
    }
}

void vx_outputs_untrack(const char *tmp) {
    for (int i = 0; i < VX_TRACK_MAX; i++)
        if (vx__tracked_used[i] && !strcmp(vx__tracked[i], tmp)) { vx__tracked_used[i] = 0; return; }
}

/* ---- staging ------------------------------------------------------------------------------ */

typedef struct { char *tmp, *path; } vx__staged;
static vx__staged *vx__stage;
static int vx__stage_n, vx__stage_cap, vx__staging;

void vx_outputs_stage_begin(void) { vx__staging = 1; vx__stage_n = 0; }

int vx_outputs_defer(const char *tmp, const char *path) {
    if (!vx__staging) return 0;
    if (vx__stage_n == vx__stage_cap) {
        int cap = vx__stage_cap ? 2 * vx__stage_cap : 8;
        vx__staged *ns = realloc(vx__stage, sizeof *ns * (size_t)cap);
        if (!ns) return 0; /* commit it now instead */
        vx__stage = ns;
        vx__stage_cap = cap;
    }
    char *t = strdup(tmp), *p = strdup(path);
    if (!t || !p) { free(t); free(p); return 0; }
    vx__stage[vx__stage_n].tmp = t;
    vx__stage[vx__stage_n].path = p;
    vx__stage_n++;
    return 1;
}

int vx_outputs_stage_end(int ok) {
    int rc = ok ? 0 : -1;
    for (int i = 0; i < vx__stage_n; i++) {
        vx__staged *s = &vx__stage[i];
        if (rc == 0 && rename(s->tmp, s->path) != 0)
            rc = vx_error("%s: cannot rename into place: %s", s->path, strerror(errno));
        if (rc != 0) remove(s->tmp);
        vx_outputs_untrack(s->tmp);
    }
    for (int i = 0; i < vx__stage_n; i++) { free(vx__stage[i].tmp); free(vx__stage[i].path); }
    vx__stage_n = 0;
    vx__staging = 0;
    return rc;
}

/* ---- checks before any work ------------------------------------------------------------- */

static const char *vx__base(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The first existing ancestor of path's directory must be a directory. */
static int vx__check_dir(const char *flag, const char *path) {
    char dir[VX_PATH_MAX];
    vx_dirname(path, dir, sizeof dir);
    for (;;) {
        struct stat st;
        if (stat(dir, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return vx_error("%s %s: cannot create the output directory: %s is not a directory", flag, path, dir);
            return 0;
        }
        if (errno != ENOENT && errno != ENOTDIR) return vx_error("%s %s: %s: %s", flag, path, dir, strerror(errno));
        char up[VX_PATH_MAX];
        vx_dirname(dir, up, sizeof up);
        if (!strcmp(up, dir)) return 0;
        snprintf(dir, sizeof dir, "%s", up);
    }
}

/* realpath(dirname) + "/" + basename, after the directory exists. */
static int vx__canon(const char *flag, const char *path, char *out, size_t cap) {
    char dir[VX_PATH_MAX], real[PATH_MAX];
    vx_dirname(path, dir, sizeof dir);
    if (!realpath(dir, real)) return vx_error("%s %s: %s: %s", flag, path, dir, strerror(errno));
    if ((size_t)snprintf(out, cap, "%s/%s", strcmp(real, "/") ? real : "", vx__base(path)) >= cap)
        return vx_error("%s %s: path is too long", flag, path);
    return 0;
}

/* Remove NAME.tmp.PID files in path's directory whose PID is gone and that we own. */
static void vx__clean_stale(const char *canon) {
    char dir[VX_PATH_MAX], prefix[VX_PATH_MAX];
    vx_dirname(canon, dir, sizeof dir);
    snprintf(prefix, sizeof prefix, "%s.tmp.", vx__base(canon));
    size_t pl = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, pl)) continue;
        const char *digits = e->d_name + pl;
        char *end;
        long pid = strtol(digits, &end, 10);
        if (end == digits || *end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* still running */
        char full[2 * VX_PATH_MAX];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) unlink(full);
    }
    closedir(d);
}

int vx_outputs_prepare(const char *const *outs, const char *const *flags, int n,
                       const char *const *ins, int nin, int clean) {
    for (int k = 0; k < n; k++) {
        if (!outs[k]) continue;
        struct stat st;
        if (stat(outs[k], &st) == 0 && S_ISDIR(st.st_mode))
            return vx_error("%s %s: is a directory", flags[k], outs[k]);
        if (vx__check_dir(flags[k], outs[k])) return -1;
    }
    char (*canon)[VX_PATH_MAX] = vx_calloc((size_t)(n ? n : 1), VX_PATH_MAX, "output names");
    if (!canon) return -1;
    int rc = -1;
    for (int k = 0; k < n; k++) {
        if (!outs[k]) continue;
        if (vx_mkdirs_for(outs[k]) || vx__canon(flags[k], outs[k], canon[k], VX_PATH_MAX)) goto done;
        struct stat so;
        int exists = stat(outs[k], &so) == 0;
        for (int j = 0; j < k; j++) {
            if (!outs[j]) continue;
            struct stat sj;
            if (!strcmp(canon[j], canon[k]) || (exists && stat(outs[j], &sj) == 0 && sj.st_dev == so.st_dev && sj.st_ino == so.st_ino)) {
                vx_error("%s %s and %s %s are the same file", flags[j], outs[j], flags[k], outs[k]);
                goto done;
            }
        }
        for (int i = 0; exists && i < nin; i++) {
            struct stat si;
            if (ins[i] && stat(ins[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
                vx_error("%s %s would overwrite the input %s", flags[k], outs[k], ins[i]);
                goto done;
            }
        }
        if (clean) vx__clean_stale(canon[k]);
    }
    rc = 0;
done:
    free(canon);
    return rc;
}

/* ---- temporaries: named, committed by rename, tracked for the signal handler ---------- */

void vx_temp_name(const char *path, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.tmp.%ld", path, (long)getpid());
    vx_outputs_track(buf);
}

int vx_commit_temp(const char *tmp, const char *path, int ok) {
    if (!ok) { remove(tmp); vx_outputs_untrack(tmp); return -1; }
    if (vx_outputs_defer(tmp, path)) return 0;
    vx_outputs_untrack(tmp);
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return vx_error("%s: cannot rename into place: %s", path, strerror(e));
    }
    return 0;
}

int vx_write_file_atomic(const char *path, const void *data, size_t len) {
    char tmp[4096];
    vx_temp_name(path, tmp, sizeof tmp);
    FILE *f = fopen(tmp, "wb");
    if (!f) return vx_error("%s: cannot write: %s", path, strerror(errno));
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok) vx_error("%s: write failed", path);
    return vx_commit_temp(tmp, path, ok);
}
