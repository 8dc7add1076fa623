#!/bin/sh
# test_fit_compare.sh - tools/fit_compare.sh on two short CPU fits of mic and one variant that
# fails: each row reports what its own log says (mean, worst view, last stage, file size),
# the failed one names why, the other runs still happen, and the exit status says one failed.
# Run by tests/run_tests.sh (VOXRAY set); prints "fit-compare: N passed, N failed".
VOXRAY=${VOXRAY:-build/voxray}
export VOXRAY
MIC=${VX_MIC:-../shared/data/nerf_synthetic_mic}
T=$(mktemp -d /tmp/voxray-fitcmp-XXXXXX)
. tests/cli_expect.sh
finish() {
    rm -rf "$T"
    echo "fit-compare: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# usage errors: one line, exit 2, before any fit
expect 2 "'novalue' is not NAME=ARGS" -- sh tools/fit_compare.sh "$MIC" "$T/u" novalue
expect 2 "variant name 'a b' must be" -- sh tools/fit_compare.sh "$MIC" "$T/u" "a b="
expect 2 "usage:" -- sh tools/fit_compare.sh "$MIC" "$T/u"
expect 2 "variant name 'a' given twice" -- sh tools/fit_compare.sh "$MIC" "$T/u" a= b= a="--seed 2"
[ ! -e "$T/u/summary.md" ] && ok || bad "a usage error must not start the runs"

if [ ! -f "$MIC/transforms_train.json" ]; then
    echo "skipped: fit_compare.sh runs: $MIC/transforms_train.json not found (../shared/data absent; set VX_MIC)"
    finish
fi
export FIT_ARGS="--backend cpu --downscale 8 --res 24,40 --iters 60 --batch 2048 --val-every 0 --seed 3"
sh tools/fit_compare.sh "$MIC" "$T/o" plain= broken="--res 1,x" tv="--tv-sigma 1e-7 --tv-until 0.5" >"$T/out" 2>&1
[ $? -eq 1 ] && ok || bad "one failed variant must make the exit status 1"
cmp -s "$T/out" "$T/o/summary.md" && ok || bad "the printed table is not summary.md"
[ "$(grep -c '^| ' "$T/o/summary.md")" -eq 5 ] && ok || bad "want a header, a rule and 3 rows: $(cat "$T/o/summary.md")"
grep -q '^| broken | --res 1,x | failed (exit 2): .*--res' "$T/o/summary.md" && ok || bad "the failed row must name the error"

for v in plain tv; do
    log=$T/o/$v.log
    row=$(grep "^| $v |" "$T/o/summary.md")
    [ -f "$T/o/$v/scene.json" ] && ok || bad "$v: no scene written (the failed variant before it stopped the runs?)"
    mean=$(awk '$1 == "mean" { print $2 " / " $3 }' "$log")
    [ -n "$mean" ] && echo "$row" | grep -qF "| $mean |" && ok || bad "$v: row '$row' lacks the log's mean '$mean'"
    worst=$(awk '$1 ~ /\.png$/ && NF == 5 { print $2, $1, $4, $5 }' "$log" | sort -n | head -n 1 |
        awk '{ n = split($2, p, "/"); sub(/\.png$/, "", p[n]); printf "%s %.1f (%s, %s)", p[n], $1, $3, $4 }')
    [ -n "$worst" ] && echo "$row" | grep -qF "| $worst, " && ok || bad "$v: row '$row' does not start its worst views with '$worst'"
    # the report's own line below the mean: the same worst view; the lowest elevation of the table
    wv=$(awk '$1 ~ /\.png$/ && NF == 5 { print $2, $1 }' "$log" | sort -n | head -n 1 | cut -d' ' -f2)
    low=$(awk '$1 ~ /\.png$/ && NF == 5 { print $4, $1 }' "$log" | sort -n | head -n 1)
    grep -q "^  worst view $wv (.*lowest camera ${low#* } (.*elev ${low%% *})\$" "$log" && ok ||
        bad "$v: the report's worst/lowest line does not name $wv and '$low': $(grep 'worst view' "$log")"
    # and the view farthest from the 87 training cameras (the largest gap of the table; the
    # held-out views sit between training views, so the gaps are not all zero)
    fg=$(awk '$1 ~ /\.png$/ && NF == 5 { print $5 }' "$log" | sort -rn | head -n 1)
    fv=$(sed -n 's/^  farthest from the 87 training cameras: \([^ ]*\) ([0-9.]* dB, \([0-9.]*\) deg to the nearest)$/\1 \2/p' "$log")
    [ -n "$fg" ] && [ "$fg" != "0.0" ] && [ "${fv#* }" = "$fg" ] &&
        awk -v f="${fv%% *}" -v g="$fg" '$1 == f && $5 == g { hit = 1 } END { exit !hit }' "$log" &&
        ok || bad "$v: the report's farthest line '$fv' is not a view with the largest gap $fg: $(grep 'farthest' "$log")"
    last=$(grep '^fit: *stage 2 ' "$log" | awk '{ print $4 ", " $5 }')
    [ -n "$last" ] && echo "$row" | grep -qF "| $last, " && ok || bad "$v: row '$row' lacks the last stage '$last'"
    echo "$row" | grep -qE '\| [0-9.]+ [KMG]?B \| [0-9]+ s \|$' && ok || bad "$v: row '$row' lacks the file size and wall time"
done
# the two runs differ (TV changes the model), so the rows are not one parse repeated
[ "$(grep '^| plain |' "$T/o/summary.md" | cut -d'|' -f5)" != "$(grep '^| tv |' "$T/o/summary.md" | cut -d'|' -f5)" ] &&
    ok || bad "plain and tv report the same mean"
finish
