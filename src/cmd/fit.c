/* cmd/fit.c - `voxray fit DATASET -o SCENE_DIR`: parses the options, loads the photos,
 * resolves the backend (backend.c), runs the training loop (fit_train.c), writes the scene
 * and prints the held-out report (fit_report.c). main.c calls vx_cmd_fit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "fit_coarse.h"
#include "fit_report.h"
#include "fit_train.h"
#include "vx_common.h"

static void vx__fit_usage(FILE *o) {
    fprintf(o,
            "usage: voxray fit DATASET -o SCENE_DIR [options]\n"
            "\n"
            "Optimise a voxel grid (density + spherical harmonics, Plenoxels style, no network)\n"
            "from posed photos in the NeRF 'Blender synthetic' layout, then write SCENE_DIR/scene.json\n"
            "and SCENE_DIR/grid.sparse.npz (8^3 bricks where the model has density, float16) for\n"
            "voxray render / voxray view. Every 8th training view is held out for validation unless\n"
            "--val-split names a split.\n"
            "\n"
            "  -o, --output DIR     scene directory to write\n"
            "  --res R1[,R2..]      voxels along each box edge per coarse-to-fine stage, up to %d\n"
            "                       (default 128; CUDA: 128,256,512); after each stage the box shrinks\n"
            "                       to the voxels that survived pruning, keeping the voxel size edge/R\n"
            "                       of the first box\n"
            "  --stage-ends P1[,..] progress fractions at which each stage but the last ends\n"
            "                       (default: equal shares; CUDA without --res: 0.1,0.3)\n"
            "  --no-crop            keep the whole box in every stage\n"
            "  --crop-keep F        the crop keeps each connected group of alive voxels holding at\n"
            "                       least the share F of them (default 0.01; 0: keep every voxel)\n"
            "  --final-prune        when training ends, prune as at a stage change: voxels that no\n"
            "                       training ray of the last stage's last quarter weighted above\n"
            "                       1e-3 (density no training photo sees, e.g. fog under an object)\n"
            "  --write sparse-half|sparse|dense  the written grid: bricks in float16 (default),\n"
            "                       bricks in float32, or the whole box as float32 grid.npy\n"
            "  --dense-train        keep the whole lattice in memory in every stage (default:\n"
            "                       after the first stage only 8^3 bricks with alive voxels exist)\n"
            "  --dense-adam         update every alive parameter each step (default: only those\n"
            "                       with a gradient, i.e. touched by the batch or the TV subset)\n"
            "  --iters N            total iterations, split evenly over the stages (default 2000;\n"
            "                       CUDA: no limit, the clock ends the run)\n"
            "  --batch RAYS         rays per iteration (default 4096; CUDA: 65536)\n"
            "  --sh-degree D        0..3 (default 2)\n"
            "  --decoder sh|mlp     the model: SH coefficients per voxel (default), or 15 features\n"
            "                       per voxel decoded by a small network with the view direction\n"
            "                       (docs/FIT.md)\n"
            "  --mlp-layers L       the network's hidden layers of 64, 1 or 2 (default 2)\n"
            "  --lr-mlp A           Adam step size of the network's weights (default 0.001)\n"
            "  --mlp-dir-degree D   the view direction reaches the network as SH up to degree D,\n"
            "                       0..3 (default 3; lower: less view-dependent colour to learn)\n"
            "  --mlp-reflect        the network sees the view direction reflected about the\n"
            "                       density's surface (Ref-NeRF), not the view direction itself\n"
            "  --mlp-view-reflected  the network sees the view direction (up to degree 1) and,\n"
            "                       beside it, the reflected one and its cosine to the normal\n"
            "                       (--mlp-dir-degree 1 or 2: the reflected direction's degree)\n"
            "  --mlp-kernel K       CUDA: batched (default: tiled products over the step's\n"
            "                       samples) or per-ray (the network inside the ray kernel)\n"
            "  --mlp-gather V       CUDA, batched: how the step gathers the network's inputs, 1 (the\n"
            "                       default: each ray marched twice, to count its samples and to\n"
            "                       write them) or 2 (marched once into staging slots, 1.2 GB more)\n"
            "  --mlp-tensor-cores   CUDA, batched: the network's hidden layers on the tensor cores\n"
            "                       (TF32 operands, FP32 sums; the default where the GPU has them,\n"
            "                       sm_80 and up; given, an error where it has not)\n"
            "  --no-mlp-tensor-cores  CUDA: the network in FP32\n"
            "  --coarse R1[,R2..]   coarse levels (up to %d): the colour channels become their own\n"
            "                       values plus dense R^3 grids' trilinear interpolations, trained\n"
            "                       alongside; a level takes steps from the first stage whose\n"
            "                       resolution is at least 2R (default 0: off)\n"
            "  --lr-coarse A        Adam step size of the coarse level (default: --lr-sh's)\n"
            "  --coarse-only C      the last C colour channels take no steps of their own, only\n"
            "                       the levels': features shared over the levels' scale, e.g.\n"
            "                       for a highlight seen in other places (default 0; docs/FIT.md)\n"
            "  --coarse-decay L     after each levels' step blend the colour channels toward the\n"
            "                       levels' values by L (0 to 0.5): the fine residual decays\n"
            "                       where no gradient holds it (default 0: off; docs/FIT.md)\n"
            "  --coarse-density     the levels carry the density too: regions of density move\n"
            "                       together (the default with --coarse; docs/FIT.md)\n"
            "  --no-coarse-density  the levels carry the colour channels only\n"
            "  --lr-coarse-sigma A  Adam step size of the levels' density (default: a fifth of\n"
            "                       --lr-sigma's)\n"
            "  --no-coarse-cut      keep each level whole over the first stage's box (default: at\n"
            "                       each crop the levels are cut to the vertices the new lattice\n"
            "                       reads, the same model with less work a step, docs/FIT.md)\n"
            "  --val-every K        validation renders every K iterations, 0: only at the end\n"
            "                       (default 500; CUDA: 10000)\n"
            "  --val-views N        held-out views in the progress PSNR (default 3)\n"
            "  --val-split NAME     use transforms_NAME.json as the held-out set\n"
            "  --downscale F        average FxF pixel blocks of every photo (default 1)\n"
            "  --bbox x0,y0,z0,x1,y1,z1  world box (default: from the cameras)\n"
            "  --step S             segment length in voxels (default 0.5)\n"
            "  --lr-sigma A --lr-sh B    Adam step sizes (default 0.5, 0.02)\n"
            "  --lr-final F         both step sizes decay exponentially to F times their start at\n"
            "                       the end of training (default 0.05)\n"
            "  --tv-sigma A --tv-sh B    total-variation weights per 4096 rays of batch (default 0: off;\n"
            "                       CUDA, first stage >= 128: 1e-7, 1e-7 with --tv-until 0.3)\n"
            "  --tv-until P         apply TV only before training progress P, 0..1 (default 1:\n"
            "                       throughout; e.g. 0.3: the coarse stages only)\n"
            "  --sparsity W         weight of the Cauchy sparsity loss on density, per ray: W x sum\n"
            "                       over the ray's samples of log(1 + 2 sigma^2) (default 0: off)\n"
            "  --distortion W       weight of the Mip-NeRF 360 distortion loss, per ray (default 0: off)\n"
            "  --binary-alpha W     weight of each sample's alpha (1 - alpha), per ray: samples pushed\n"
            "                       clear or opaque, surfaces one sample thick (default 0: off)\n"
            "  --rgbper W           per-point colour loss (DirectVoxGO's): W x sum over each ray's\n"
            "                       samples of weight x |sample colour - pixel|^2, the weights held\n"
            "                       constant (default 0: off; on CUDA 0.01, except with --mlp-kernel per-ray)\n"
            "  --error-map F        draw the share F (0..1) of each batch where the training photos\n"
            "                       are fitted worst: a map of tiles (1/50 of the photo side) holds\n"
            "                       each tile's recent squared error (default 0: uniform)\n"
            "  --jitter             each training ray through a random point of its pixel instead\n"
            "                       of its centre (default off: it blurred mic's grille and cost\n"
            "                       0.2-0.4 dB on held-out views, docs/FIT.md session 15)\n"
            "  --random-bg          train each ray against its own random background colour, the\n"
            "                       photo composited on it by its alpha, so density where the photo\n"
            "                       is transparent costs whatever its colour (default off: white)\n"
            "  --seed S             random seed (default 1)\n"
            "  --max-seconds S      stop once training (validation excluded) has taken S seconds\n"
            "                       (CUDA without --iters: 300, the recorded run of docs/FIT.md)\n"
            "  --time-curve         held-out PSNR after 15, 30, 60, 120 and 300 s of training\n"
            "  --backend auto|cpu|cuda   where to train (default auto)\n"
            "  -h, --help           this text\n",
            VX_FIT_MAX_STAGES, VX_FIT_LEVELS);
}

static int vx__parse_res(const char *s, vx_fit_config *c) {
    char buf[256], *it[VX_FIT_MAX_STAGES];
    if (vx_parse_list("--res", s, buf, sizeof buf, it, VX_FIT_MAX_STAGES, &c->stages)) return -1;
    for (int k = 0; k < c->stages; k++) {
        int r;
        if (vx_parse_int("--res", it[k], 2, 1024, &r)) return -1;
        c->res[k][0] = c->res[k][1] = c->res[k][2] = r;
    }
    return 0;
}

/* --coarse R1[,R2..]: the levels' resolutions (0 alone: none). */
static int vx__parse_coarse(const char *s, int res[VX_FIT_LEVELS], int *n) {
    char buf[256], *it[VX_FIT_LEVELS];
    int m;
    *n = 0;
    if (!strcmp(s, "0")) return 0;
    if (vx_parse_list("--coarse", s, buf, sizeof buf, it, VX_FIT_LEVELS, &m)) return -1;
    for (int k = 0; k < m; k++) {
        if (vx_parse_int("--coarse", it[k], 0, 1024, &res[k])) return -1;
        if (!res[k]) return vx_error("--coarse: '%s': 0 (off) stands alone", s);
    }
    *n = m;
    return 0;
}

/* Stage ends: "p1,p2,..", one per stage but the last, rising inside (0, 1); NULL leaves
 * the default (every stage an equal share). */
static int vx__parse_stage_ends(const char *s, vx_fit_config *c) {
    if (!s) return 0;
    char buf[256], *it[VX_FIT_MAX_STAGES];
    int k, n, want = c->stages - 1;
    if (vx_parse_list("--stage-ends", s, buf, sizeof buf, it, VX_FIT_MAX_STAGES, &n)) return -1;
    if (n != want) return vx_error("--stage-ends: '%s' needs %d value%s for %d stages", s, want, want == 1 ? "" : "s", c->stages);
    for (k = 0; k < n; k++) {
        if (vx_parse_double("--stage-ends", it[k], 1e-6, 1.0 - 1e-6, &c->stage_end[k])) return -1;
        if (k && !(c->stage_end[k] > c->stage_end[k - 1])) return vx_error("--stage-ends: '%s' must rise", s);
    }
    return 0;
}

static int vx__parse_bbox(const char *s, double lo[3], double hi[3]) {
    char buf[512], *it[6];
    double v[6];
    int n;
    if (vx_parse_list("--bbox", s, buf, sizeof buf, it, 6, &n) || n != 6)
        return vx_error("--bbox: '%s' must be six numbers x0,y0,z0,x1,y1,z1", s);
    for (int i = 0; i < 6; i++)
        if (vx_parse_double("--bbox", it[i], -1e9, 1e9, &v[i])) return -1;
    for (int a = 0; a < 3; a++) {
        lo[a] = v[a];
        hi[a] = v[3 + a];
        if (!(hi[a] > lo[a])) return vx_error("--bbox: max must exceed min on every axis");
    }
    return 0;
}

/* One stderr line naming the values vx_fit_config_cuda_defaults filled in (read back from
 * the config, so the line cannot disagree with the rule). */
static void vx__print_cuda_defaults(const vx_fit_config *c, unsigned set) {
    char line[512];
    size_t n = 0;
#define VX__ADD(...) (n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, __VA_ARGS__))
    if (!(set & VX_FIT_SET_RES)) {
        VX__ADD(" --res");
        for (int s = 0; s < c->stages; s++) VX__ADD("%c%d", s ? ',' : ' ', c->res[s][0]);
        if (!(set & VX_FIT_SET_STAGE_ENDS))
            for (int s = 0; s + 1 < c->stages; s++) VX__ADD("%s%g", s ? "," : " --stage-ends ", c->stage_end[s]);
    }
    if (!(set & VX_FIT_SET_TV) && c->hp.tv_sigma > 0)
        VX__ADD(" --tv-sigma %g --tv-sh %g --tv-until %g", c->hp.tv_sigma, c->hp.tv_sh, c->hp.tv_until);
    if (!(set & VX_FIT_SET_RGBPER) && c->hp.rgbper > 0) VX__ADD(" --rgbper %g", c->hp.rgbper);
    if (!(set & VX_FIT_SET_BATCH)) VX__ADD(" --batch %d", c->batch);
    if (!(set & VX_FIT_SET_ITERS)) VX__ADD(" (no iteration limit)");
    if (!(set & (VX_FIT_SET_ITERS | VX_FIT_SET_MAX_SECONDS))) VX__ADD(" --max-seconds %g", c->max_seconds);
    if (!(set & VX_FIT_SET_VAL_EVERY)) VX__ADD(" --val-every %d", c->val_every);
#undef VX__ADD
    if (n) fprintf(stderr, "voxray: fit: CUDA defaults for the options not given:%s\n", line);
}

int vx_cmd_fit(int argc, char **argv) {
    const char *dataset = NULL, *out = NULL, *val_split = NULL, *stage_ends = NULL;
    vx_fit_config cfg;
    vx_fit_config_default(&cfg);
    int sh = 2, downscale = 1, has_bbox = 0, seed = 1, use_mlp = 0, mlp_layers = 2, mlp_reflect = 0, dir_degree = -1,
        coarse[VX_FIT_LEVELS], ncoarse = 0, coarse_cut = 1, coarse_only = 0, coarse_density = -1; /* -1: not given */
    double coarse_decay = 0.0;
    double step = 0.5, lo[3], hi[3], dv;
    vx_backend_kind backend = VX_BACKEND_AUTO;
    vx_fit_storage storage = VX_FIT_WRITE_SPARSE_HALF;
    unsigned set = 0; /* VX_FIT_SET_*: options given, which CUDA defaults leave alone */
    char msg[600];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int need = i + 1 < argc;
        int bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { vx__fit_usage(stdout); return 0; }
        static const char *valued[] = {"-o", "--output", "--res", "--iters", "--batch", "--sh-degree", "--val-every",
                                       "--val-views", "--val-split", "--downscale", "--bbox", "--step", "--seed",
                                       "--lr-sigma", "--lr-sh", "--lr-final", "--tv-sigma", "--tv-sh", "--tv-until",
                                       "--backend", "--max-seconds", "--stage-ends", "--sparsity", "--distortion",
                                       "--binary-alpha", "--rgbper", "--error-map", "--crop-keep",
                                       "--decoder", "--mlp-layers", "--lr-mlp", "--mlp-kernel", "--mlp-gather", "--mlp-dir-degree",
                                       "--coarse", "--lr-coarse", "--coarse-only", "--coarse-decay", "--lr-coarse-sigma"};
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            if (!strcmp(a, valued[k]) && !need) {
                snprintf(msg, sizeof msg, "%s needs a value", a);
                return vx_cli_usage_error("fit", msg);
            }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) out = argv[++i];
        else if (!strcmp(a, "--res")) { bad = vx__parse_res(argv[++i], &cfg); set |= VX_FIT_SET_RES; }
        else if (!strcmp(a, "--iters")) { bad = vx_parse_int(a, argv[++i], 1, 100000000, &cfg.iters); set |= VX_FIT_SET_ITERS; }
        else if (!strcmp(a, "--batch")) { bad = vx_parse_int(a, argv[++i], 1, 1 << 24, &cfg.batch); set |= VX_FIT_SET_BATCH; }
        else if (!strcmp(a, "--sh-degree")) bad = vx_parse_int(a, argv[++i], 0, 3, &sh);
        else if (!strcmp(a, "--decoder")) {
            const char *dn = argv[++i];
            if (!strcmp(dn, "sh")) use_mlp = 0;
            else if (!strcmp(dn, "mlp")) use_mlp = 1;
            else { snprintf(msg, sizeof msg, "--decoder %s: expected sh or mlp", dn); return vx_cli_usage_error("fit", msg); }
        }
        else if (!strcmp(a, "--mlp-reflect") || !strcmp(a, "--mlp-view-reflected")) {
            int mode = !strcmp(a, "--mlp-reflect") ? VX_MLP_DIR_REFLECTED : VX_MLP_DIR_BOTH;
            if (mlp_reflect && mlp_reflect != mode)
                return vx_cli_usage_error("fit", "--mlp-reflect and --mlp-view-reflected: choose one");
            mlp_reflect = mode;
        }
        else if (!strcmp(a, "--mlp-layers")) bad = vx_parse_int(a, argv[++i], 1, 2, &mlp_layers);
        else if (!strcmp(a, "--mlp-dir-degree")) {
            int deg = 3;
            bad = vx_parse_int(a, argv[++i], 0, 3, &deg);
            if (!bad) cfg.hp.mlp_dir_terms = (deg + 1) * (deg + 1);
            dir_degree = deg;
        }
        else if (!strcmp(a, "--coarse")) bad = vx__parse_coarse(argv[++i], coarse, &ncoarse);
        else if (!strcmp(a, "--coarse-only")) bad = vx_parse_int(a, argv[++i], 0, 48, &coarse_only); /* SH 3: 48 colour channels */
        else if (!strcmp(a, "--coarse-decay")) bad = vx_parse_double(a, argv[++i], 0, 0.5, &coarse_decay);
        else if (!strcmp(a, "--lr-coarse-sigma")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.lr_coarse_sigma = (float)dv; }
        else if (!strcmp(a, "--lr-coarse")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.lr_coarse = (float)dv; }
        else if (!strcmp(a, "--lr-mlp")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.lr_mlp = (float)dv; }
        else if (!strcmp(a, "--mlp-kernel")) {
            const char *kn = argv[++i];
            if (!strcmp(kn, "per-ray")) cfg.hp.mlp_kernel = 1;
            else if (!strcmp(kn, "batched")) cfg.hp.mlp_kernel = 2;
            else { snprintf(msg, sizeof msg, "--mlp-kernel %s: expected per-ray or batched", kn); return vx_cli_usage_error("fit", msg); }
        }
        else if (!strcmp(a, "--val-every")) {
            bad = vx_parse_int(a, argv[++i], 0, 100000000, &cfg.val_every);
            set |= VX_FIT_SET_VAL_EVERY;
        }
        else if (!strcmp(a, "--val-views")) bad = vx_parse_int(a, argv[++i], 0, 100000, &cfg.val_views);
        else if (!strcmp(a, "--val-split")) val_split = argv[++i];
        else if (!strcmp(a, "--downscale")) bad = vx_parse_int(a, argv[++i], 1, 64, &downscale);
        else if (!strcmp(a, "--bbox")) { bad = vx__parse_bbox(argv[++i], lo, hi); has_bbox = 1; }
        else if (!strcmp(a, "--step")) bad = vx_parse_double(a, argv[++i], 0.01, 16, &step);
        else if (!strcmp(a, "--seed")) { bad = vx_parse_int(a, argv[++i], 0, 2147483647, &seed); cfg.seed = (uint64_t)seed; }
        else if (!strcmp(a, "--lr-sigma")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.lr_sigma = (float)dv; }
        else if (!strcmp(a, "--lr-sh")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.lr_sh = (float)dv; }
        else if (!strcmp(a, "--lr-final")) { bad = vx_parse_double(a, argv[++i], 1e-6, 1, &dv); cfg.hp.lr_final_factor = (float)dv; }
        else if (!strcmp(a, "--tv-sigma")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.tv_sigma = (float)dv; set |= VX_FIT_SET_TV; }
        else if (!strcmp(a, "--tv-sh")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.tv_sh = (float)dv; set |= VX_FIT_SET_TV; }
        else if (!strcmp(a, "--tv-until")) { bad = vx_parse_double(a, argv[++i], 0, 1, &dv); cfg.hp.tv_until = (float)dv; set |= VX_FIT_SET_TV; }
        else if (!strcmp(a, "--sparsity")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.sparsity = (float)dv; }
        else if (!strcmp(a, "--rgbper")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.rgbper = (float)dv; set |= VX_FIT_SET_RGBPER; }
        else if (!strcmp(a, "--distortion")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.distortion = (float)dv; }
        else if (!strcmp(a, "--binary-alpha")) { bad = vx_parse_double(a, argv[++i], 0, 1e6, &dv); cfg.hp.binary_alpha = (float)dv; }
        else if (!strcmp(a, "--error-map")) { bad = vx_parse_double(a, argv[++i], 0, 1, &dv); cfg.error_map = (float)dv; }
        else if (!strcmp(a, "--backend")) bad = vx_backend_parse(argv[++i], &backend);
        else if (!strcmp(a, "--max-seconds")) {
            bad = vx_parse_double(a, argv[++i], 0, 1e7, &cfg.max_seconds);
            set |= VX_FIT_SET_MAX_SECONDS;
        }
        else if (!strcmp(a, "--time-curve")) cfg.time_curve = 1;
        else if (!strcmp(a, "--jitter")) cfg.hp.jitter = 1;
        else if (!strcmp(a, "--random-bg")) cfg.hp.random_bg = 1;
        else if (!strcmp(a, "--mlp-gather")) bad = vx_parse_int(a, argv[++i], 1, 2, &cfg.hp.mlp_gather);
        else if (!strcmp(a, "--mlp-tensor-cores")) cfg.hp.mlp_tc = 1;
        else if (!strcmp(a, "--no-mlp-tensor-cores")) cfg.hp.mlp_tc = -1;
        else if (!strcmp(a, "--no-crop")) cfg.crop = 0;
        else if (!strcmp(a, "--final-prune")) cfg.final_prune = 1;
        else if (!strcmp(a, "--coarse-cut")) coarse_cut = 1; /* the default since session 24 */
        else if (!strcmp(a, "--no-coarse-cut")) coarse_cut = 0;
        else if (!strcmp(a, "--coarse-density")) coarse_density = 1;
        else if (!strcmp(a, "--no-coarse-density")) coarse_density = 0;
        else if (!strcmp(a, "--crop-keep")) bad = vx_parse_double(a, argv[++i], 0, 1, &cfg.crop_keep);
        else if (!strcmp(a, "--write")) {
            if (i + 1 >= argc) return vx_cli_usage_error("fit", "--write needs sparse-half, sparse or dense");
            const char *w = argv[++i];
            if (!strcmp(w, "sparse-half")) storage = VX_FIT_WRITE_SPARSE_HALF;
            else if (!strcmp(w, "sparse")) storage = VX_FIT_WRITE_SPARSE;
            else if (!strcmp(w, "dense")) storage = VX_FIT_WRITE_DENSE;
            else {
                char msg[256];
                snprintf(msg, sizeof msg, "--write %s: expected sparse-half, sparse or dense", w);
                return vx_cli_usage_error("fit", msg);
            }
        }
        else if (!strcmp(a, "--dense-adam")) cfg.hp.lazy = 0;
        else if (!strcmp(a, "--dense-train")) cfg.dense = 1;
        else if (!strcmp(a, "--stage-ends")) { stage_ends = argv[++i]; set |= VX_FIT_SET_STAGE_ENDS; }
        else if (a[0] == '-' && a[1]) { snprintf(msg, sizeof msg, "unknown option '%s'", a); return vx_cli_usage_error("fit", msg); }
        else if (!dataset) dataset = a;
        else { snprintf(msg, sizeof msg, "unexpected argument '%s'", a); return vx_cli_usage_error("fit", msg); }
        if (bad) return vx_cli_usage_error("fit", vx_errmsg());
    }
    if (!dataset) return vx_cli_usage_error("fit", "which dataset? DATASET is a directory with transforms_train.json");
    if (!out) return vx_cli_usage_error("fit", "where to? -o SCENE_DIR is required");
    /* an early look at --stage-ends when --res fixes the number of stages (the CUDA
     * defaults below may add stages only when --res is not given) */
    if ((set & VX_FIT_SET_RES) && vx__parse_stage_ends(stage_ends, &cfg)) return vx_cli_usage_error("fit", vx_errmsg());
    /* the photos first: a missing dataset is reported before any word on the backend */
    vx_dataset all, train, held;
    memset(&train, 0, sizeof train);
    memset(&held, 0, sizeof held);
    if (vx_dataset_load(dataset, "train", downscale, &all)) { fprintf(stderr, "voxray fit: %s\n", vx_errmsg()); return 1; }
    int rc = 1;
    if (val_split) {
        train = all;
        memset(&all, 0, sizeof all);
        if (vx_dataset_load(dataset, val_split, downscale, &held)) goto fail;
    } else if (vx_dataset_holdout(&all, 8, &train, &held)) goto fail;
    vx_dataset_free(&all);
    /* where to train, decided once by backend.c like rendering: CUDA when asked for or
     * (auto) when a device is usable; never a silent fallback */
    char device[256];
    if (vx_backend_resolve(backend, "fit: training on the CPU", &cfg.backend, device, sizeof device)) goto fail;
    if (cfg.backend == VX_BACKEND_CUDA) {
        fprintf(stderr, "voxray: fit: training with CUDA on %s\n", device);
        vx_fit_config_cuda_defaults(&cfg, set, !use_mlp || cfg.hp.mlp_kernel != 1);
        vx__print_cuda_defaults(&cfg, set);
    }
    if (cfg.hp.rgbper > 0 && cfg.backend == VX_BACKEND_CUDA && use_mlp && cfg.hp.mlp_kernel == 1) {
        rc = vx_cli_usage_error("fit", "--rgbper has no CUDA kernel in the mlp decoder's per-ray step "
                                       "(--mlp-kernel batched, the default, has it)");
        goto fail;
    }
    if (cfg.hp.random_bg && cfg.backend == VX_BACKEND_CUDA && use_mlp && cfg.hp.mlp_kernel == 1) {
        rc = vx_cli_usage_error("fit", "--random-bg has no CUDA kernel in the mlp decoder's per-ray step "
                                       "(--mlp-kernel batched, the default, has it)");
        goto fail;
    }
    if (cfg.hp.mlp_tc > 0 && cfg.backend == VX_BACKEND_CUDA && use_mlp && cfg.hp.mlp_kernel == 1) {
        rc = vx_cli_usage_error("fit", "--mlp-tensor-cores runs in the mlp decoder's batched step only "
                                       "(--mlp-kernel batched, the default)");
        goto fail;
    }
    if (cfg.hp.mlp_gather && cfg.backend == VX_BACKEND_CUDA && use_mlp && cfg.hp.mlp_kernel == 1) {
        rc = vx_cli_usage_error("fit", "--mlp-gather chooses the mlp decoder's batched step's gather "
                                       "(--mlp-kernel batched, the default), not the per-ray step's");
        goto fail;
    }
    const char *rflag = mlp_reflect == VX_MLP_DIR_BOTH ? "--mlp-view-reflected" : "--mlp-reflect";
    if (mlp_reflect && cfg.backend == VX_BACKEND_CUDA && use_mlp && cfg.hp.mlp_kernel == 1) {
        snprintf(msg, sizeof msg, "%s has no CUDA kernel in the mlp decoder's per-ray step "
                                  "(--mlp-kernel batched, the default, has it)", rflag);
        rc = vx_cli_usage_error("fit", msg);
        goto fail;
    }
    if (mlp_reflect && !use_mlp) fprintf(stderr, "voxray: fit: %s has no effect without --decoder mlp\n", rflag);
    if (mlp_reflect == VX_MLP_DIR_BOTH && use_mlp) { /* the reflected terms take degree 2's first slots */
        if (dir_degree != -1 && dir_degree != 1 && dir_degree != 2) {
            snprintf(msg, sizeof msg, "--mlp-view-reflected takes --mlp-dir-degree 1 or 2 (the reflected direction's "
                                      "degree; the view direction's stays 1), not %d", dir_degree);
            rc = vx_cli_usage_error("fit", msg);
            goto fail;
        }
        /* d up to degree 1, then r's three terms and n.d (and r's five degree-2 terms) */
        cfg.hp.mlp_dir_terms = dir_degree == 2 ? VX_MLP_DIR_BOTH_TERMS2 : VX_MLP_DIR_BOTH_TERMS;
    }
    if (cfg.hp.mlp_tc > 0 && (!use_mlp || cfg.backend != VX_BACKEND_CUDA))
        fprintf(stderr, "voxray: fit: --mlp-tensor-cores has no effect %s\n",
                use_mlp ? "when training on the CPU" : "without --decoder mlp");
    if (cfg.hp.random_bg && !train.alpha)
        fprintf(stderr, "voxray: fit: --random-bg: the training photos carry no alpha, so only the model's "
                        "background changes\n");
    if (cfg.hp.mlp_dir_terms && cfg.hp.mlp_dir_terms < 16 && !use_mlp)
        fprintf(stderr, "voxray: fit: --mlp-dir-degree has no effect without --decoder mlp\n");
    if (cfg.hp.mlp_kernel && !use_mlp)
        fprintf(stderr, "voxray: fit: --mlp-kernel has no effect without --decoder mlp\n");
    else if (cfg.hp.mlp_kernel && cfg.backend != VX_BACKEND_CUDA)
        fprintf(stderr, "voxray: fit: --mlp-kernel chooses a CUDA kernel; no effect when training on the CPU\n");
    if (cfg.hp.mlp_gather && (!use_mlp || cfg.backend != VX_BACKEND_CUDA))
        fprintf(stderr, "voxray: fit: --mlp-gather has no effect %s\n",
                use_mlp ? "when training on the CPU" : "without --decoder mlp");
    else if (cfg.hp.mlp_gather == 2)
        fprintf(stderr, "fit: the batched step gathers in one march a ray (--mlp-gather 2)\n");
    /* after the CUDA defaults, which may have changed the number of stages */
    if (vx__parse_stage_ends(stage_ends, &cfg)) {
        rc = vx_cli_usage_error("fit", vx_errmsg());
        vx_clear_error();
        goto fail;
    }
    if (!has_bbox && vx_fit_box_from_cameras(train.cams, train.n, lo, hi)) goto fail;
    fprintf(stderr, "fit: %d training views, %d held out, %dx%d pixels; box [%.3f %.3f %.3f] - [%.3f %.3f %.3f]\n",
            train.n, held.n, train.width, train.height, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    vx_fit_model f;
    float white[3] = {1, 1, 1};
    if (vx_fit_model_init_cpu(&f, cfg.res[0], sh, lo, hi, (float)step, 0.0f, white, cfg.hp.init_sigma)) goto fail;
    f.mlp_reflect = use_mlp ? mlp_reflect : VX_MLP_DIR_VIEW; /* before the mlp's first vx_fit_update_params */
    if (use_mlp && vx_fit_model_use_mlp_cpu(&f, mlp_layers, (unsigned)cfg.seed)) goto fail;
    if (f.mlp_reflect == VX_MLP_DIR_REFLECTED)
        fprintf(stderr, "fit: the network sees the view direction reflected about the density's surface\n");
    if (f.mlp_reflect == VX_MLP_DIR_BOTH)
        fprintf(stderr, "fit: the network sees the view direction (SH up to degree 1) and, beside it, the direction "
                        "reflected about the density's surface (up to degree %d) and the cosine to its normal\n",
                cfg.hp.mlp_dir_terms == VX_MLP_DIR_BOTH_TERMS2 ? 2 : 1);
    f.coarse_cut = coarse_cut;
    if (coarse_only && (!ncoarse || coarse_only > f.nc - 1)) {
        snprintf(msg, sizeof msg, !ncoarse ? "--coarse-only %d needs --coarse (without a level those channels never move)"
                                           : "--coarse-only %d: the model has %d colour channels", coarse_only, f.nc - 1);
        vx_fit_model_free(&f);
        rc = vx_cli_usage_error("fit", msg);
        goto fail;
    }
    f.coarse_only = coarse_only;
    if (coarse_decay > 0 && !ncoarse) {
        snprintf(msg, sizeof msg, "--coarse-decay %g needs --coarse (the residual decays toward the levels)", coarse_decay);
        vx_fit_model_free(&f);
        rc = vx_cli_usage_error("fit", msg);
        goto fail;
    }
    f.coarse_decay = (float)coarse_decay;
    if (cfg.hp.lr_coarse > 0 && !ncoarse) { /* as --lr-coarse-sigma without its levels: a usage error */
        vx_fit_model_free(&f);
        rc = vx_cli_usage_error("fit", "--lr-coarse needs --coarse (no level to take the step)");
        goto fail;
    }
    int density = coarse_density < 0 ? VX_FIT_COARSE_DENSITY_DEFAULT : coarse_density;
    if ((coarse_density == 1 && !ncoarse) || (cfg.hp.lr_coarse_sigma > 0 && (!ncoarse || !density))) {
        vx_fit_model_free(&f);
        rc = vx_cli_usage_error("fit", coarse_density == 1 && !ncoarse
                                           ? "--coarse-density needs --coarse (the levels that carry the density)"
                                           : "--lr-coarse-sigma needs the levels' density (--coarse, without "
                                             "--no-coarse-density)");
        goto fail;
    }
    f.coarse_density = ncoarse && density; /* before the levels: their entries' channel count */
    if (f.coarse_density)
        fprintf(stderr, "fit: the coarse levels carry the density too (Adam step %g)\n", vx_fit_lr_coarse_sigma(&cfg.hp));
    if (coarse_decay > 0)
        fprintf(stderr, "fit: the colour channels blend toward the coarse levels by %g a step\n", coarse_decay);
    if (coarse_only)
        fprintf(stderr, "fit: colour channels %d-%d move with the coarse levels only\n", f.nc - coarse_only, f.nc - 1);
    for (int l = 0; l < ncoarse; l++) { /* each level takes steps from the first stage twice as fine */
        int first = vx_fit_coarse_init_cpu(&f, coarse[l]) ? -2 : vx_fit_coarse_first_stage(&f, l, cfg.res, cfg.stages);
        if (first == -1)
            vx_error("--coarse %d: the level's voxel is never twice the fine one; the last stage's resolution "
                     "must be at least %d", coarse[l], 2 * coarse[l]);
        if (first < 0) {
            vx_fit_model_free(&f);
            goto fail;
        }
        const vx_fit_level *c = &f.lv[l];
        fprintf(stderr, "fit: coarse level %dx%dx%d x %d channels from stage %d (Adam step %g)\n", c->n[0], c->n[1],
                c->n[2], vx_fit_coarse_nch(&f), first + 1, cfg.hp.lr_coarse > 0 ? cfg.hp.lr_coarse : cfg.hp.lr_sh);
    }
    char vdir[4200];
    vx_path_join(out, "val", vdir, sizeof vdir);
    cfg.val_dir = vdir;
    vx_fit_stats st;
    if (vx_fit_train(&f, &cfg, &train, &held, &st)) { vx_fit_model_free(&f); goto fail; }
    /* the manifest camera: from the first held-out view towards the box centre, with the
     * world axis the cameras' up vectors agree on as up (+Z for Blender scenes), so
     * `voxray view` orbits upright */
    const float *m = held.cams[0].c2w;
    double cam[10] = {m[3], m[7], m[11], 0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2]),
                      0, 0, 0, held.cams[0].fov_x * 180.0 / M_PI};
    double upsum[3] = {0, 0, 0};
    for (int v = 0; v < train.n; v++)
        for (int a = 0; a < 3; a++) upsum[a] += train.cams[v].c2w[4 * a + 1];
    int ax = 0;
    for (int a = 1; a < 3; a++) if (fabs(upsum[a]) > fabs(upsum[ax])) ax = a;
    cam[6 + ax] = upsum[ax] < 0 ? -1.0 : 1.0;
    double vd[3] = {cam[3] - cam[0], cam[4] - cam[1], cam[5] - cam[2]};
    double vl = sqrt(vd[0] * vd[0] + vd[1] * vd[1] + vd[2] * vd[2]);
    if (!(vl > 0) || fabs(vd[ax]) > 0.99 * vl) /* looking along that axis: keep the camera's own up */
        for (int a = 0; a < 3; a++) cam[6 + a] = m[4 * a + 1];
    const char *base = strrchr(dataset, '/');
    base = base && base[1] ? base + 1 : dataset;
    if (vx_fit_write_scene(&f, out, base, cam, storage)) { vx_fit_model_free(&f); goto fail; }
    {
        char gpath[4096];
        struct stat gs;
        vx_path_join(out, storage == VX_FIT_WRITE_DENSE ? "grid.npy" : "grid.sparse.npz", gpath, sizeof gpath);
        double mb = stat(gpath, &gs) == 0 ? (double)gs.st_size / 1e6 : 0.0;
        printf("fit: %.1f s, %.0f rays/s, loss %.5f -> %.5f; wrote %s/scene.json and %s (%dx%dx%d x %d, %.1f MB)\n",
               st.seconds, st.rays_per_s, st.loss_first, st.loss_last, out, gpath, f.nx, f.ny, f.nz, f.nc, mb);
    }
    double mp, ms;
    vx_scene fs;
    vx_render_opts ro;
    vx_renderer *rr = NULL;
    vx_fit_as_scene(&f, &fs);
    vx_render_opts_default(&ro);
    int r2 = vx_renderer_create(&rr, &fs, &ro, cfg.backend);
    if (!r2) r2 = vx_fit_report("fit: held-out views", &held, train.cams, train.n, vx_fit_render_renderer, rr, vdir,
                                    &mp, &ms);
    if (rr) vx_renderer_destroy(rr);
    vx_fit_model_free(&f);
    if (r2) goto fail;
    rc = 0;
fail:
    if (rc == 1) fprintf(stderr, "voxray fit: %s\n", vx_errmsg());
    vx_dataset_free(&all);
    vx_dataset_free(&train);
    vx_dataset_free(&held);
    return rc;
}
