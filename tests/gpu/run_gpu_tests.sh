#!/bin/sh
# run_gpu_tests.sh - `make test-gpu` on a machine with a CUDA device: makes small
# sample scenes, runs every GPU test binary given (CUDA against the CPU reference),
# then compute-sanitizer memcheck and racecheck on small renders (dense, float16, sparse)
# and on the kernel, fit and HDDA tests when compute-sanitizer is found (the fit test with fewer trials:
# VX_FIT_GPU_QUICK). Environment: VOXRAY, BUILD; RES (scene size).
VOXRAY=${VOXRAY:-${BUILD:-build}/voxray}
RES=${RES:-64}
failed=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
scenes=""
for s in orbs shell sh-glass cloud phantom; do
    if "$VOXRAY" make-scene "$s" -o "$dir/$s" --res "$RES" >/dev/null; then
        scenes="$scenes $dir/$s"
    else
        echo "run_gpu_tests: make-scene $s failed"; failed=$((failed + 1))
    fi
done
"$VOXRAY" convert "$dir/sh-glass" "$dir/sh-glass.sp" --sparse --compress none >/dev/null ||
    { echo "run_gpu_tests: convert --sparse failed"; failed=$((failed + 1)); }
export VX_TEST_SCENES="$scenes"
for t in "$@"; do
    echo "== $t"
    "$t" || { echo "FAILED: $t"; failed=$((failed + 1)); }
done
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$san" ]; then
    for tool in memcheck racecheck; do
        echo "== compute-sanitizer --tool $tool: small render"
        "$san" --tool "$tool" --error-exitcode 9 "$VOXRAY" render "$dir/orbs" --backend cuda \
            --size 64x48 -o "$dir/san.png" -q || { echo "FAILED: $tool render"; failed=$((failed + 1)); }
        "$san" --tool "$tool" --error-exitcode 9 "$VOXRAY" render "$dir/sh-glass" --backend cuda --half \
            --size 64x48 -o "$dir/san.png" -q || { echo "FAILED: $tool render --half"; failed=$((failed + 1)); }
        # sparse storage: the apron upload and the brick-table fetch, float32 and float16
        for h in "" --half; do
            "$san" --tool "$tool" --error-exitcode 9 "$VOXRAY" render "$dir/sh-glass.sp" --backend cuda $h \
                --size 64x48 -o "$dir/san.png" -q || { echo "FAILED: $tool sparse render $h"; failed=$((failed + 1)); }
        done
        for t in "$@"; do
            case "$t" in *kernels*|*fit*|*hdda*)
                echo "== compute-sanitizer --tool $tool: $t"
                VX_FIT_GPU_QUICK=1 "$san" --tool "$tool" --error-exitcode 9 "$t" >"$dir/san.log" 2>&1 ||
                    { cat "$dir/san.log"; echo "FAILED: $tool $t"; failed=$((failed + 1)); }
                tail -n 3 "$dir/san.log";;
            esac
        done
    done
else
    echo "run_gpu_tests: compute-sanitizer not found: memcheck/racecheck skipped"
fi
echo "test-gpu: $failed failed"
[ "$failed" -eq 0 ]
