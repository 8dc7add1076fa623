/* fit_report.c - the held-out table (PSNR, SSIM, camera elevation and distance to the
 * training cameras per view, then the mean) and the photo|render pair images of
 * `voxray fit` and `voxray eval`. */
#include "fit_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "image.h"
#include "metrics.h"
#include "vx_common.h"

/* Photo | render side by side, written as one PNG. */
int vx_fit_write_pair(const char *path, const float *photo, const vx_frame *r) {
    vx_frame p;
    if (vx_frame_alloc(&p, 2 * r->width, r->height, 0)) return -1;
    for (int i = 0; i < r->height; i++) {
        memcpy(p.rgb + (size_t)i * 2 * r->width * 3, photo + (size_t)i * r->width * 3, r->width * 3 * sizeof(float));
        memcpy(p.rgb + ((size_t)i * 2 + 1) * r->width * 3, r->rgb + (size_t)i * r->width * 3, r->width * 3 * sizeof(float));
    }
    int rc = vx_image_write_png(path, &p, 0);
    vx_frame_free(&p);
    return rc;
}

double vx_fit_view_elevation(const vx_camera *c) {
    double x = c->c2w[3], y = c->c2w[7], z = c->c2w[11];
    return atan2(z, sqrt(x * x + y * y)) * (180.0 / M_PI);
}

double vx_fit_view_gap(const vx_camera *c, const vx_camera *train, int n) {
    double best = NAN, a[3] = {c->c2w[3], c->c2w[7], c->c2w[11]};
    for (int k = 0; k < n; k++) {
        const float *m = train[k].c2w;
        double b[3] = {m[3], m[7], m[11]};
        /* atan2(|a x b|, a.b): accurate at small angles, where acos of the cosine is not */
        double x[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
        double g = atan2(sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]), a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) *
                   (180.0 / M_PI);
        if (!(g >= best)) best = g;
    }
    return best;
}

int vx_fit_report(const char *title, const vx_dataset *d, const vx_camera *train, int n, vx_fit_render_fn fn, void *ctx,
                  const char *save_dir, double *mean_psnr, double *mean_ssim) {
    double sp = 0.0, ss = 0.0, pw = INFINITY, ew = 0.0, pl = 0.0, el = INFINITY, pg = 0.0, gg = -1.0;
    int vw = 0, vl = 0, vg = 0; /* the worst view, the lowest camera, the widest gap */
    if (d->n < 1) return vx_error("%s: no views to score", title);
    printf("%s\n  %-32s %9s %7s %6s %6s\n", title, "view", "PSNR dB", "SSIM", "elev", "gap");
    for (int v = 0; v < d->n; v++) {
        vx_frame fr;
        if (fn(ctx, d, v, &fr)) return -1;
        const float *photo = vx_dataset_image(d, v);
        double p = vx_psnr(fr.rgb, photo, (size_t)d->width * d->height * 3);
        double s = vx_ssim(fr.rgb, photo, d->width, d->height, 3);
        double e = vx_fit_view_elevation(&d->cams[v]), g = vx_fit_view_gap(&d->cams[v], train, n);
        if (n > 0) printf("  %-32s %9.3f %7.4f %6.1f %6.1f\n", d->names[v], p, s, e, g);
        else printf("  %-32s %9.3f %7.4f %6.1f %6s\n", d->names[v], p, s, e, "-");
        if (p < pw) { pw = p; ew = e; vw = v; }
        if (e < el) { el = e; pl = p; vl = v; }
        if (g > gg) { gg = g; pg = p; vg = v; }
        sp += p;
        ss += s;
        int rc = 0;
        if (save_dir) {
            char name[64], path[4200];
            snprintf(name, sizeof name, "final_%03d.png", v);
            vx_path_join(save_dir, name, path, sizeof path);
            rc = vx_mkdirs_for(path) || vx_fit_write_pair(path, photo, &fr);
        }
        vx_frame_free(&fr);
        if (rc) return -1;
    }
    *mean_psnr = sp / d->n;
    *mean_ssim = ss / d->n;
    printf("  %-32s %9.3f %7.4f\n", "mean", *mean_psnr, *mean_ssim);
    /* where held-out views fail first: the views least like the training photos */
    printf("  worst view %s (%.3f dB, elev %.1f); lowest camera %s (%.3f dB, elev %.1f)\n", d->names[vw], pw, ew,
           d->names[vl], pl, el);
    if (n > 0)
        printf("  farthest from the %d training cameras: %s (%.3f dB, %.1f deg to the nearest)\n", n, d->names[vg], pg,
               gg);
    return 0;
}

int vx_fit_render_renderer(void *ctx, const vx_dataset *d, int v, vx_frame *fr) {
    if (vx_frame_alloc(fr, d->width, d->height, 0)) return -1;
    if (vx_renderer_render((vx_renderer *)ctx, &d->cams[v], fr)) { vx_frame_free(fr); return -1; }
    return 0;
}
