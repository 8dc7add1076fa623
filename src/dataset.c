/* dataset.c - NeRF "Blender synthetic" loader for `voxray fit` / `voxray eval`:
 * transforms_<split>.json (camera_angle_x, frames[].file_path, transform_matrix) and
 * 8-bit PNGs through stb_image, composited on white. The one stb_image implementation. */
#include "dataset.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#include <stb/stb_image.h>

#include "vx_common.h"

void vx_dataset_free(vx_dataset *d) {
    free(d->rgb);
    free(d->alpha);
    free(d->cams);
    free(d->names);
    memset(d, 0, sizeof *d);
}

/* frames[i].file_path of a transforms file, resolved against the dataset directory;
 * ".png" is added when the path has no extension. */
static int vx__frame_paths(const char *json_path, const char *dir, int n, char (*names)[256], char (*full)[4096]) {
    unsigned char *text;
    size_t len;
    if (vx_read_file(json_path, 64u << 20, &text, &len)) return -1;
    cJSON *root = cJSON_ParseWithLength((const char *)text, len);
    free(text);
    if (!root) return vx_error("%s: not valid JSON", json_path);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frames");
    int i = 0, rc = 0;
    for (const cJSON *f = frames ? frames->child : NULL; f && i < n; f = f->next, i++) {
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(f, "file_path");
        if (!cJSON_IsString(fp) || !fp->valuestring[0]) {
            rc = vx_error("%s: frames[%d].file_path must be a non-empty string", json_path, i);
            break;
        }
        const char *p = fp->valuestring;
        while (p[0] == '.' && p[1] == '/') p += 2;
        const char *base = strrchr(p, '/');
        base = base ? base + 1 : p;
        int has_ext = strchr(base, '.') != NULL;
        if (strlen(p) > 3000) { rc = vx_error("%s: frames[%d].file_path is too long", json_path, i); break; }
        char rel[3100];
        snprintf(rel, sizeof rel, "%s%s", p, has_ext ? "" : ".png");
        vx_path_join(dir, rel, full[i], sizeof full[i]);
        size_t rl = strlen(rel), keep = rl < sizeof names[i] ? rl : sizeof names[i] - 1;
        memcpy(names[i], rel + rl - keep, keep); /* the tail names the file best */
        names[i][keep] = 0;
    }
    if (!rc && i != n) rc = vx_error("%s: frames changed while reading", json_path);
    cJSON_Delete(root);
    return rc;
}

/* Decode one 8-bit PNG into rgb floats composited on white and its coverage (alpha; 1
 * without an alpha channel), averaging factor x factor blocks of want_w x want_h. */
static int vx__load_png(const char *path, int factor, int want_w, int want_h, float *out, float *out_a, char *err,
                        size_t errcap) {
    unsigned char *buf;
    size_t len;
    if (vx_read_file(path, (size_t)1 << 30, &buf, &len)) {
        snprintf(err, errcap, "%s", vx_errmsg());
        return -1;
    }
    int w, h, comp, rc = -1;
    unsigned char *px = NULL;
    if (len > 0x7fffffff || !stbi_info_from_memory(buf, (int)len, &w, &h, &comp)) {
        snprintf(err, errcap, "%s: not a readable PNG image", path);
        goto done;
    }
    if (stbi_is_16_bit_from_memory(buf, (int)len)) {
        snprintf(err, errcap, "%s: 16-bit PNG; voxray fit reads 8-bit images only", path);
        goto done;
    }
    if (w != want_w || h != want_h) {
        snprintf(err, errcap, "%s: image is %dx%d but the dataset's first image is %dx%d", path, w, h, want_w, want_h);
        goto done;
    }
    int has_alpha = comp == 2 || comp == 4;
    px = stbi_load_from_memory(buf, (int)len, &w, &h, &comp, 4);
    if (!px) {
        snprintf(err, errcap, "%s: cannot decode PNG (%s)", path, stbi_failure_reason());
        goto done;
    }
    int ow = w / factor, oh = h / factor;
    float inv = 1.0f / (float)(factor * factor);
    for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++) {
            float s[3] = {0, 0, 0}, sa = 0.0f;
            for (int a = 0; a < factor; a++)
                for (int b = 0; b < factor; b++) {
                    const unsigned char *q = px + 4 * ((size_t)(i * factor + a) * w + (j * factor + b));
                    float al = has_alpha ? q[3] / 255.0f : 1.0f;
                    for (int c = 0; c < 3; c++) s[c] += q[c] / 255.0f * al + 1.0f - al;
                    sa += al;
                }
            float *o = out + 3 * ((size_t)i * ow + j);
            for (int c = 0; c < 3; c++) o[c] = s[c] * inv;
            out_a[(size_t)i * ow + j] = sa * inv;
        }
    rc = 0;
done:
    stbi_image_free(px);
    free(buf);
    return rc;
}

/* Size of the first image (and its format checks happen in vx__load_png). */
static int vx__png_size(const char *path, int *w, int *h) {
    unsigned char *buf;
    size_t len;
    int comp;
    if (vx_read_file(path, (size_t)1 << 30, &buf, &len)) return -1;
    int ok = len <= 0x7fffffff && stbi_info_from_memory(buf, (int)len, w, h, &comp);
    free(buf);
    if (!ok) return vx_error("%s: not a readable PNG image", path);
    if (*w < 1 || *h < 1 || *w > 16384 || *h > 16384) return vx_error("%s: image size %dx%d is outside 1..16384", path, *w, *h);
    return 0;
}

int vx_dataset_load(const char *dir, const char *split, int downscale, vx_dataset *d) {
    memset(d, 0, sizeof *d);
    char json[4096], name[300];
    if (downscale < 1 || downscale > 64) return vx_error("downscale %d is outside 1..64", downscale);
    if (strlen(split) > 64) return vx_error("split name '%s' is too long", split);
    snprintf(name, sizeof name, "transforms_%s.json", split);
    vx_path_join(dir, name, json, sizeof json);
    vx_camera_path p;
    if (vx_camera_path_load(json, &p)) return -1;
    int n = p.n, rc = -1, w0 = 0, h0 = 0;
    char (*full)[4096] = vx_calloc((size_t)n, sizeof *full, "dataset paths");
    d->names = vx_calloc((size_t)n, sizeof *d->names, "dataset names");
    d->cams = vx_calloc((size_t)n, sizeof *d->cams, "dataset cameras");
    char (*errs)[4400] = vx_calloc((size_t)n, sizeof *errs, "dataset messages");
    if (!full || !d->names || !d->cams || !errs) goto done;
    if (vx__frame_paths(json, dir, n, d->names, full)) goto done;
    if (vx__png_size(full[0], &w0, &h0)) goto done;
    if (w0 % downscale || h0 % downscale) {
        vx_error("%s: image size %dx%d is not divisible by --downscale %d", full[0], w0, h0, downscale);
        goto done;
    }
    d->n = n;
    d->width = w0 / downscale;
    d->height = h0 / downscale;
    size_t total;
    if (vx_mul_size4((size_t)n, (size_t)d->width, (size_t)d->height, 3, &total) || total > ((size_t)8 << 30) / 4) {
        vx_error("%s: %d images of %dx%d do not fit in memory", json, n, d->width, d->height);
        goto done;
    }
    d->rgb = vx_malloc(total * sizeof(float), "dataset images");
    d->alpha = vx_malloc(total / 3 * sizeof(float), "dataset image coverage");
    if (!d->rgb || !d->alpha) goto done;
    for (int i = 0; i < n; i++)
        if (vx_camera_from_c2w(&d->cams[i], p.c2w[i], p.camera_angle_x, d->width, d->height)) {
            vx_error("%s: frames[%d]: %s", json, i, vx_errmsg());
            goto done;
        }
    int failed = 0;
    #pragma omp parallel for schedule(dynamic, 1) reduction(+ : failed)
    for (int i = 0; i < n; i++)
        failed += vx__load_png(full[i], downscale, w0, h0, d->rgb + (size_t)i * d->width * d->height * 3,
                               d->alpha + (size_t)i * d->width * d->height, errs[i], sizeof errs[i]) != 0;
    if (failed) {
        for (int i = 0; i < n; i++)
            if (errs[i][0]) { vx_error("%s", errs[i]); break; }
        goto done;
    }
    size_t np = total / 3, k = 0;
    while (k < np && d->alpha[k] >= 1.0f) k++;
    if (k == np) { /* opaque photos: no coverage to keep (vx_dataset.alpha NULL) */
        free(d->alpha);
        d->alpha = NULL;
    }
    rc = 0;
done:
    free(full);
    free(errs);
    vx_camera_path_free(&p);
    if (rc) {
        free(d->rgb); free(d->alpha); free(d->cams); free(d->names);
        memset(d, 0, sizeof *d);
    }
    return rc;
}

int vx_dataset_subset(const vx_dataset *d, const int *views, int count, vx_dataset *out) {
    memset(out, 0, sizeof *out);
    if (count < 1) return vx_error("dataset subset is empty");
    size_t px = (size_t)d->width * d->height * 3;
    out->rgb = vx_malloc((size_t)count * px * sizeof(float), "dataset subset");
    if (d->alpha) out->alpha = vx_malloc((size_t)count * (px / 3) * sizeof(float), "dataset subset coverage");
    out->cams = vx_malloc((size_t)count * sizeof *out->cams, "dataset subset cameras");
    out->names = vx_malloc((size_t)count * sizeof *out->names, "dataset subset names");
    if (!out->rgb || (d->alpha && !out->alpha) || !out->cams || !out->names) { vx_dataset_free(out); return -1; }
    out->n = count;
    out->width = d->width;
    out->height = d->height;
    for (int k = 0; k < count; k++) {
        int v = views[k];
        memcpy(out->rgb + (size_t)k * px, d->rgb + (size_t)v * px, px * sizeof(float));
        if (d->alpha) memcpy(out->alpha + (size_t)k * (px / 3), d->alpha + (size_t)v * (px / 3), px / 3 * sizeof(float));
        out->cams[k] = d->cams[v];
        memcpy(out->names[k], d->names[v], sizeof out->names[k]);
    }
    return 0;
}

int vx_dataset_holdout(const vx_dataset *all, int every, vx_dataset *train, vx_dataset *held) {
    memset(train, 0, sizeof *train);
    memset(held, 0, sizeof *held);
    if (every < 2) return vx_error("hold-out interval %d must be >= 2", every);
    int nh = (all->n + every - 1) / every, nt = all->n - nh;
    if (nt < 1) return vx_error("%d views are too few to hold out every %dth", all->n, every);
    int *tv = vx_malloc((size_t)all->n * sizeof(int), "hold-out lists");
    if (!tv) return -1;
    int *hv = tv + nt, a = 0, b = 0;
    for (int i = 0; i < all->n; i++) {
        if (i % every) tv[a++] = i;
        else hv[b++] = i;
    }
    int rc = vx_dataset_subset(all, tv, nt, train);
    if (!rc) rc = vx_dataset_subset(all, hv, nh, held);
    if (rc) { vx_dataset_free(train); vx_dataset_free(held); }
    free(tv);
    return rc;
}
