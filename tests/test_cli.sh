#!/bin/sh
# test_cli.sh - voxray end to end from the command line: make-scene, render (single,
# turntable, NeRF path, depth/opacity, transparent), info, and bad input: each must
# exit 1 (bad data) or 2 (usage) with one line naming the problem and leave no output.
# Run by tests/run_tests.sh with VOXRAY set; prints "cli: N passed, N failed".
VOXRAY=${VOXRAY:-build/voxray}
T=$(mktemp -d /tmp/voxray-cli-XXXXXX)
. tests/cli_expect.sh

$VOXRAY make-scene orbs -o "$T/orbs" --res 24 >/dev/null || bad "make-scene orbs"
$VOXRAY make-scene phantom -o "$T/phantom" --res 24 >/dev/null || bad "make-scene phantom"

# ---- working paths --------------------------------------------------------------------
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/a.png" --size 32x24 --backend cpu -q
[ -s "$T/a.png" ] && ok || bad "render wrote no PNG"
head -c 8 "$T/a.png" | od -An -c | grep -q 'P   N   G' && ok || bad "a.png is not a PNG"
expect 0 "" -- $VOXRAY render "$T/orbs/scene.json" -o "$T/b.png" --size 16x16 --backend cpu --depth "$T/d.npy" --depth "$T/d.png" --opacity "$T/o.png" --transparent -q
for f in b.png d.npy d.png o.png; do [ -s "$T/$f" ] && ok || bad "missing $f"; done
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/turn/%03d.png" --size 16x16 --turntable 3 --backend cpu -q
for k in 000 001 002; do [ -s "$T/turn/$k.png" ] && ok || bad "turntable frame $k missing"; done
cat >"$T/transforms.json" <<'J'
{"camera_angle_x": 0.69, "frames": [
 {"file_path": "./r_0", "transform_matrix": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]},
 {"file_path": "./r_1", "transform_matrix": [[0,0,1,4],[0,1,0,0],[-1,0,0,0],[0,0,0,1]]}]}
J
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/path/f%d.png" --size 16x16 --path "$T/transforms.json" --backend cpu -q
[ -s "$T/path/f0.png" ] && [ -s "$T/path/f1.png" ] && ok || bad "path frames missing"
expect 0 "" -- $VOXRAY render "$T/phantom" -o "$T/p.png" --size 16x16 --azimuth 10 --elevation 5 --distance 5 --preset grey --backend cpu -q
# gradient shading and jitter: on/off change the image, a bad value is a usage error
expect 0 "" -- $VOXRAY render "$T/phantom" -o "$T/shade_on.png" --size 24x24 --backend cpu -q
expect 0 "" -- $VOXRAY render "$T/phantom" -o "$T/shade_off.png" --size 24x24 --backend cpu -q --shading off
cmp -s "$T/shade_on.png" "$T/shade_off.png" && bad "--shading off changed nothing" || ok
expect 0 "" -- $VOXRAY render "$T/phantom" -o "$T/jit.png" --size 24x24 --backend cpu -q --jitter 3
cmp -s "$T/shade_on.png" "$T/jit.png" && bad "--jitter 3 changed nothing" || ok
expect 0 "" -- $VOXRAY render "$T/phantom" -o "$T/jit2.png" --size 24x24 --backend cpu -q --jitter 3
cmp -s "$T/jit.png" "$T/jit2.png" && ok || bad "--jitter 3 is not deterministic"
expect 2 "--shading" -- $VOXRAY render "$T/phantom" -o "$T/x.png" --shading maybe
expect 2 "--jitter" -- $VOXRAY render "$T/phantom" -o "$T/x.png" --jitter -1
expect 1 "scalar volumes" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --size 8x8 --backend cpu --shading on
# --mlp-tensor-cores on a scene without the mlp decoder renders, and says the flag did nothing
expect 0 "has no mlp decoder" -- $VOXRAY render "$T/orbs" -o "$T/tc.png" --size 8x8 --backend cpu --mlp-tensor-cores
# --no-mlp-tensor-cores (the FP32 network) needs no GPU: on the CPU nothing is said and the picture is the same
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/fp.png" --size 8x8 --backend cpu --no-mlp-tensor-cores
[ ! -s "$T/err" ] && cmp -s "$T/tc.png" "$T/fp.png" && ok || bad "--no-mlp-tensor-cores on the CPU: stderr or picture changed"
expect 0 "" -- $VOXRAY render "$T/orbs/grid.npy" -o "$T/npy.png" --size 16x16 --backend cpu -q
$VOXRAY info "$T/orbs" >"$T/info" 2>&1 && grep -q "24 x 24 x 24" "$T/info" && grep -q "empty:" "$T/info" && ok || bad "info"
$VOXRAY --version | grep -q "^voxray " && ok || bad "--version"
for c in render info make-scene convert bench view fit eval; do
    $VOXRAY $c --help >/dev/null 2>&1 && ok || bad "$c --help"
done

# ---- sparse grids: make-scene --sparse, convert --sparse/--dense, info ------------------
# sparse storage renders exactly as the dense grid it came from (the drop rule keeps every
# brick a sample with density can reach), for every sample scene
for sc in orbs shell sh-glass cloud phantom; do
    $VOXRAY make-scene $sc -o "$T/d-$sc" --res 40 >/dev/null || bad "make-scene $sc"
    $VOXRAY make-scene $sc -o "$T/s-$sc" --res 40 --sparse >/dev/null || bad "make-scene $sc --sparse"
    expect 0 "" -- $VOXRAY convert "$T/d-$sc" "$T/c-$sc" --sparse
    [ -s "$T/s-$sc/grid.sparse.npz" ] && [ -s "$T/c-$sc/grid.sparse.npz" ] && ok || bad "$sc: no grid.sparse.npz"
    $VOXRAY render "$T/d-$sc" -o "$T/d-$sc.png" --size 40x40 --backend cpu -q
    for v in s c; do
        $VOXRAY render "$T/$v-$sc" -o "$T/$v-$sc.png" --size 40x40 --backend cpu -q
        cmp -s "$T/d-$sc.png" "$T/$v-$sc.png" && ok || bad "$sc: $v sparse render differs from dense"
    done
done
# make-scene --sparse and convert --sparse of the same scene write the same bricks
cmp -s "$T/s-shell/grid.sparse.npz" "$T/c-shell/grid.sparse.npz" && ok || bad "make-scene --sparse != convert --sparse"
expect 0 "" -- $VOXRAY convert "$T/s-orbs" "$T/back" --dense
expect 0 "" -- $VOXRAY convert "$T/back" "$T/again" --sparse --compress none
cmp -s "$T/s-orbs/grid.sparse.npz" "$T/again/grid.sparse.npz" && bad "stored and deflated files are the same" || ok
$VOXRAY info "$T/again" >"$T/info" 2>&1 && grep -q "^sparse: .* bricks of 8^3 (fill" "$T/info" && grep -q "MiB sparse" "$T/info" && ok || bad "info sparse"
$VOXRAY info "$T/d-orbs" >"$T/info" 2>&1 && grep -q "^as sparse:  convert --sparse keeps" "$T/info" && ok || bad "info as sparse"
$VOXRAY info "$T/s-orbs/grid.sparse.npz" >"$T/info" 2>&1 && grep -q "40 x 40 x 40" "$T/info" && ok || bad "info on a bare .npz"
expect 0 "" -- $VOXRAY convert "$T/d-orbs" "$T/half" --sparse --half --threshold 0.5
$VOXRAY info "$T/half" | grep -q "float16 in the file" && ok || bad "convert --half"
expect 0 "" -- $VOXRAY render "$T/s-orbs/grid.sparse.npz" -o "$T/bare.png" --size 16x16 --backend cpu -q
if python3 -c "import numpy" 2>/dev/null; then   # the docs/FORMAT.md snippet rebuilds the dense grid
    python3 - "$T/s-shell/grid.sparse.npz" "$T/d-shell/grid.npy" <<'PY' && ok || bad "numpy reads the sparse file"
import sys, numpy as np
z = np.load(sys.argv[1])
nz, ny, nx, nc = z["shape"]; B = int(z["brick"]); table = z["table"]
full = np.broadcast_to(z["background"], table.shape + (B, B, B, nc)).copy()
full[table >= 0] = z["pool"][table[table >= 0]]
dense = full.transpose(0, 3, 1, 4, 2, 5, 6).reshape(table.shape[0] * B, table.shape[1] * B, table.shape[2] * B, nc)[:nz, :ny, :nx]
d = np.load(sys.argv[2]); alive = d[..., 0] > 0
assert dense.shape == d.shape and np.array_equal(dense[alive], d[alive]) and (dense[..., 0] > 0).sum() == alive.sum()
PY
fi
# usage errors and bad files
expect 2 "--sparse or --dense" -- $VOXRAY convert "$T/d-orbs" "$T/x" --sparse --dense
expect 2 "need --sparse" -- $VOXRAY convert "$T/d-orbs" "$T/x" --threshold 1
expect 2 "--threshold" -- $VOXRAY convert "$T/d-orbs" "$T/x" --sparse --threshold -1
expect 2 "--compress" -- $VOXRAY convert "$T/d-orbs" "$T/x" --sparse --compress zstd
expect 2 "need --sparse" -- $VOXRAY make-scene orbs -o "$T/x" --threshold 1
expect 2 "--compress" -- $VOXRAY make-scene orbs -o "$T/x" --sparse --compress lz4
expect 2 "dense scenes stop at 1024" -- $VOXRAY make-scene orbs -o "$T/x" --res 2048
expect 2 "sparse cloud stops at 1024" -- $VOXRAY make-scene cloud -o "$T/x" --res 2048 --sparse
expect 2 "--res" -- $VOXRAY make-scene shell -o "$T/x" --res 8192 --sparse
[ -e "$T/x" ] && bad "usage error left $T/x" || ok
head -c 3000 "$T/s-orbs/grid.sparse.npz" >"$T/cut.npz"
expect 1 "cut.npz" -- $VOXRAY render "$T/cut.npz" -o "$T/y.png"
expect 1 "cut.npz" -- $VOXRAY convert "$T/cut.npz" "$T/y" --dense
[ -e "$T/y" ] && bad "a failed convert left $T/y" || ok

# ---- usage errors: exit 2 -------------------------------------------------------------
expect 2 "unknown command" -- $VOXRAY frobnicate
expect 2 "no SCENE" -- $VOXRAY render -o "$T/x.png"
expect 2 "no output" -- $VOXRAY render "$T/orbs"
expect 2 "--size" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --size 0x10
expect 2 "--size" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --size big
expect 2 "--eye" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --eye 1,2
expect 2 "--fov" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --fov 190
expect 2 "--step" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --step -1
expect 2 "--stop" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --stop nan
expect 2 "--background" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --background 1,1,2
expect 2 "--backend" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --backend metal
expect 2 "unknown option" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --bogus
expect 2 "frame-number" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --turntable 3
expect 2 "integer conversion" -- $VOXRAY render "$T/orbs" -o "$T/x%s.png" --turntable 3
expect 2 ".png" -- $VOXRAY render "$T/orbs" -o "$T/x.jpg"
expect 2 "--turntable" -- $VOXRAY render "$T/orbs" -o "$T/x%d.png" --turntable 0
expect 2 "--depth" -- $VOXRAY render "$T/orbs" -o "$T/x.png" --depth "$T/d.exr"
[ -e "$T/x.png" ] && bad "usage error left x.png" || ok

# ---- bad input: exit 1, one line naming the file ------------------------------------------
expect 1 "nothere" -- $VOXRAY render "$T/nothere.json" -o "$T/y.png"
printf '{"grid": "grid.npy", "decoder": {"type": "sh", "degree": 2}}' >"$T/orbs/wrong.json"
expect 1 "wrong.json" -- $VOXRAY render "$T/orbs/wrong.json" -o "$T/y.png"
printf 'not json' >"$T/orbs/broken.json"
expect 1 "not valid JSON" -- $VOXRAY render "$T/orbs/broken.json" -o "$T/y.png"
head -c 1000 "$T/orbs/grid.npy" >"$T/short.npy"
expect 1 "short.npy" -- $VOXRAY render "$T/short.npy" -o "$T/y.png"
expect 1 "short.npy" -- $VOXRAY info "$T/short.npy"
printf '{"camera_angle_x": 0.69, "frames": []}' >"$T/empty.json"
expect 1 "frames" -- $VOXRAY render "$T/orbs" -o "$T/y%d.png" --path "$T/empty.json"
expect 1 "--backend cuda" -- $VOXRAY render "$T/orbs" -o "$T/y.png" --backend cuda
# a missing dataset is named before any word on the backend (one line, whatever the build)
expect 1 "nodata/transforms_train.json" -- $VOXRAY fit "$T/nodata" -o "$T/yfit"
expect 1 "nodata/transforms_test.json" -- $VOXRAY eval "$T/orbs" "$T/nodata"
expect 2 "--write" -- $VOXRAY fit "$T/nodata" -o "$T/yfit" --write npz
expect 2 "--mlp-kernel fast" -- $VOXRAY fit "$T/nodata" -o "$T/yfit" --mlp-kernel fast
expect 2 "--mlp-gather" -- $VOXRAY fit "$T/nodata" -o "$T/yfit" --mlp-gather 3
expect 1 "coincide" -- $VOXRAY render "$T/orbs" -o "$T/y.png" --eye 0,0,0 --target 0,0,0
expect 1 "cannot" -- $VOXRAY render "$T/orbs" -o "$T/a.png/sub/y.png" --size 8x8 --backend cpu
ls "$T" | grep -q '^y' && bad "a failed run left output: $(ls "$T" | grep '^y')" || ok
ls "$T" "$T/orbs" | grep -q 'tmp\.' && bad "temporary files left behind" || ok

rm -rf "$T"
echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
