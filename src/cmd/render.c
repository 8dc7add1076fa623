/* cmd/render.c - `voxray render`: one frame, a turntable, or every camera of a NeRF
 * transforms.json, written as PNG (plus optional depth/opacity maps) atomically, with a
 * progress bar on a terminal and one line per frame otherwise. */
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cli.h"
#include "commands.h"
#include "dist.h"
#include "formats.h"
#include "image.h"
#include "npy.h"
#include "outputs.h"
#include "vx_common.h"

static void vx__render_help(void) {
    printf("usage: voxray render SCENE -o OUT.png [options]\n"
           "Render a scene (manifest, scene directory, .npy grid or volume file) to PNG.\n\n"
           "Output:\n"
           "  -o, --output FILE       PNG to write; with --turntable/--path a pattern such as\n"
           "                          'frames/%%04d.png'\n"
           "  --transparent           RGBA PNG with straight alpha = 1 - T_end\n"
           "  --depth FILE            expected depth: FILE.npy (float32) or FILE.png (16-bit,\n"
           "                          normalised, near = bright); may be given twice\n"
           "  --opacity FILE          opacity 1 - T_end: FILE.npy or FILE.png (8-bit)\n"
           "  --turntable N           N frames around the grid (orbit flags set elevation/distance)\n"
           "  --path transforms.json  one frame per camera of a NeRF-synthetic camera file\n"
           "  -q, --quiet             no progress output\n\n%s", vx_cli_common_help());
}

/* Check that pattern holds exactly one integer conversion (%d, %04d, %i, %u) and no
 * other conversions. */
static int vx__check_pattern(const char *flag, const char *p) {
    int n = 0;
    for (const char *s = p; *s; s++) {
        if (*s != '%') continue;
        if (s[1] == '%') { s++; continue; }
        s++;
        while (*s == '0' || *s == '-' || *s == ' ' || *s == '+') s++;
        while (*s >= '0' && *s <= '9') s++;
        if (*s != 'd' && *s != 'i' && *s != 'u') return vx_error("%s: '%s' may only hold an integer conversion such as %%04d", flag, p);
        n++;
    }
    if (n != 1) return vx_error("%s: '%s' needs exactly one frame-number conversion such as %%04d", flag, p);
    return 0;
}

static void vx__frame_name(const char *pattern, int multi, int k, char *out, size_t cap) {
    if (!multi) { snprintf(out, cap, "%s", pattern); return; }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(out, cap, pattern, k);
#pragma GCC diagnostic pop
}

/* The four output names of frame k (NULL where not asked for); errors on names too long. */
static int vx__frame_outputs(const char *const *pat, int multi, int k, char names[4][4096], const char *out[4]) {
    for (int i = 0; i < 4; i++) {
        out[i] = NULL;
        if (!pat[i]) continue;
        vx__frame_name(pat[i], multi, k, names[i], sizeof names[i]);
        if (strlen(names[i]) >= sizeof names[i] - 1) return vx_error("%s: output name is too long", pat[i]);
        out[i] = names[i];
    }
    return 0;
}

/* Camera of frame k: the NeRF path, the turntable orbit, or the flags. */
static int vx__frame_camera(const vx_cli_common *c, const vx_scene *s, const vx_camera_path *camp, int turntable,
                            int k, vx_camera *cam) {
    if (camp->n) return vx_camera_from_c2w(cam, camp->c2w[k], camp->camera_angle_x, c->width, c->height);
    if (turntable) return vx_cli_camera_turn(c, s, 360.0 * k / turntable, c->width, c->height, cam);
    return vx_cli_camera(c, s, c->width, c->height, cam);
}

/* ---- progress of one long frame: a watcher thread prints elapsed time once the frame
 * has taken VOXRAY_PROGRESS_AFTER seconds (default 1.5): a \r-updated line on a terminal,
 * else one line then one every 10 s. The renderer itself reports nothing mid-frame. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, tty, w, h;
    const char *backend;
    double t0, after;
} vx__watch;

static void *vx__watch_main(void *arg) {
    vx__watch *wt = arg;
    int printed = 0;
    double next = wt->after;
    pthread_mutex_lock(&wt->mu);
    while (!wt->done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&wt->cv, &wt->mu, &ts);
        double el = vx_now() - wt->t0;
        if (wt->done || el < next) continue;
        fprintf(stderr, "%svoxray: rendering %dx%d on the %s backend: %.1f s so far%s", wt->tty ? "\r" : "", wt->w,
                wt->h, wt->backend, el, wt->tty ? "" : "\n");
        printed = 1;
        next = wt->tty ? el + 1.0 : el + 10.0;
    }
    pthread_mutex_unlock(&wt->mu);
    if (printed && wt->tty) fputc('\n', stderr);
    return NULL;
}

/* Render one frame, with the watcher when asked (progress) and the frame is single. */
static int vx__render_watched(vx_renderer *r, const vx_camera *cam, vx_frame *f, int progress) {
    if (!progress) return vx_renderer_render(r, cam, f);
    vx__watch wt = {.tty = isatty(2), .w = cam->width, .h = cam->height, .backend = vx_renderer_backend_name(r),
                    .t0 = vx_now(), .after = 1.5};
    const char *env = getenv("VOXRAY_PROGRESS_AFTER");
    if (env && atof(env) > 0) wt.after = atof(env);
    pthread_t th;
    pthread_mutex_init(&wt.mu, NULL);
    pthread_cond_init(&wt.cv, NULL);
    int started = pthread_create(&th, NULL, vx__watch_main, &wt) == 0;
    int rc = vx_renderer_render(r, cam, f);
    if (started) {
        pthread_mutex_lock(&wt.mu);
        wt.done = 1;
        pthread_cond_signal(&wt.cv);
        pthread_mutex_unlock(&wt.mu);
        pthread_join(th, NULL);
    }
    pthread_cond_destroy(&wt.cv);
    pthread_mutex_destroy(&wt.mu);
    return rc;
}

/* One line on stderr; under MPI (d) the line names the rank and the whole job ends. */
__attribute__((format(printf, 2, 3))) static void vx__fail(vx_dist *d, const char *fmt, ...) {
    char m[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    vx_dist_fail(d, m); /* returns only when d is NULL */
    fprintf(stderr, "voxray: %s\n", m);
}

/* ---- progress of a camera path: a bar on a terminal, else one line per frame; frames
 * rendered by other MPI ranks are reported to rank 0, which prints them as they come. */
typedef struct {
    int nframes, done, tty, quiet, multi;
    const char *const *outs;
    double pixels, t_all, samples_all;
} vx__progress;

static void vx__frame_name(const char *pattern, int multi, int k, char *out, size_t cap);

static void vx__progress_frame(vx__progress *pg, int k, long long samples, double ms) {
    pg->done++;
    pg->samples_all += (double)samples;
    if (pg->quiet) return;
    if (pg->tty) {
        int bar = 30, done_n = pg->done * bar / pg->nframes;
        fprintf(stderr, "\r[%.*s%*s] %d/%d frames, %.1f ms/frame", done_n, "##############################",
                bar - done_n, "", pg->done, pg->nframes, (vx_now() - pg->t_all) * 1e3 / pg->done);
        if (pg->done == pg->nframes) fputc('\n', stderr);
        return;
    }
    char name[4096];
    vx__frame_name(pg->outs[0], pg->multi, k, name, sizeof name);
    fprintf(stderr, "frame %d/%d: %s (%.1f ms, %.1f samples/ray)\n", k + 1, pg->nframes, name, ms,
            (double)samples / pg->pixels);
}

static int vx__ext(const char *p, const char *e) {
    size_t n = strlen(p), k = strlen(e);
    return n > k && !strcasecmp(p + n - k, e);
}

static int vx__write_map(const char *path, const float *v, const float *alpha, int w, int h, int is_depth) {
    if (vx__ext(path, ".npy")) {
        size_t shape[2] = {(size_t)h, (size_t)w};
        return vx_npy_write_f32(path, v, 2, shape);
    }
    if (is_depth) return vx_image_write_depth16(path, v, alpha, w, h);
    return vx_image_write_gray8(path, v, w, h, 0.0f, 1.0f);
}

int vx_cmd_render(int argc, char **argv) {
    vx_cli_common c;
    vx_cli_common_init(&c);
    const char *out = NULL, *depth_out[2] = {NULL, NULL}, *opacity_out = NULL, *path_file = NULL;
    int transparent = 0, turntable = 0, quiet = 0, ndepth = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__render_help(); return 0; }
        int r = vx_cli_parse_common(&c, &i, argc, argv);
        if (r < 0) { fprintf(stderr, "voxray render: %s\n", vx_errmsg()); return 2; }
        if (r) continue;
        if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) out = argv[++i];
        else if (!strcmp(a, "--transparent")) transparent = 1;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "--depth") && i + 1 < argc) {
            if (ndepth == 2) { fprintf(stderr, "voxray render: --depth may be given at most twice\n"); return 2; }
            depth_out[ndepth++] = argv[++i];
        } else if (!strcmp(a, "--opacity") && i + 1 < argc) opacity_out = argv[++i];
        else if (!strcmp(a, "--path") && i + 1 < argc) path_file = argv[++i];
        else if (!strcmp(a, "--turntable") && i + 1 < argc) {
            if (vx_parse_int("--turntable", argv[++i], 1, 100000, &turntable)) {
                fprintf(stderr, "voxray render: %s\n", vx_errmsg());
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "voxray render: unknown option '%s' (or missing value); see voxray render --help\n", a);
            return 2;
        } else if (!c.scene_path) c.scene_path = a;
        else { fprintf(stderr, "voxray render: unexpected argument '%s'\n", a); return 2; }
    }
    if (!c.scene_path) { fprintf(stderr, "voxray render: no SCENE given; see voxray render --help\n"); return 2; }
    if (!out) { fprintf(stderr, "voxray render: no output given (-o OUT.png)\n"); return 2; }
    vx_set_quiet(quiet);
    if (turntable && path_file) { fprintf(stderr, "voxray render: use either --turntable or --path\n"); return 2; }
    int multi = turntable || path_file;
    const char *outs[4] = {out, depth_out[0], depth_out[1], opacity_out};
    static const char *flags[4] = {"-o", "--depth", "--depth", "--opacity"};
    for (int k = 0; k < 4; k++) {
        if (!outs[k]) continue;
        if (multi && vx__check_pattern(flags[k], outs[k])) { fprintf(stderr, "voxray render: %s\n", vx_errmsg()); return 2; }
        if (k == 0 && !vx__ext(outs[k], ".png")) { fprintf(stderr, "voxray render: -o %s: output must be a .png file\n", outs[k]); return 2; }
        if (k > 0 && !vx__ext(outs[k], ".png") && !vx__ext(outs[k], ".npy")) {
            fprintf(stderr, "voxray render: %s %s: must end in .png or .npy\n", flags[k], outs[k]);
            return 2;
        }
    }

    vx_dist *d = NULL; /* several processes under mpirun / srun (dist.h), else NULL */
    if (vx_dist_begin(&d)) { fprintf(stderr, "voxray: %s\n", vx_errmsg()); return 1; }
    int rank = vx_dist_rank(d), sortlast = d && !multi; /* one frame: split the grid; frames: deal them */
    if (rank != 0) vx_set_quiet(1); /* notices and progress once, from rank 0 */
    int writes = !sortlast || rank == 0;
    vx_scene s;
    vx_camera_path camp = {0};
    vx_renderer *r = NULL;
    vx_frame f = {0};
    vx_piece_req req = {.count = vx_dist_size(d), .index = rank};
    int rc = 1;
#define VX__FAIL(...) do { vx__fail(d, __VA_ARGS__); goto done; } while (0)
    if (vx_dist_pick_device(d, c.backend)) { vx__fail(d, "%s", vx_errmsg()); return 1; }
    if (sortlast) c.load.piece = &req;
    if (vx_cli_load_scene(&c, &s)) { vx__fail(d, "%s", vx_errmsg()); return 1; }
    if (path_file && vx_camera_path_load(path_file, &camp)) VX__FAIL("%s", vx_errmsg());
    if (transparent) { /* render on black: rgb is then the premultiplied colour */
        c.ropts.has_background = 1;
        c.ropts.background[0] = c.ropts.background[1] = c.ropts.background[2] = 0.0f;
    }
    c.ropts.want_depth = depth_out[0] != NULL;
    char data_file[1024];
    vx_format_data_file(s.grid.source, &c.load, data_file, sizeof data_file);
    const char *ins[5] = {c.scene_path, s.path, s.grid.source, path_file, data_file[0] ? data_file : NULL};
    char names[4][4096];
    const char *frame_outs[4];
    if (vx__frame_outputs(outs, multi, 0, names, frame_outs) ||
        (writes && vx_outputs_prepare(frame_outs, flags, 4, ins, 5, 1))) VX__FAIL("%s", vx_errmsg());
    vx_camera cam;
    if (vx__frame_camera(&c, &s, &camp, turntable, 0, &cam)) /* check before any work */
        VX__FAIL("%s%s%s", path_file ? path_file : "", path_file ? ": frame 0: " : "", vx_errmsg());
    float piece_bg[3];
    if (sortlast && vx_dist_piece_setup(d, &req, &s, &c.ropts, piece_bg)) VX__FAIL("%s", vx_errmsg());
    vx_dist_fault_point(d);
    if (vx_renderer_create(&r, &s, &c.ropts, c.backend) ||
        vx_frame_alloc(&f, c.width, c.height, c.ropts.want_depth)) VX__FAIL("%s", vx_errmsg());
    int nframes = turntable ? turntable : path_file ? camp.n : 1;
    vx__progress pg = {.nframes = nframes, .tty = isatty(2) && !quiet, .quiet = quiet || rank != 0, .outs = outs,
                       .multi = multi, .pixels = (double)c.width * c.height, .t_all = vx_now()};
    for (int k = 0; k < nframes; k++) {
        if (!sortlast && !vx_dist_frame_mine(d, k)) continue; /* another rank's frame */
        if (vx__frame_camera(&c, &s, &camp, turntable, k, &cam))
            VX__FAIL("%s%sframe %d: %s", path_file ? path_file : "", path_file ? ": " : "", k, vx_errmsg());
        if (k > 0 && (vx__frame_outputs(outs, multi, k, names, frame_outs) ||
                      (writes && vx_outputs_prepare(frame_outs, flags, 4, ins, 5, 0)))) VX__FAIL("%s", vx_errmsg());
        double t0 = vx_now();
        if (vx__render_watched(r, &cam, &f, !quiet && !multi && rank == 0)) VX__FAIL("%s", vx_errmsg());
        if (sortlast && vx_dist_composite(d, vx_renderer_volume(r)->mp.w2i, &cam, &f)) VX__FAIL("%s", vx_errmsg());
        double ms = (vx_now() - t0) * 1e3;
        const char *name = frame_outs[0];
        if (writes) { /* all of this frame's files are written, then all renamed: never a partial set */
            vx_outputs_stage_begin();
            int wok = !vx_image_write_png(name, &f, transparent);
            for (int dd = 0; wok && dd < ndepth; dd++) wok = !vx__write_map(frame_outs[1 + dd], f.depth, f.alpha, f.width, f.height, 1);
            if (wok && opacity_out) wok = !vx__write_map(frame_outs[3], f.alpha, f.alpha, f.width, f.height, 0);
            if (vx_outputs_stage_end(wok)) VX__FAIL("%s", vx_errmsg());
        }
        if (!multi) {
            pg.samples_all += (double)f.samples;
            if (!pg.quiet)
                printf("wrote %s (%dx%d, %s backend, %.1f ms, %.1f samples/ray", name, f.width, f.height,
                       vx_renderer_backend_name(r), ms, (double)f.samples / pg.pixels);
            if (!pg.quiet) printf(d ? ", sort-last over %d ranks)\n" : ")\n", vx_dist_size(d));
            continue;
        }
        if (vx_dist_frame_done(d, k, f.samples, ms)) VX__FAIL("%s", vx_errmsg());
        if (rank == 0) vx__progress_frame(&pg, k, f.samples, ms);
        int kk;
        long long sm;
        double mm;
        while (vx_dist_frame_next(d, 0, &kk, &sm, &mm)) vx__progress_frame(&pg, kk, sm, mm);
    }
    if (multi && rank == 0) {
        int kk;
        long long sm;
        double mm;
        while (pg.done < nframes && vx_dist_frame_next(d, 1, &kk, &sm, &mm)) vx__progress_frame(&pg, kk, sm, mm);
        if (!pg.quiet)
            printf("wrote %d frames (%dx%d, %s backend, %.1f ms/frame, %.1f samples/ray%s)\n", nframes, c.width,
                   c.height, vx_renderer_backend_name(r), (vx_now() - pg.t_all) * 1e3 / nframes,
                   pg.samples_all / (pg.pixels * nframes), d ? ", frames dealt across ranks" : "");
    }
    rc = 0;
#undef VX__FAIL
done:
    vx_frame_free(&f);
    vx_renderer_destroy(r);
    vx_camera_path_free(&camp);
    vx_scene_free(&s);
    if (req.plan.nodes) vx_piece_plan_free(&req.plan);
    if (!rc && d) vx_dist_end(d); /* (on a failure under MPI the job has ended already) */
    return rc;
}
