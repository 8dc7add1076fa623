#!/bin/bash
# fit_mlp_device.sh - the device calls that measure the mlp decoder's CUDA training kernels
# (docs/FIT.md, "Next device call"), written so one call does one step and logs as it goes.
# Usage: tools/fit_mlp_device.sh STEP OUTDIR [fit args]   with the binaries of `make
# dev-bundle` in BIN (default .dev/bin; gzipped there, unpacked here), .deps/lib, and the
# views in .mic / .lego (carry them: .dev .deps/lib .mic; for lego, whose 52 MB leave no
# room for all of .dev under the 64 MiB, .dev/bin/voxray.gz .dev/COMMIT .deps/lib .lego). STEP:
#   check  test_fit_gpu (quick) and test_render_cuda (the mlp's deferred colour against the
#          fused kernel and the CPU), mic 60 s with --mlp-kernel batched, `bench fit` and
#          `bench render` on that scene (fused and deferred rows)
#   check-sh  test_fit_gpu (quick), a 20-s SH 3 mic fit and `bench fit` on it (the ray step
#          with and without --rgbper: version 2's per-point instantiation against the plain one)
#   mic5   mic, 5 minutes, mlp batched        lego5  lego (test split), 5 minutes, mlp batched
#   mic60-sh3  mic, 60 s, SH degree 3 (the baseline, same lease)
#   sanitize   compute-sanitizer memcheck and racecheck on test_fit_gpu's mlp tests
#   level5     test_fit_gpu's coarse-level test, lego mlp 5 minutes with --coarse 64 (test split),
#              then `bench fit` on that scene with the level (R = its lattice's longest edge / 8,
#              as in the fit): the level's kernels row by row (FIT.md session 19, next calls)
#   rbg5       test_fit_gpu's sampled-ray tests (the random background and the mlp's density
#              regularisers against the CPU on hardware), then lego mlp --coarse 64
#              --mlp-dir-degree 1 --random-bg for 5 minutes against md1 (FIT.md session 20)
#   md1b       test_fit_gpu (quick, all of it), lego md1 (mlp --coarse 64 --mlp-dir-degree 1, the
#              best lego recipe) for 5 minutes, then `bench fit` on its scene (the copy bandwidth
#              of the same run; the tensor-core rows beside the FP32 ones) and `bench render`
#              at 800x800 (the 100 frames/s bar) with its size on disk: for the H200
#   render-tc  test_fit_gpu's tensor-core and coarse-level (the cut to the crop) tests,
#              test_render_cuda (render --mlp-tensor-cores against
#              the FP32 network and the CPU), a 60-s lego fit of the best recipe on the tensor
#              cores, and `bench render` on it (rows FP32, tc, fused): carry .dev .deps/lib and a
#              .lego of every 25th test view (tools/lego_subset.py SRC .lego 25) to fit in 64 MiB
#   tests-mic5 the tensor-core and coarse-level tests of test_fit_gpu and
#              test_render_cuda on hardware, then mic SH 3 for 5 minutes and `bench render` on
#              it (carry .dev .deps/lib .mic)
#   cut-ab     test_fit_gpu's coarse-level test, then lego mlp --coarse 64,128 --mlp-dir-degree 1
#              for 2 minutes with whole levels and with --coarse-cut (FIT.md session 23: the cut
#              held out 0.5 dB worse by 60 s on the device, not on the CPU)
#   lego5r     OUTDIR NAME ARGS...: lego (test split) mlp for 5 minutes with ARGS, then `bench
#              render` on its scene (FP32, tc and fused rows; carry .dev/bin/voxray.gz ... .lego)
#   lego5g     OUTDIR NAME ARGS...: lego5r's fit and `bench render`, then `bench fit` on the scene
#              with the recipe's two levels, whose rows time the batched step with gather 1 and 2
#              (fit --mlp-gather): one call, ~400 s (FIT.md s33; .lego and the tracked files leave
#              no room for test_fit_gpu.gz in the 64 MiB carry: run the GPU tests with an eval)
#   levels-ab  OUTDIR NAME: `bench fit --coarse R1,R2` on lego scene NAME kept in OUTDIR (by lego5r),
#              the recipe's two levels with the density (fit's default) and with --no-coarse-density
#              (FIT.md s29): both restriction versions, one launch a level
#   eval       OUTDIR SCENE DATASET NAME: `voxray eval` of a scene kept on the warm device (e.g. in
#              .runs/) on DATASET's test split, the log as NAME.eval.log: lego's 200 test views in
#              two carries (.legoA, .legoB: views 0-99 and 100-199 with transforms_train.json)
#   evalt      OUTDIR SCENE DATASET NAME: eval's `voxray eval`, then test_render_cuda and test_fit_gpu
#              (quick) on the same warm machine, logs trc.log and tfg.log in OUTDIR (carry the two
#              test binaries' .gz beside .legoA: the GPU tests that no longer fit beside .lego)
#   pyr5       test_fit_gpu's coarse-level test (levels active and waiting), then lego mlp
#              --coarse 64,128 --mlp-dir-degree 1 for 5 minutes against md1 (FIT.md session 21)
#   variants   OUTDIR DATASET SECONDS NAME=ARGS...: one fit a variant (ARGS split on spaces,
#              after the mlp decoder's flags), e.g. `variants out .mic 120 base= tv="--tv-until 1"`
#   runs       the same without the mlp flags (the SH decoder unless ARGS say otherwise), e.g.
#              `runs out .lego 300 sh2="--val-split test" lrs="--val-split test --lr-sigma 0.1"`
# A failed GPU test stops `check` before anything is timed (a wrong kernel's speed is no news).
# Extra fit args (e.g. --batch 131072) go to every fit of the step; the runs are named
# after the step, so give each variant its own OUTDIR. Each fit adds its row (fit_summary.sh,
# as fit_compare.sh writes them) to OUTDIR/summary.md.
set -u
step=${1:?usage: tools/fit_mlp_device.sh check|check-sh|level5|rbg5|md1b|render-tc|tests-mic5|cut-ab|lego5r|lego5g|levels-ab|eval|evalt|pyr5|mic5|lego5|mic60-sh3|variants|runs|sanitize OUTDIR}
out=${2:?usage: tools/fit_mlp_device.sh STEP OUTDIR [fit args]}
shift 2
BIN=${BIN:-.dev/bin}
here=$(dirname "$0")
for f in voxray test_fit_gpu test_render_cuda; do # make dev-bundle gzips them (10 MB instead of 42 in the carry)
    if [ -f "$BIN/$f.gz" ] && [ ! -x "$BIN/$f" ]; then
        gunzip -c "$BIN/$f.gz" > "$BIN/$f.tmp" && chmod +x "$BIN/$f.tmp" && mv "$BIN/$f.tmp" "$BIN/$f" || exit 1
    fi
done
export VOXRAY=$BIN/voxray
export LD_LIBRARY_PATH=$PWD/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out" || exit 1
log=$out/$step.log
exec > >(tee -a "$log") 2>&1
echo "== $step, $(date -u '+%Y-%m-%d %H:%M:%S') UTC, commit $(cat .dev/COMMIT 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null
mlp="--decoder mlp --mlp-kernel batched"
extra="$*"
fit() { # NAME DATASET SECONDS ARGS...
    local name=$1 data=$2 secs=$3
    shift 3
    local t0=$(date +%s)
    echo "-- $name: fit $data, $secs s, $* $extra"
    sh "$here/fit_mic.sh" "$data" "$out/$name" --max-seconds "$secs" "$@" $extra > "$out/$name.fit.log" 2>&1
    local rc=$?
    echo "-- $name: rc=$rc, $(( $(date +%s) - t0 )) s wall"
    if [ $rc -ne 0 ]; then tail -5 "$out/$name.fit.log"; return $rc; fi
    # the renders of the views FIT.md looks at (lego's lowest cameras r_96 and r_104 too), as
    # one tar a run (the device tool brings back 8 files, 2 folders down): the fit writes
    # held-out view K as val/final_K.png, K the view's place in the log's per-view table
    awk '$1 ~ /\.png$/ && $2 ~ /^[0-9.]+$/ { n = $1; sub(/.*\//, "", n); sub(/\.png$/, "", n);
        if (n == "r_8" || n == "r_16" || n == "r_40" || n == "r_80" || n == "r_96" || n == "r_104") printf "%s %03d\n", n, k; k++ }' \
        "$out/$name.fit.log" | while read -r view k; do
            [ -f "$out/$name/val/final_$k.png" ] && cp "$out/$name/val/final_$k.png" "$out/${name}_$view.png"
        done
    (cd "$out" && ls "${name}"_r_*.png > /dev/null 2>&1 && tar cf "$name.renders.tar" "${name}"_r_*.png && rm -f "${name}"_r_*.png)
    [ -f "$out/summary.md" ] || sh "$here/fit_summary.sh" --header > "$out/summary.md"
    sh "$here/fit_summary.sh" "$out/$name.fit.log" "$name" "$* $extra" "$(( $(date +%s) - t0 ))" | tee -a "$out/summary.md"
}
bench_level() { # NAME LOG [ARGS]: `bench fit` on run NAME's scene with the recipe's two levels
    # (R = its last lattice's longest edge / 8 and / 4, as the fit's --coarse 64,128 over a 512
    # lattice; BENCH_LEVELS=1: the first only, the rows of sessions 20-29)
    local r name=$1 blog=$2
    shift 2
    r=$(grep -E '^fit: +stage [0-9]+ ' "$out/$name.fit.log" | tail -n 1 | # the report's row, not "stage N:"
        awk -v two="${BENCH_LEVELS:-2}" '{ split($4, n, "x"); m = n[1]; if (n[2] > m) m = n[2]; if (n[3] > m) m = n[3];
            if (two == 1) print int(m / 8); else print int(m / 8) "," int(m / 4) }')
    echo "-- bench fit on the scene, --coarse $r $*"
    "$VOXRAY" bench fit "$out/$name" .lego --coarse "$r" --steps 10 --batch 65536 "$@" > "$out/$blog" 2>&1
    local rc=$? # bench fit's own status, not a pipe's
    cat "$out/$blog"
    return $rc
}
render_bar() { # NAME LOG: `bench render` on run NAME's scene at 800x800 (the issue's 100 frames/s
    # bar, fused and deferred rows) and its size on disk
    echo "-- bench render on the scene, and its size on disk"
    "$VOXRAY" bench render "$out/$1" --size 800x800 --stores f32,f16 2>&1 | tee "$out/$2"
    du -sh "$out/$1" | tee -a "$out/$2"
}
gpu_tests() { # FILTER LOG: test_fit_gpu (quick) on the tests FILTER names; nothing timed if one fails
    VX_FIT_GPU_QUICK=1 VX_TEST_FILTER="$1" "$BIN/test_fit_gpu" > "$out/$2" 2>&1 ||
        { tail -8 "$out/$2"; echo "test_fit_gpu ($1) failed: nothing timed"; exit 1; }
    tail -3 "$out/$2"
}
tc_tests() { # the tensor-core and coarse-level tests of test_fit_gpu, and test_render_cuda (the
    # deferred network on the tensor cores against FP32 and the CPU); nothing timed if one fails
    gpu_tests 'test_mlp_tensor_cores' test_tc.log
    gpu_tests 'test_coarse_level' test_coarse.log
    echo "-- test_render_cuda (the deferred network on the tensor cores against FP32 and the CPU)"
    "$BIN/test_render_cuda" > "$out/test_render_cuda.log" 2>&1 ||
        { tail -12 "$out/test_render_cuda.log"; echo "test_render_cuda failed: nothing timed"; exit 1; }
    grep -E "tensor cores vs|PASSED" "$out/test_render_cuda.log" | tail -6
}
eval_scene() { # SCENE DATASET NAME: `voxray eval` of a kept scene on DATASET's test split
    local scene=${1:?$step: SCENE DATASET NAME} data=${2:?$step: DATASET} name=${3:?$step: NAME} rc
    [ -f "$scene/scene.json" ] || { echo "$step: no scene in $scene (not kept on this machine?)"; exit 1; }
    "$VOXRAY" eval "$scene" "$data" --split test > "$out/$name.eval.log" 2>&1
    rc=$?
    tail -4 "$out/$name.eval.log"
    return $rc
}
case "$step" in
check)
    echo "-- test_fit_gpu (VX_FIT_GPU_QUICK=1)"
    VX_FIT_GPU_QUICK=1 "$BIN/test_fit_gpu" > "$out/test_fit_gpu.log" 2>&1
    rc=$?
    tail -30 "$out/test_fit_gpu.log"
    [ $rc -eq 0 ] || { echo "test_fit_gpu failed (rc=$rc): nothing timed"; exit 1; }
    echo "-- test_render_cuda"
    "$BIN/test_render_cuda" > "$out/test_render_cuda.log" 2>&1
    rc=$?
    grep -E "deferred vs fused|FAILED|PASSED|ERROR" "$out/test_render_cuda.log" | tail -12
    [ $rc -eq 0 ] || { echo "test_render_cuda failed (rc=$rc): nothing timed"; exit 1; }
    fit mic60-mlpb .mic 60 $mlp || exit 1
    echo "-- bench fit on the mlp scene"
    "$VOXRAY" bench fit "$out/mic60-mlpb" .mic --steps 10 2>&1 | tee "$out/bench_fit.log"
    echo "-- bench render on the mlp scene (the issue's 100 frames/s bar), and its size on disk"
    "$VOXRAY" bench render "$out/mic60-mlpb" --size 800x800 --size 1920x1080 --stores f32,f16 2>&1 | tee "$out/bench_render.log"
    du -sh "$out/mic60-mlpb"
    ;;
check-sh)
    echo "-- test_fit_gpu (VX_FIT_GPU_QUICK=1)"
    VX_FIT_GPU_QUICK=1 "$BIN/test_fit_gpu" > "$out/test_fit_gpu.log" 2>&1
    rc=$?
    tail -4 "$out/test_fit_gpu.log"
    [ $rc -eq 0 ] || { echo "test_fit_gpu failed (rc=$rc): nothing timed"; exit 1; }
    fit mic20-sh3 .mic 20 --sh-degree 3 || exit 1
    echo "-- bench fit on the SH 3 scene (twice)"
    for k in 1 2; do "$VOXRAY" bench fit "$out/mic20-sh3" .mic --steps 10 2>&1; done | tee "$out/bench_fit_sh3.log"
    ;;
level5)
    gpu_tests 'test_coarse*' test_coarse.log
    fit lego300-mc64 .lego 300 $mlp --val-split test --coarse 64 || exit 1
    BENCH_LEVELS=1 bench_level lego300-mc64 bench_level.log
    ;;
rbg5)
    gpu_tests 'test_*sampled*' test_sampled.log
    fit lego300-rbg .lego 300 $mlp --val-split test --coarse 64 --mlp-dir-degree 1 --random-bg
    ;;
md1b)
    gpu_tests '*' test_fit_gpu.log
    fit lego300-md1 .lego 300 $mlp --val-split test --coarse 64 --mlp-dir-degree 1 || exit 1
    BENCH_LEVELS=1 bench_level lego300-md1 bench_md1.log
    render_bar lego300-md1 bench_render_md1.log
    ;;
render-tc)
    tc_tests
    fit lego60-pyrtc .lego 60 $mlp --val-split test --coarse 64,128 --mlp-dir-degree 1 --mlp-tensor-cores || exit 1
    render_bar lego60-pyrtc bench_render_tc.log
    ;;
tests-mic5)
    tc_tests
    fit mic300-sh3 .mic 300 --sh-degree 3 || exit 1
    render_bar mic300-sh3 bench_render_mic.log
    ;;
cut-ab)
    gpu_tests 'test_coarse_level' test_coarse.log
    fit lego120-whole .lego 120 $mlp --val-split test --coarse 64,128 --mlp-dir-degree 1 || exit 1
    fit lego120-cut .lego 120 $mlp --val-split test --coarse 64,128 --mlp-dir-degree 1 --coarse-cut
    ;;
lego5r)
    name=${1:?lego5r: NAME ARGS...}
    shift
    extra="" # ARGS are this run's, not every fit's
    fit "$name" .lego 300 $mlp --val-split test "$@" || exit 1
    render_bar "$name" "bench_render_$name.log"
    ;;
eval)
    eval_scene "$@"
    exit $?
    ;;
evalt)
    eval_scene "$@"
    rc=$?
    for t in test_render_cuda test_fit_gpu; do
        [ -x "$BIN/$t" ] || { echo "evalt: no $BIN/$t (carry .dev/bin/$t.gz)"; rc=1; continue; }
        tl=$out/trc.log; [ $t = test_fit_gpu ] && tl=$out/tfg.log
        VX_FIT_GPU_QUICK=1 "$BIN/$t" > "$tl" 2>&1 || { echo "$t failed"; rc=1; }
        grep -E "^\[  (PASSED|FAILED) " "$tl"
    done
    exit $rc
    ;;
pyr5)
    gpu_tests 'test_coarse*' test_coarse.log
    fit lego300-pyr .lego 300 $mlp --val-split test --coarse 64,128 --mlp-dir-degree 1
    ;;
lego5g)
    name=${1:?lego5g: NAME ARGS...}
    shift
    extra=""
    fit "$name" .lego 300 $mlp --val-split test "$@" || exit 1
    render_bar "$name" "bench_render_$name.log"
    bench_level "$name" "bench_fit_$name.log"
    ;;
levels-ab)
    name=${1:?levels-ab: NAME (a lego scene lego5r kept in OUTDIR)}
    [ -f "$out/$name.fit.log" ] || { echo "levels-ab: no $out/$name.fit.log (not kept on this machine?)"; exit 1; }
    bench_level "$name" "bench_fit_$name.log" || exit 1
    bench_level "$name" "bench_fit_${name}_nod.log" --no-coarse-density
    ;;
mic5) fit mic300-mlpb .mic 300 $mlp ;;
lego5) fit lego300-mlpb .lego 300 $mlp --val-split test ;;
mic60-sh3) fit mic60-sh3 .mic 60 --sh-degree 3 ;;
variants | runs)
    [ "$step" = runs ] && mlp=""
    data=${1:?$step: DATASET SECONDS NAME=ARGS...} secs=${2:?$step: SECONDS}
    shift 2
    extra="" rc=0
    for v in "$@"; do
        case "$v" in *=*) ;; *) echo "fit_mlp_device.sh: $step: variant '$v' is not NAME=ARGS" >&2; exit 2 ;; esac
    done
    for v in "$@"; do
        # shellcheck disable=SC2086 # a variant's ARGS are a word list by design
        fit "${v%%=*}" "$data" "$secs" $mlp ${v#*=} || rc=1
    done
    exit $rc
    ;;
sanitize)
    rc=0
    for tool in memcheck racecheck; do
        echo "-- compute-sanitizer --tool $tool, test_mlp*"
        VX_FIT_GPU_QUICK=1 VX_TEST_FILTER='test_mlp*' compute-sanitizer --tool $tool --error-exitcode 3 \
            "$BIN/test_fit_gpu" > "$out/san_$tool.log" 2>&1 || rc=1
        tail -8 "$out/san_$tool.log"
    done
    exit $rc
    ;;
*) echo "fit_mlp_device.sh: unknown step '$step'" >&2; exit 2 ;;
esac
