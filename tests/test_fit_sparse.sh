#!/bin/sh
# test_fit_sparse.sh - a fitted mic scene (a short two-stage CPU fit, so the second stage
# trains bricked) rendered from its sparse float32 file and from the dense grid convert
# makes of it: the same image; its float16 file within 1/255; the bricked training equals
# --dense-train in loss; the coarse levels cut to the crop train as whole ones; coarse-only
# channels take no steps of their own; --coarse-decay's level values go through the crop and
# change the fit; the levels carry the density through the crop by default, and
# --no-coarse-density changes the fit; --mlp-reflect's scene says so, keeps it and renders;
# and the sparse file is far smaller than the dense one.
# Run by tests/run_tests.sh (VOXRAY set); prints "fit-sparse: N passed, N failed".
VOXRAY=${VOXRAY:-build/voxray}
MIC=${VX_MIC:-../shared/data/nerf_synthetic_mic}
T=$(mktemp -d /tmp/voxray-fitsp-XXXXXX)
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
    rm -rf "$T"
    echo "fit-sparse: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
if [ ! -f "$MIC/transforms_train.json" ]; then
    echo "skipped: fitted scene sparse vs dense: $MIC/transforms_train.json not found (../shared/data absent; set VX_MIC)"
    finish
fi
CMP=$T/png_compare
if ! cc -O2 -o "$CMP" tests/png_compare.c -lm; then bad "building tests/png_compare.c"; finish; fi

FIT="--backend cpu --downscale 8 --res 24,40 --iters 60 --batch 2048 --val-every 0 --seed 3"
if ! $VOXRAY fit "$MIC" -o "$T/sp" $FIT --write sparse >"$T/sp.log" 2>&1; then
    bad "bricked fit failed"; tail -5 "$T/sp.log"; finish
fi
ok
# the second stage trained bricked: the progress names fewer alive voxels than the lattice
grep -q "stage 2" "$T/sp.log" && ok || bad "no second stage in the fit log"

$VOXRAY convert "$T/sp" "$T/dense" --dense >/dev/null 2>&1 && ok || bad "convert --dense"
$VOXRAY convert "$T/sp" "$T/half" --sparse --half >/dev/null 2>&1 && ok || bad "convert --sparse --half"
for cam in "" "--azimuth 120 --elevation -20" "--azimuth 250 --elevation 50"; do
    # shellcheck disable=SC2086
    $VOXRAY render "$T/sp" --size 96x80 --backend cpu -q -o "$T/s.png" $cam &&
        $VOXRAY render "$T/dense" --size 96x80 --backend cpu -q -o "$T/d.png" $cam &&
        $VOXRAY render "$T/half" --size 96x80 --backend cpu -q -o "$T/h.png" $cam || { bad "render ($cam)"; continue; }
    cmp -s "$T/s.png" "$T/d.png" && ok || bad "sparse float32 and dense renders differ ($cam)"
    $CMP "$T/h.png" "$T/d.png" --tol 1 >/dev/null && ok || bad "float16 sparse render beyond 1/255 of dense ($cam)"
    # and the comparison can fail: a different scene is not within 1/255
    $VOXRAY render "$T/dense" --size 96x80 --backend cpu -q -o "$T/x.png" --density-scale 0.5 $cam &&
        ! $CMP "$T/x.png" "$T/d.png" --tol 1 >/dev/null && ok || bad "the image comparison cannot tell scenes apart ($cam)"
done

# sizes: the sparse float16 file is a small fraction of the dense grid
ss=$(wc -c <"$T/half/grid.sparse.npz")
ds=$(wc -c <"$T/dense/grid.npy")
[ "$ss" -gt 0 ] && [ $((ss * 4)) -lt "$ds" ] && ok || bad "sparse float16 file $ss bytes vs dense $ds"

# --final-prune on the bricked lattice: this short fit's last quarter draws too few rays
# (7 steps of 2048 against 87 views of 100x100 pixels) to tell unseen voxels from undrawn ones, so
# it says it skipped the prune and writes what the run without the flag writes
if $VOXRAY fit "$MIC" -o "$T/fp" $FIT --write sparse --final-prune >"$T/fp.log" 2>&1; then
    grep -q "^fit: --final-prune skipped: the last quarter of the last stage drew [0-9]* rays, fewer than twice the 870000" "$T/fp.log" && ok ||
        bad "no skip line in the fit log"
    ! grep -q "^fit: final prune:" "$T/fp.log" && ok || bad "a skipped final prune pruned"
else
    bad "fit --final-prune failed"; tail -5 "$T/fp.log"
fi

# the coarse levels are cut to the crop by default (stage 2's log names a lattice smaller
# than the level's first, 12 vertices an edge) and kept whole with --no-coarse-cut; both
# train the same model (each fine voxel reads the same vertices): the same final loss
for c in cut --no-coarse-cut; do
    # shellcheck disable=SC2086
    if ! $VOXRAY fit "$MIC" -o "$T/lv$c" $FIT --decoder mlp --coarse 12 $([ "$c" = cut ] || echo "$c") >"$T/lv$c.log" 2>&1; then
        bad "fit --coarse 12 ($c) failed"; tail -5 "$T/lv$c.log"
    fi
done
lv=$(sed -n 's/^fit: stage 2: coarse level 1 holds \([0-9x]*\) vertices/\1/p' "$T/lvcut.log")
lw=$(sed -n 's/^fit: stage 2: coarse level 1 holds \([0-9x]*\) vertices/\1/p' "$T/lv--no-coarse-cut.log")
[ -n "$lv" ] && [ "$lv" != 12x12x12 ] && ok || bad "the default did not cut the level to the crop: '$lv'"
[ "$lw" = 12x12x12 ] && ok || bad "--no-coarse-cut cut the level: '$lw'"
a=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/lvcut.log")
b=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/lv--no-coarse-cut.log")
[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * b) }' &&
    ok || bad "cut levels' loss $a vs whole $b"

# --coarse-only 15 (every feature moves with the level only) is --lr-sh 0 (the features'
# own steps of size zero) with the level's step size given: the same scene byte for byte
# (one thread: the same sums in the same order)
CO="$FIT --decoder mlp --coarse 12 --lr-coarse 0.02"
# shellcheck disable=SC2086
if OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/co15" $CO --coarse-only 15 >"$T/co15.log" 2>&1 &&
    OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/lrsh0" $CO --lr-sh 0 >"$T/lrsh0.log" 2>&1; then
    grep -q "^fit: colour channels 1-15 move with the coarse levels only" "$T/co15.log" && ok || bad "no coarse-only line"
    cmp -s "$T/co15/grid.sparse.npz" "$T/lrsh0/grid.sparse.npz" && ok || bad "--coarse-only 15 differs from --lr-sh 0"
else
    bad "fit --coarse-only 15 or --lr-sh 0 failed"; tail -3 "$T/co15.log" "$T/lrsh0.log"
fi

# --coarse-decay: the levels keep their values through the stage change (cut to the crop) and
# the blend reaches the training: another final loss than the same fit without it
# shellcheck disable=SC2086
if OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/cd" $CO --coarse-decay 0.2 >"$T/cd.log" 2>&1 &&
    OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/cd0" $CO >"$T/cd0.log" 2>&1; then
    grep -q "^fit: the colour channels blend toward the coarse levels by 0.2 a step" "$T/cd.log" && ok ||
        bad "no coarse-decay line"
    grep -q "^fit: stage 2: coarse level 1 holds" "$T/cd.log" && ok || bad "--coarse-decay: no cut level in stage 2"
    a=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/cd.log")
    b=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/cd0.log")
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && ok || bad "--coarse-decay 0.2 ends at loss '$a', without it '$b'"
else
    bad "fit --coarse-decay 0.2 failed"; tail -3 "$T/cd.log" "$T/cd0.log"
fi

# the levels carry the density by default (cd0 above: the density line, 16 channels a vertex)
# through the stage change (cut to the crop); --no-coarse-density leaves it out (15 channels)
# and ends at another final loss; --lr-coarse-sigma sets the levels' density step
# shellcheck disable=SC2086
if OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/cs" $CO --no-coarse-density >"$T/cs.log" 2>&1 &&
    OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/cs2" $CO --lr-coarse-sigma 0.07 >"$T/cs2.log" 2>&1; then
    grep -q "^fit: the coarse levels carry the density too (Adam step 0.1)" "$T/cd0.log" && ok ||
        bad "the default: no coarse-density line"
    grep -q "^fit: coarse level 12x12x12 x 16 channels" "$T/cd0.log" && ok || bad "the default level is not 16 channels"
    grep -q "^fit: stage 2: coarse level 1 holds" "$T/cd0.log" && ok || bad "the default: no cut level in stage 2"
    grep -q "carry the density" "$T/cs.log" && bad "--no-coarse-density: the levels carry the density" || ok
    grep -q "^fit: coarse level 12x12x12 x 15 channels" "$T/cs.log" && ok || bad "--no-coarse-density: the level is not 15 channels"
    grep -q "^fit: the coarse levels carry the density too (Adam step 0.07)" "$T/cs2.log" && ok ||
        bad "--lr-coarse-sigma 0.07: no such step in the log"
    a=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/cd0.log")
    b=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/cs.log")
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && ok || bad "the levels with the density end at loss '$a', without it '$b'"
else
    bad "fit --no-coarse-density or --lr-coarse-sigma 0.07 failed"; tail -3 "$T/cs.log" "$T/cs2.log"
fi

# --mlp-reflect: the log says so, the scene says "direction": "reflected" and keeps it
# through convert, it renders, and the fit trains another network than the same fit
# seeing the view direction (cd0 above); --mlp-gather, a CUDA choice, says it does nothing here
# shellcheck disable=SC2086
if OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/rf" $CO --mlp-reflect --mlp-gather 2 >"$T/rf.log" 2>&1; then
    grep -q "^voxray: fit: --mlp-gather has no effect when training on the CPU" "$T/rf.log" && ok ||
        bad "--mlp-gather on the CPU: no line in the fit log"
    grep -q "^fit: the network sees the view direction reflected about the density's surface" "$T/rf.log" && ok ||
        bad "--mlp-reflect: no line in the fit log"
    grep -q '"direction":[[:space:]]*"reflected"' "$T/rf/scene.json" && ok || bad "--mlp-reflect: the scene does not say so"
    $VOXRAY convert "$T/rf" "$T/rfd" --dense >/dev/null 2>&1 && grep -q '"direction":[[:space:]]*"reflected"' "$T/rfd/scene.json" &&
        ok || bad "convert --dense dropped the reflected direction"
    $VOXRAY render "$T/rf" -o "$T/rf.png" --backend cpu >"$T/rfr.log" 2>&1 && [ -s "$T/rf.png" ] && ok ||
        bad "render of the reflected scene: $(tail -1 "$T/rfr.log")"
    # the same one-thread fit seeing the view direction (cd0) trains other weights (the
    # final losses of this short fit can agree in all four printed digits)
    [ -s "$T/rf/mlp.npy" ] && ! cmp -s "$T/rf/mlp.npy" "$T/cd0/mlp.npy" && ok ||
        bad "--mlp-reflect trained the same network as the view direction"
else
    bad "fit --mlp-reflect failed"; tail -3 "$T/rf.log"
fi

# --mlp-view-reflected: the log says so, the scene says "direction": "view+reflected" and keeps
# it through convert, info names it, it renders, and it trains another network than either
# direction alone; with --mlp-dir-degree 2 (the reflected direction's degree 2 terms too)
# another network again; with a degree other than 1 or 2 it is a usage error
# shellcheck disable=SC2086
if OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/vr" $CO --mlp-view-reflected >"$T/vr.log" 2>&1; then
    grep -q "^fit: the network sees the view direction (SH up to degree 1) and, beside it.*(up to degree 1)" "$T/vr.log" && ok ||
        bad "--mlp-view-reflected: no line in the fit log"
    grep -q '"direction":[[:space:]]*"view+reflected"' "$T/vr/scene.json" && ok ||
        bad "--mlp-view-reflected: the scene does not say so"
    $VOXRAY convert "$T/vr" "$T/vrd" --dense >/dev/null 2>&1 && grep -q '"direction":[[:space:]]*"view+reflected"' "$T/vrd/scene.json" &&
        ok || bad "convert --dense dropped the view and reflected direction"
    $VOXRAY info "$T/vr" 2>&1 | grep -q "the view and the reflected direction" && ok || bad "info does not name both directions"
    $VOXRAY render "$T/vr" -o "$T/vr.png" --backend cpu >"$T/vrr.log" 2>&1 && [ -s "$T/vr.png" ] && ok ||
        bad "render of the view+reflected scene: $(tail -1 "$T/vrr.log")"
    [ -s "$T/vr/mlp.npy" ] && ! cmp -s "$T/vr/mlp.npy" "$T/cd0/mlp.npy" && ! cmp -s "$T/vr/mlp.npy" "$T/rf/mlp.npy" && ok ||
        bad "--mlp-view-reflected trained the same network as one direction alone"
else
    bad "fit --mlp-view-reflected failed"; tail -3 "$T/vr.log"
fi
# shellcheck disable=SC2086
if OMP_NUM_THREADS=1 $VOXRAY fit "$MIC" -o "$T/vr2" $CO --mlp-view-reflected --mlp-dir-degree 2 >"$T/vr2.log" 2>&1; then
    grep -q "^fit: the network sees the view direction (SH up to degree 1) and, beside it.*(up to degree 2)" "$T/vr2.log" &&
        ok || bad "--mlp-view-reflected --mlp-dir-degree 2: no line in the fit log"
    [ -s "$T/vr2/mlp.npy" ] && ! cmp -s "$T/vr2/mlp.npy" "$T/vr/mlp.npy" && ok ||
        bad "--mlp-view-reflected --mlp-dir-degree 2 trained the same network as degree 1"
else
    bad "fit --mlp-view-reflected --mlp-dir-degree 2 failed"; tail -3 "$T/vr2.log"
fi
# shellcheck disable=SC2086
$VOXRAY fit "$MIC" -o "$T/vr3" $CO --mlp-view-reflected --mlp-dir-degree 3 >"$T/vr3.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "takes --mlp-dir-degree 1 or 2" "$T/vr3.log" && [ ! -e "$T/vr3" ] && ok ||
    bad "--mlp-view-reflected --mlp-dir-degree 3: exit $rc, $(tail -1 "$T/vr3.log")"

# bricked training is the dense training: the same final loss (OpenMP sums differ only in
# the last bits; the schedule and the rays are the same)
if $VOXRAY fit "$MIC" -o "$T/dn" $FIT --dense-train >"$T/dn.log" 2>&1; then
    a=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/sp.log")
    b=$(sed -n 's/.*loss [0-9.e+-]* -> \([0-9.e+-]*\);.*/\1/p' "$T/dn.log")
    if [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.02 * b) }'; then
        ok
    else
        bad "bricked loss $a vs dense $b"
    fi
else
    bad "dense fit failed"; tail -5 "$T/dn.log"
fi
finish
