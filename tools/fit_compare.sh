#!/bin/sh
# fit_compare.sh - several `voxray fit` variants on one dataset, one after the other, and one
# summary table of what docs/FIT.md records per run: time curve, held-out mean, worst views,
# the last stage, the file written, wall time. Each run's whole log stays in OUTDIR/NAME.log.
# Usage: tools/fit_compare.sh DATASET OUTDIR NAME=ARGS...   (ARGS split on spaces; may be empty)
#   e.g. FIT_ARGS="--max-seconds 60 --val-split test" tools/fit_compare.sh .lego out def= \
#        tv="--tv-sigma 0 --tv-sh 0" sh3="--sh-degree 3"
# FIT_ARGS: options every variant gets (before its own); VOXRAY: the binary (build/voxray).
# Prints the table (also OUTDIR/summary.md); exits 1 if any variant failed, after the rest ran.
set -u
usage() { echo "usage: tools/fit_compare.sh DATASET OUTDIR NAME=ARGS..." >&2; exit 2; }
[ $# -ge 3 ] || usage
data=$1 out=$2
shift 2
VOXRAY=${VOXRAY:-build/voxray}
seen=""
for v in "$@"; do
    case "$v" in
    *=*) name=${v%%=*} ;;
    *) echo "fit_compare.sh: '$v' is not NAME=ARGS (ARGS may be empty: '$v=')" >&2; exit 2 ;;
    esac
    case "$name" in
    "" | *[!A-Za-z0-9_.-]*) echo "fit_compare.sh: variant name '$name' must be letters, digits, '.', '_' or '-'" >&2; exit 2 ;;
    esac
    case " $seen " in
    *" $name "*) echo "fit_compare.sh: variant name '$name' given twice (each names OUTDIR/NAME)" >&2; exit 2 ;;
    esac
    seen="$seen $name"
done
mkdir -p "$out" || exit 1
sum=$out/summary.md
{
    echo "| run | args | time curve (held-out dB at) | mean PSNR / SSIM | worst views (elevation, gap to the training cameras) | last stage: lattice, alive, rays/s, GPU memory | written | wall |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} >"$sum"
failed=0
for v in "$@"; do
    name=${v%%=*} args=${v#*=}
    log=$out/$name.log
    rm -rf "${out:?}/$name"
    t0=$(date +%s)
    # shellcheck disable=SC2086 # FIT_ARGS and ARGS are word lists by design
    "$VOXRAY" fit "$data" -o "$out/$name" --time-curve ${FIT_ARGS:-} $args >"$log" 2>&1
    rc=$?
    wall=$(($(date +%s) - t0))
    if [ $rc -ne 0 ]; then
        failed=$((failed + 1))
        why=$(grep -v '^iter ' "$log" | tail -n 1 | tr '|' '/')
        echo "| $name | $args | failed (exit $rc): $why | | | | | ${wall} s |" >>"$sum"
        continue
    fi
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
    echo "| $name | $args | ${curve:--} | ${mean:--} | ${worst:--} | ${stage:--} | ${wrote:--} | ${wall} s |" >>"$sum"
done
cat "$sum"
[ "$failed" -eq 0 ]
