#!/bin/sh
# bench_cpu.sh - CPU ms/frame of every sample scene at 256x256 with 1 and 2 threads
# (median of 5 renders, default camera, step 0.5), as a markdown table for
# docs/BENCHMARKS.md. Usage: sh tools/bench_cpu.sh [RES]   (grid resolution, default 128)
set -e
VOXRAY=${VOXRAY:-build/voxray}
RES=${1:-128}
D=$(mktemp -d /tmp/voxray-bench-XXXXXX)
echo "| scene (${RES}^3) | 1 thread ms/frame | 2 threads ms/frame | samples/ray |"
echo "| --- | --- | --- | --- |"
for s in orbs shell sh-glass cloud phantom; do
    $VOXRAY make-scene $s -o "$D/$s" --res "$RES" >/dev/null
    row="| $s"
    for t in 1 2; do
        ms=$(for i in 1 2 3 4 5; do
            $VOXRAY render "$D/$s" -o "$D/o.png" --size 256x256 --backend cpu --threads $t 2>/dev/null |
                sed -n 's/.*backend, \([0-9.]*\) ms, \([0-9.]*\) samples.*/\1 \2/p'
        done | sort -n | sed -n 3p)
        row="$row | ${ms%% *}"
        spr=${ms##* }
    done
    echo "$row | $spr |"
done
rm -rf "$D"
