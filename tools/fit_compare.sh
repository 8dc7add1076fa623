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
sh "$(dirname "$0")/fit_summary.sh" --header >"$sum" || exit 1
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
    sh "$(dirname "$0")/fit_summary.sh" "$log" "$name" "$args" "$wall" >>"$sum"
done
cat "$sum"
[ "$failed" -eq 0 ]
