/* cmd/eval.c - `voxray eval SCENE DATASET`: renders every view of a dataset split with
 * the normal renderer (backend.c) and prints PSNR/SSIM per view and the mean
 * (fit_report.c). main.c calls vx_cmd_eval. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "camera.h"
#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "fit_report.h"
#include "scene.h"
#include "vx_common.h"

static void vx__eval_usage(FILE *o) {
    fprintf(o,
            "usage: voxray eval SCENE DATASET [--split test] [--every K] [--downscale F] [--backend B]\n"
            "                   [--[no-]mlp-tensor-cores] [--save DIR]\n"
            "\n"
            "Render every view of DATASET/transforms_SPLIT.json with the normal renderer and report\n"
            "PSNR and SSIM (Gaussian 11x11, sigma 1.5) against the photos composited on white,\n"
            "per image and the mean, with each camera's elevation and its angle to the nearest\n"
            "training camera (the rest of the split with --every, else transforms_train.json).\n"
            "\n"
            "  --split NAME     which transforms file (default test)\n"
            "  --every K        only views whose index is a multiple of K (8: the views `voxray fit`\n"
            "                   held out of the train split)\n"
            "  --downscale F    average FxF pixel blocks of every photo (default 1)\n"
            "  --backend B      auto, cpu or cuda (default auto)\n"
            "  --mlp-tensor-cores  CUDA, mlp scenes: the network's hidden layers on the tensor\n"
            "                   cores (TF32 operands, FP32 sums; the default where the GPU has\n"
            "                   them, sm_80 and up); --no-mlp-tensor-cores: in FP32\n"
            "  --save DIR       write photo|render pairs as DIR/final_NNN.png\n"
            "  -h, --help       this text\n");
}

/* The cameras of DATASET/transforms_train.json (poses only, no photos) for the report's gap
 * column. Scoring does not need them: a dataset without that file, or with one that does
 * not parse, is scored without the column, and stderr says why. */
static void vx__eval_train_cameras(const char *dataset, const vx_dataset *d, vx_camera **cams, int *n) {
    char json[4096];
    vx_path_join(dataset, "transforms_train.json", json, sizeof json);
    *cams = NULL;
    *n = 0;
    vx_camera_path p;
    if (vx_camera_path_load(json, &p)) {
        fprintf(stderr, "voxray eval: %s; no gap-to-training-cameras column\n", vx_errmsg());
        return;
    }
    int rc = !(*cams = vx_calloc((size_t)(p.n > 0 ? p.n : 1), sizeof **cams, "training cameras"));
    for (int i = 0; !rc && i < p.n; i++)
        if (vx_camera_from_c2w(&(*cams)[i], p.c2w[i], p.camera_angle_x, d->width, d->height))
            rc = vx_error("%s: frames[%d]: %s", json, i, vx_errmsg());
    if (rc) {
        fprintf(stderr, "voxray eval: %s; no gap-to-training-cameras column\n", vx_errmsg());
        free(*cams);
        *cams = NULL;
    } else {
        *n = p.n;
    }
    vx_camera_path_free(&p);
}

int vx_cmd_eval(int argc, char **argv) {
    const char *scene = NULL, *dataset = NULL, *split = "test", *save = NULL;
    int every = 1, downscale = 1, mlp_tc = 0;
    vx_backend_kind backend = VX_BACKEND_AUTO;
    char msg[600];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__eval_usage(stdout); return 0; }
        if ((!strcmp(a, "--split") || !strcmp(a, "--every") || !strcmp(a, "--downscale") || !strcmp(a, "--backend") ||
             !strcmp(a, "--save")) && i + 1 >= argc) {
            snprintf(msg, sizeof msg, "%s needs a value", a);
            return vx_cli_usage_error("eval", msg);
        }
        if (!strcmp(a, "--split")) split = argv[++i];
        else if (!strcmp(a, "--every")) bad = vx_parse_int(a, argv[++i], 1, 100000, &every);
        else if (!strcmp(a, "--downscale")) bad = vx_parse_int(a, argv[++i], 1, 64, &downscale);
        else if (!strcmp(a, "--backend")) bad = vx_backend_parse(argv[++i], &backend);
        else if (!strcmp(a, "--save")) save = argv[++i];
        else if (!strcmp(a, "--mlp-tensor-cores")) mlp_tc = 1;
        else if (!strcmp(a, "--no-mlp-tensor-cores")) mlp_tc = -1;
        else if (a[0] == '-' && a[1]) { snprintf(msg, sizeof msg, "unknown option '%s'", a); return vx_cli_usage_error("eval", msg); }
        else if (!scene) scene = a;
        else if (!dataset) dataset = a;
        else { snprintf(msg, sizeof msg, "unexpected argument '%s'", a); return vx_cli_usage_error("eval", msg); }
        if (bad) return vx_cli_usage_error("eval", vx_errmsg());
    }
    if (!scene || !dataset) return vx_cli_usage_error("eval", "needs SCENE and DATASET");
    vx_scene s;
    vx_load_opts lo;
    memset(&lo, 0, sizeof lo);
    if (vx_scene_load(scene, &lo, &s)) { fprintf(stderr, "voxray eval: %s\n", vx_errmsg()); return 1; }
    vx_dataset all, d, rest;
    memset(&d, 0, sizeof d);
    memset(&rest, 0, sizeof rest);
    vx_renderer *r = NULL;
    vx_camera *train = NULL;
    int rc = 1, ntrain = 0;
    if (vx_dataset_load(dataset, split, downscale, &all)) goto done;
    if (every > 1) {
        /* the rest of the split are the views `voxray fit` trained on */
        if (all.n < 2) { vx_error("%s: split '%s' has one view; --every needs more", dataset, split); goto done; }
        if (vx_dataset_holdout(&all, every, &rest, &d)) goto done;
        train = rest.cams;
        ntrain = rest.n;
    } else {
        d = all;
        memset(&all, 0, sizeof all);
        vx__eval_train_cameras(dataset, &d, &train, &ntrain);
    }
    vx_render_opts o;
    vx_render_opts_default(&o);
    o.mlp_tc = mlp_tc;
    if (vx_renderer_create(&r, &s, &o, backend)) goto done;
    char title[512];
    snprintf(title, sizeof title, "eval: %s on %s split '%s' (%d views, %dx%d, %s)", scene, dataset, split, d.n, d.width,
             d.height, vx_renderer_backend_name(r));
    double mp, ms;
    if (vx_fit_report(title, &d, train, ntrain, vx_fit_render_renderer, r, save, &mp, &ms)) goto done;
    rc = 0;
done:
    if (rc) fprintf(stderr, "voxray eval: %s\n", vx_errmsg());
    if (r) vx_renderer_destroy(r);
    if (train != rest.cams) free(train);
    vx_dataset_free(&all);
    vx_dataset_free(&rest);
    vx_dataset_free(&d);
    vx_scene_free(&s);
    return rc;
}
