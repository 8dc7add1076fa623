#!/bin/sh
# fit_summary.sh - one row of docs/FIT.md's run table from a `voxray fit --time-curve` log:
# time curve, held-out mean, the three worst views, the last stage, the file written.
# Shared by tools/fit_compare.sh and tools/fit_mlp_device.sh.
# Usage: tools/fit_summary.sh --header | tools/fit_summary.sh LOG NAME ARGS WALL_SECONDS
set -u
if [ "${1:-}" = --header ]; then
    echo "| run | args | time curve (held-out dB at) | mean PSNR / SSIM | worst views (elevation, gap to the training cameras) | last stage: lattice, alive, rays/s, GPU memory | written | wall |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    exit 0
fi
[ $# -eq 4 ] || { echo "usage: tools/fit_summary.sh --header | LOG NAME ARGS WALL_SECONDS" >&2; exit 2; }
log=$1 name=$2 args=$3 wall=$4
# the summary curve line: "time-to-PSNR:  15 s 31.80 dB  30 s ..." (not the "of training" ones)
curve=$(grep '^time-to-PSNR:' "$log" | grep -v 'of training' | tail -n 1 |
    awk '{ for (i = 2; i + 3 <= NF; i += 4) printf "%s%s s %s", (i > 2 ? ", " : ""), $i, $(i + 2) }')
mean=$(awk '$1 == "mean" && NF == 3 { m = $2 " / " $3 } END { print m }' "$log")
worst=$(awk '/^fit: held-out views/ { on = 1; next }
             on && $1 == "mean" { exit }
             on && $1 ~ /\.png$/ && NF == 5 { n = split($1, p, "/"); sub(/\.png$/, "", p[n]); print $2, p[n], $4, $5 }' "$log" |
    sort -n | head -n 3 | awk '{ printf "%s%s %.1f (%s, %s)", (NR > 1 ? ", " : ""), $2, $1, $3, $4 }')
stage=$(grep '^fit: *stage [0-9]' "$log" | tail -n 1 |
    awk '{ printf "%s, %s, %.2f M%s", $4, $5, $7 / 1e6, ($NF == "GiB" ? ", " $(NF - 1) " GiB" : "") }')
wrote=$(sed -n 's/.* x [0-9]*, \([0-9.]* [KMG]*B\))$/\1/p' "$log" | tail -n 1)
echo "| $name | $args | ${curve:--} | ${mean:--} | ${worst:--} | ${stage:--} | ${wrote:--} | ${wall} s |"
