#!/bin/sh
# test_mpi.sh - `mpirun -np 1..4 voxray render` on the CPU backend against the single-process
# run: sort-last single frames (dense .npy, sparse .npz stored and deflated, a shaded scalar
# volume; cameras outside and inside the volume, jitter, depth, opacity, transparency) within
# 1/255, and frame-parallel --turntable / --path frames byte for byte; then failures: a bad
# file or camera on one rank, a killed rank and a hanging rank end the job with a clear line,
# never a hang. Needs an MPI build: $VOXRAY_MPI, else build-mpi/voxray, else $VOXRAY when it
# links libmpi (.ci/run builds build-mpi); otherwise one "skipped:" line.
# Run by tests/run_tests.sh; prints "mpi: N passed, N failed".
VOXRAY=${VOXRAY:-build/voxray}
T=$(mktemp -d /tmp/voxray-mpi-XXXXXX)
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
    rm -rf "$T"
    echo "mpi: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}
is_mpi() { [ -x "$1" ] && ldd "$1" 2>/dev/null | grep -q libmpi; }
V=""
if [ -n "${BUILD:-}" ] && [ "$BUILD" != build ]; then # sanitizer builds: the MPI runs belong to the default one
    echo "skipped: MPI tests run with the default build, not BUILD=$BUILD"
    finish
fi
for cand in "${VOXRAY_MPI:-}" build-mpi/voxray "$VOXRAY"; do
    if [ -n "$cand" ] && is_mpi "$cand"; then V=$cand; break; fi
done
if [ -z "$V" ] || ! command -v mpirun >/dev/null 2>&1; then
    echo "skipped: MPI tests need an MPI build and mpirun (make MPI=1 BUILD=build-mpi build-mpi/voxray, with libopenmpi-dev and openmpi-bin from tools/install-deps.sh)"
    finish
fi
# CI runs as root; Open MPI refuses that unless told. Two cores here: oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN="timeout 120 mpirun --oversubscribe -np"
if ! cc -O2 -o "$T/pc" tests/png_compare.c -lm; then bad "building tests/png_compare.c"; finish; fi
echo "using $V"

# scenes: a dense rgba grid, the same sparse (stored and deflated), a scalar phantom
$V make-scene orbs -o "$T/orbs" --res 40 >/dev/null 2>&1 || { bad "make-scene orbs"; finish; }
$V convert "$T/orbs" "$T/sp" --sparse --compress none >/dev/null 2>&1 || bad "convert --sparse --compress none"
$V convert "$T/orbs" "$T/spz" --sparse >/dev/null 2>&1 || bad "convert --sparse"
$V make-scene phantom -o "$T/ph" --res 36 >/dev/null 2>&1 || bad "make-scene phantom"

# sort-last: N ranks against one process, colour, depth and opacity within 1/255
same() { # label, scene, ranks, render flags...
    label=$1 scene=$2 n=$3
    shift 3
    $V render "$scene" -o "$T/ref.png" --depth "$T/ref_d.png" --opacity "$T/ref_o.png" --size 40x32 --backend cpu -q "$@" \
        >"$T/log" 2>&1 || { bad "$label: single-process render: $(cat "$T/log")"; return; }
    $MPIRUN "$n" $V render "$scene" -o "$T/s.png" --depth "$T/s_d.png" --opacity "$T/s_o.png" --size 40x32 \
        --backend cpu -q "$@" >"$T/log" 2>&1 || { bad "$label: mpirun -np $n: $(tail -n 3 "$T/log")"; return; }
    for m in "" _d _o; do
        "$T/pc" "$T/ref$m.png" "$T/s$m.png" >"$T/cmp" 2>&1 || { bad "$label -np $n ($m): $(cat "$T/cmp")"; return; }
    done
    ok
}
for n in 1 2 3 4; do
    same "dense" "$T/orbs" $n
    same "dense inside" "$T/orbs" $n --eye 0.1,-0.2,0.15 --target 0.9,0.4,-0.3 --fov 100
    same "sparse stored" "$T/sp" $n --jitter 3
    same "sparse deflated inside" "$T/spz" $n --eye -0.3,0.2,0.1 --target 0.5,0.1,0.9 --fov 90
done
same "scalar shaded" "$T/ph" 3
same "transparent" "$T/orbs" 2 --transparent --azimuth 200 --elevation -30
$MPIRUN 3 $V render "$T/orbs" -o "$T/w.png" --size 16x16 --backend cpu >"$T/log" 2>&1 &&
    grep -q "sort-last over 3 ranks" "$T/log" && [ "$(grep -c '^wrote' "$T/log")" = 1 ] && ok ||
    bad "one 'wrote' line naming the sort-last ranks: $(cat "$T/log")"

# frame-parallel: frames dealt across ranks are the single-process files, byte for byte
cat >"$T/path.json" <<'EOF'
{"camera_angle_x": 0.69, "frames": [
 {"file_path": "a", "transform_matrix": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]},
 {"file_path": "b", "transform_matrix": [[0,0,1,4],[0,1,0,0],[-1,0,0,0],[0,0,0,1]]},
 {"file_path": "c", "transform_matrix": [[1,0,0,0],[0,0,1,4],[0,-1,0,0],[0,0,0,1]]}]}
EOF
$V render "$T/orbs" -o "$T/t1/%02d.png" --opacity "$T/t1/o%02d.npy" --turntable 5 --size 24x20 --backend cpu -q ||
    bad "single-process turntable"
$V render "$T/orbs" -o "$T/p1/%02d.png" --depth "$T/p1/d%02d.npy" --path "$T/path.json" --size 24x20 --backend cpu -q ||
    bad "single-process path"
for n in 2 3; do
    rm -rf "$T/t2" "$T/p2"
    $MPIRUN $n $V render "$T/orbs" -o "$T/t2/%02d.png" --opacity "$T/t2/o%02d.npy" --turntable 5 --size 24x20 --backend cpu \
        >"$T/log" 2>&1 || bad "turntable -np $n: $(tail -n 3 "$T/log")"
    [ "$(grep -c '^frame ' "$T/log")" = 5 ] && grep -q "^wrote 5 frames" "$T/log" && ok ||
        bad "turntable -np $n: rank 0 reports every frame once: $(cat "$T/log")"
    $MPIRUN $n $V render "$T/orbs" -o "$T/p2/%02d.png" --depth "$T/p2/d%02d.npy" --path "$T/path.json" --size 24x20 \
        --backend cpu -q >"$T/log" 2>&1 || bad "path -np $n: $(tail -n 3 "$T/log")"
    diff -r "$T/t1" "$T/t2" >/dev/null && ok || bad "turntable -np $n differs from the single-process frames"
    diff -r "$T/p1" "$T/p2" >/dev/null && ok || bad "path -np $n differs from the single-process frames"
done

# failures end the job with one clear line and never hang
fails() { # label, expected stderr text, command...
    label=$1 want=$2
    shift 2
    "$@" >"$T/log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then bad "$label: exit 0"
    elif [ $rc -eq 124 ]; then bad "$label: hung (timeout)"
    elif ! grep -qF "$want" "$T/log"; then bad "$label: no '$want' in: $(head -n 5 "$T/log")"
    else ok; fi
}
# a NaN in the last voxel: only the rank owning that corner reads it
cp -r "$T/orbs" "$T/nan"
off=$(( 128 + 4 * ((40 * 40 * 40 - 1) * 4) ))
head -c 10 "$T/nan/grid.npy" | od -A n -t u1 | awk '{exit !($9 == 118 && $10 == 0)}' || bad "orbs .npy header is not 118 bytes"
printf '\000\000\300\177' | dd of="$T/nan/grid.npy" bs=1 seek=$off conv=notrunc 2>/dev/null
fails "bad file on one rank" "rank 1/2: $T/nan/grid.npy: grid value at voxel (39, 39, 39)" \
    $MPIRUN 2 $V render "$T/nan" -o "$T/x.png" --size 16x16 --backend cpu
# a bad camera on frame 1: only rank 1 renders it
sed 's/\[\[0,0,1,4\],\[0,1,0,0\],\[-1,0,0,0\]/[[0,0,0,0],[0,0,0,0],[0,0,0,4]/' "$T/path.json" >"$T/badpath.json"
fails "bad camera on one rank" "rank 1/2: $T/badpath.json: frame 1:" \
    $MPIRUN 2 $V render "$T/orbs" -o "$T/bp/%02d.png" --path "$T/badpath.json" --size 16x16 --backend cpu
fails "killed rank (sort-last)" "signal 9" \
    env VOXRAY_MPI_FAULT=1:kill $MPIRUN 3 $V render "$T/orbs" -o "$T/x.png" --size 16x16 --backend cpu
fails "hanging rank (sort-last)" "no answer from the other ranks within 2 s" \
    env VOXRAY_MPI_FAULT=2:stall VOXRAY_MPI_TIMEOUT=2 $MPIRUN 3 $V render "$T/orbs" -o "$T/x.png" --size 16x16 --backend cpu
fails "hanging rank (frames)" "no other rank finished a frame within 2 s" \
    env VOXRAY_MPI_FAULT=1:stall VOXRAY_MPI_TIMEOUT=2 $MPIRUN 2 $V render "$T/orbs" -o "$T/y/%02d.png" --turntable 4 \
    --size 16x16 --backend cpu
[ ! -e "$T/x.png" ] && ok || bad "a failed sort-last job left $T/x.png"
# a build without MPI refuses to run as several processes
if [ -x "$VOXRAY" ] && ! is_mpi "$VOXRAY"; then
    fails "no-MPI build under mpirun" "built without MPI" $MPIRUN 2 "$VOXRAY" render "$T/orbs" -o "$T/z.png" --size 8x8
fi
finish
