#!/bin/sh
# fit_pair.sh - two fits' held-out PSNR compared view by view: the mean of the differences,
# their spread and standard error, how many views gained, and the largest gains and losses,
# so that a variant is read against its baseline on the views both scored (docs/FIT.md).
# Usage: tools/fit_pair.sh BASE.LOG OTHER.LOG...   (one row per OTHER, each against BASE)
# A log is a `voxray fit` log with its held-out table, or `voxray eval` reports (cat them:
# lego's 200 test views are scored in two halves on the device), as for tools/fit_bins.sh.
# Runs of one recipe differ by 0.07-0.09 dB in the 200-view mean (FIT.md, session 26): the
# standard error says how well the views pin a difference down, not how well one run does.
[ $# -ge 2 ] || { echo "usage: tools/fit_pair.sh BASE.LOG OTHER.LOG..." >&2; exit 2; }
base=$1
shift
for f in "$base" "$@"; do
    [ -r "$f" ] || { echo "fit_pair.sh: $f: cannot read it" >&2; exit 1; }
done
printf '| %-24s | %-24s | %5s | %9s | %5s | %5s | %-14s | %-32s | %-32s |\n' base other views "mean diff" sd sem "better / worse" "largest gains" "largest losses"
for other in "$@"; do
    awk -v bname="$base" -v oname="$other" '
        FNR == 1 { on = 0 }
        /^fit: held-out views/ || /^eval: / { on = 1; next }
        on && $1 == "mean" { on = 0; next }
        on && $1 ~ /\.png$/ && NF >= 5 {
            v = $1; sub(/.*\//, "", v); sub(/\.png$/, "", v)
            if ($2 !~ /^-?[0-9.]+$/) { printf "fit_pair.sh: %s: view %s has no finite PSNR (%s)\n", FILENAME, v, $2 > "/dev/stderr"; bad = 1; exit 1 }
            if (f == 1) { if (v in a) { dup = v; dupf = FILENAME; bad = 1; exit 1 } a[v] = $2; na++ }
            else { if (v in b) { dup = v; dupf = FILENAME; bad = 1; exit 1 } b[v] = $2; nb++ }
        }
        END {
            if (bad) { if (dup != "") printf "fit_pair.sh: %s: view %s appears twice\n", dupf, dup > "/dev/stderr"; exit 1 }
            if (!na) { printf "fit_pair.sh: %s has no held-out table\n", bname > "/dev/stderr"; exit 1 }
            if (!nb) { printf "fit_pair.sh: %s has no held-out table\n", oname > "/dev/stderr"; exit 1 }
            n = 0
            for (v in b) if (v in a) { d[++n] = b[v] - a[v]; name[n] = v; s += d[n] }
            if (!n) { printf "fit_pair.sh: %s and %s share no view\n", bname, oname > "/dev/stderr"; exit 1 }
            m = s / n
            for (i = 1; i <= n; i++) { q += (d[i] - m) ^ 2; up += d[i] > 0; down += d[i] < 0 }
            sd = n > 1 ? sqrt(q / (n - 1)) : 0
            # the three largest gains and losses: selection over the n differences
            for (k = 0; k < 2; k++) {
                out = ""
                sg = k == 0 ? 1 : -1
                for (j = 1; j <= 3; j++) {
                    best = 0
                    for (i = 1; i <= n; i++)
                        if (!((k, i) in used) && sg * d[i] > 0 && (!best || sg * d[i] > sg * d[best])) best = i
                    if (!best) break
                    used[k, best] = 1
                    out = out (out == "" ? "" : ", ") sprintf("%s %+.2f", name[best], d[best])
                }
                top[k] = out == "" ? "-" : out
            }
            printf "| %-24s | %-24s | %5d | %+9.3f | %5.3f | %5.3f | %5d / %-6d | %-32s | %-32s |\n",
                   bname, oname, n, m, sd, (n > 1 ? sd / sqrt(n) : 0), up, down, top[0], top[1]
        }' f=1 "$base" f=2 "$other" || exit 1
done
