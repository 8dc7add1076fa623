#!/bin/sh
# fit_mic.sh - the recorded `voxray fit` run on the NeRF-synthetic mic views (docs/FIT.md,
# docs/BENCHMARKS.md): 128^3 -> 256^3 -> 512^3 (cropped), 5 minutes of training on CUDA,
# time-to-PSNR curve, held-out report. Usage: tools/fit_mic.sh DATASET OUTDIR [extra fit args]
set -eu
data=${1:?usage: tools/fit_mic.sh DATASET OUTDIR [args]}
out=${2:?usage: tools/fit_mic.sh DATASET OUTDIR [args]}
shift 2
VOXRAY=${VOXRAY:-build/voxray}
exec "$VOXRAY" fit "$data" -o "$out" --backend cuda --res 128,256,512 --stage-ends 0.1,0.3 \
    --batch 65536 --iters 10000000 --max-seconds 300 --time-curve --val-every 0 "$@"
