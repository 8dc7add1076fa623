/* dist_mpi.c - dist.h over MPI (make MPI=1): joins the job when mpirun or srun started
 * voxray, deals frames round robin and reports them to rank 0, and composites sort-last
 * partial images by direct send (MPI_Ialltoallv of row strips, each rank composites its
 * strip in the plan's front-to-back order, MPI_Igatherv to rank 0). Every wait is a
 * nonblocking call polled against a deadline; a failure anywhere ends the job through
 * MPI_Abort with one line naming the rank and the reason. docs/SCALING.md says why. */
#include <mpi.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist.h"
#include "vx_common.h"

#define VX__TAG_FRAME 17

typedef struct {
    double ms;
    long long samples;
    int k;
} vx__frame_msg;

struct vx_dist {
    int rank, size, local_rank;
    double timeout;                 /* seconds any wait may take */
    const vx_piece_plan *plan;      /* sort-last: the plan (owned by the caller's request) */
    float bg[3];                    /* sort-last: the background the composite gets */
    vx__frame_msg *msgs;            /* frame-parallel: reports in flight to rank 0 */
    MPI_Request *sends;
    int nsends, cap;
    double last_report;             /* rank 0: when a frame was last reported */
};

/* Started by a launcher? (Open MPI's mpirun, PMIx as srun --mpi=pmix, PMI-2 / MPICH) */
static int vx__launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

static int vx__env_int(const char *const *names, int fallback) {
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return fallback;
}

void vx_dist_fail(vx_dist *d, const char *msg) {
    if (!d) return;
    fprintf(stderr, "voxray: rank %d/%d: %s\n", d->rank, d->size, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached: MPI_Abort ends every rank */
}

/* Poll r until it completes; past the deadline the job ends with `what` named. */
static void vx__wait(vx_dist *d, MPI_Request *r, const char *what) {
    double t0 = MPI_Wtime();
    long polls = 0;
    for (;;) {
        int done = 0;
        if (MPI_Test(r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            char m[256];
            snprintf(m, sizeof m, "%s: MPI reported an error", what);
            vx_dist_fail(d, m);
        }
        if (done) return;
        if (MPI_Wtime() - t0 > d->timeout) {
            char m[512];
            snprintf(m, sizeof m, "%s: no answer from the other ranks within %g s (a rank failed, was killed or hangs; "
                     "VOXRAY_MPI_TIMEOUT sets the limit); ending the job", what, d->timeout);
            vx_dist_fail(d, m);
        }
        if (++polls > 200) { /* then sleep between polls: oversubscribed ranks need the cores */
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
}

int vx_dist_begin(vx_dist **d) {
    *d = NULL;
    if (!vx__launched()) return 0;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return vx_error("MPI_Init_thread failed");
    vx_dist *x = calloc(1, sizeof *x);
    if (!x) { MPI_Abort(MPI_COMM_WORLD, 1); return vx_error("out of memory"); }
    MPI_Comm_rank(MPI_COMM_WORLD, &x->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &x->size);
    static const char *local[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
    x->local_rank = vx__env_int(local, x->rank);
    x->timeout = 600.0;
    const char *t = getenv("VOXRAY_MPI_TIMEOUT");
    if (t && atof(t) > 0) x->timeout = atof(t);
    x->last_report = MPI_Wtime();
    *d = x;
    return 0;
}

int vx_dist_end(vx_dist *d) {
    if (!d) return 0;
    for (int i = 0; i < d->nsends; i++) vx__wait(d, &d->sends[i], "sending frame reports to rank 0");
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    vx__wait(d, &r, "waiting for every rank to finish");
    MPI_Finalize();
    free(d->sends);
    free(d->msgs);
    free(d);
    return 0;
}

int vx_dist_rank(const vx_dist *d) { return d ? d->rank : 0; }
int vx_dist_size(const vx_dist *d) { return d ? d->size : 1; }

void vx_dist_fault_point(vx_dist *d) {
    const char *f = getenv("VOXRAY_MPI_FAULT");
    if (!d || !f) return;
    int r = atoi(f);
    const char *what = strchr(f, ':');
    if (r != d->rank || !what) return;
    if (!strcmp(what + 1, "kill")) raise(SIGKILL);
    if (!strcmp(what + 1, "stall"))
        for (;;) pause();
}

int vx_dist_pick_device(vx_dist *d, vx_backend_kind want) {
    if (!d || want == VX_BACKEND_CPU) return 0;
    return vx_backend_use_device(d->local_rank);
}

/* ---- frame-parallel ------------------------------------------------------------------------ */

int vx_dist_frame_mine(const vx_dist *d, int k) { return !d || k % d->size == d->rank; }

int vx_dist_frame_done(vx_dist *d, int k, long long samples, double ms) {
    if (!d || d->rank == 0) return 0;
    if (d->nsends == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        /* a request array cannot move while its sends are in flight: finish them first */
        for (int i = 0; i < d->nsends; i++) vx__wait(d, &d->sends[i], "sending frame reports to rank 0");
        d->nsends = 0;
        vx__frame_msg *m = realloc(d->msgs, (size_t)cap * sizeof *m);
        if (m) d->msgs = m;
        MPI_Request *s = realloc(d->sends, (size_t)cap * sizeof *s);
        if (s) d->sends = s;
        if (!m || !s) return vx_error("out of memory");
        d->cap = cap;
    }
    vx__frame_msg *m = &d->msgs[d->nsends];
    m->ms = ms;
    m->samples = samples;
    m->k = k;
    if (MPI_Isend(m, (int)sizeof *m, MPI_BYTE, 0, VX__TAG_FRAME, MPI_COMM_WORLD, &d->sends[d->nsends]) != MPI_SUCCESS)
        return vx_error("MPI_Isend of a frame report failed");
    d->nsends++;
    return 0;
}

int vx_dist_frame_next(vx_dist *d, int wait, int *k, long long *samples, double *ms) {
    if (!d || d->rank != 0) return 0;
    double start = MPI_Wtime();
    long polls = 0;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, VX__TAG_FRAME, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            vx__frame_msg m;
            MPI_Recv(&m, (int)sizeof m, MPI_BYTE, st.MPI_SOURCE, VX__TAG_FRAME, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            *k = m.k;
            *samples = m.samples;
            *ms = m.ms;
            d->last_report = MPI_Wtime();
            return 1;
        }
        if (!wait) return 0;
        double since = d->last_report > start ? d->last_report : start;
        if (MPI_Wtime() - since > d->timeout) {
            char msg[256];
            snprintf(msg, sizeof msg, "no other rank finished a frame within %g s (a rank failed, was killed or "
                     "hangs; VOXRAY_MPI_TIMEOUT sets the limit); ending the job", d->timeout);
            vx_dist_fail(d, msg);
        }
        if (++polls > 200) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- sort-last ----------------------------------------------------------------------------- */

int vx_dist_piece_setup(vx_dist *d, vx_piece_req *req, vx_scene *s, vx_render_opts *o, float bg[3]) {
    if (vx_dist_piece_make(req, s, o, bg)) return -1;
    if (d) {
        d->plan = &req->plan;
        memcpy(d->bg, bg, sizeof d->bg);
    }
    return 0;
}

static int vx__rows0(int h, int n, int j) { return (int)((long long)h * j / n); }

int vx_dist_composite(vx_dist *d, const float w2i[12], const vx_camera *cam, vx_frame *f) {
    if (!d) return 0;
    if (!d->plan || d->plan->count != d->size) return vx_error("sort-last composite without a plan for %d ranks", d->size);
    int n = d->size, w = f->width, h = f->height, stride = f->depth ? 5 : 4;
    size_t npix = (size_t)w * h, rowf = (size_t)w * stride;
    if (npix * stride > INT_MAX) return vx_error("a %dx%d frame is too large to composite (MPI counts are int)", w, h);
    int r0 = vx__rows0(h, n, d->rank), rows = vx__rows0(h, n, d->rank + 1) - r0;
    int *cnt = malloc(sizeof(int) * 4 * (size_t)n), *order = malloc(sizeof(int) * (size_t)n);
    float *mine = malloc(npix * stride * sizeof(float));
    float *strips = malloc(((size_t)rows * rowf * n + 1) * sizeof(float));
    float *out = malloc(((size_t)rows * rowf + 1) * sizeof(float));
    float *full = d->rank == 0 ? malloc(npix * stride * sizeof(float)) : NULL;
    const float **parts = malloc(sizeof(float *) * (size_t)n);
    int rc = -1;
    if (!cnt || !order || !mine || !strips || !out || !parts || (d->rank == 0 && !full)) {
        vx_error("out of memory compositing a %dx%d frame", w, h);
        goto done;
    }
    int *scnt = cnt, *sdis = cnt + n, *rcnt = cnt + 2 * n, *rdis = cnt + 3 * n;
    for (int j = 0; j < n; j++) {
        int a = vx__rows0(h, n, j), b = vx__rows0(h, n, j + 1);
        scnt[j] = (b - a) * (int)rowf;   /* my rows of j's strip go to j */
        sdis[j] = a * (int)rowf;
        rcnt[j] = rows * (int)rowf;      /* and every rank's rows of my strip come to me */
        rdis[j] = j * rows * (int)rowf;
    }
    vx_piece_pack(f, stride, mine);
    MPI_Request rq[3];
    MPI_Ialltoallv(mine, scnt, sdis, MPI_FLOAT, strips, rcnt, rdis, MPI_FLOAT, MPI_COMM_WORLD, &rq[0]);
    long long mysum[2] = {f->samples, f->rays_hit}, sum[2] = {0, 0};
    MPI_Ireduce(mysum, sum, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD, &rq[1]);
    vx__wait(d, &rq[0], "exchanging partial images");
    /* every ray from the eye meets the pieces in the plan's order from the eye */
    vx_vec3 e = vx_affine_point(w2i, vx_v3(cam->c2w[3], cam->c2w[7], cam->c2w[11]));
    float eye[3] = {e.x, e.y, e.z};
    vx_piece_order(d->plan, eye, order);
    for (int j = 0; j < n; j++) parts[j] = strips + (size_t)j * rows * rowf;
    vx_piece_composite(parts, order, n, (size_t)rows * w, stride, out);
    for (int j = 0; j < n; j++) { /* strips back to rank 0 */
        int a = vx__rows0(h, n, j), b = vx__rows0(h, n, j + 1);
        rcnt[j] = (b - a) * (int)rowf;
        rdis[j] = a * (int)rowf;
    }
    MPI_Igatherv(out, rows * (int)rowf, MPI_FLOAT, full, rcnt, rdis, MPI_FLOAT, 0, MPI_COMM_WORLD, &rq[2]);
    vx__wait(d, &rq[2], "gathering the composited image on rank 0");
    vx__wait(d, &rq[1], "summing the sample counts");
    if (d->rank == 0) {
        vx_piece_unpack(full, stride, d->bg, f, 0, h);
        f->samples = sum[0];
        f->rays_hit = sum[1] < (long long)npix ? sum[1] : (long long)npix;
    }
    rc = 0;
done:
    free(cnt);
    free(order);
    free(mine);
    free(strips);
    free(out);
    free(full);
    free(parts);
    return rc;
}
