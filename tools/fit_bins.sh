#!/bin/sh
# fit_bins.sh - held-out PSNR of `voxray fit` logs binned by each view's gap (the angle to
# the nearest training camera, the report's last column): under 4 degrees, 4 to 8, 8 and
# more, as docs/FIT.md compares models far from and near the training cameras.
# Usage: tools/fit_bins.sh FIT.LOG...   (one row a log; r_8 and r_80 are lego's telling views,
# "arc" the mean of r_2-r_13 present, lego's glare views at 47 degrees: FIT.md sessions 24-25)
# A log may also hold `voxray eval` reports, one or more (cat them: lego's 200 test views are
# scored in two halves on the device), whose views all count in its row.
[ $# -ge 1 ] || { echo "usage: tools/fit_bins.sh FIT.LOG..." >&2; exit 2; }
printf '| %-28s | %6s | %-11s | %-11s | %-11s | %6s | %6s | %-11s |\n' log mean "under 4 deg" "4 to 8" "8 and more" r_8 r_80 "arc r_2-13"
for log in "$@"; do
    awk -v name="$log" '
        /^fit: held-out views/ || /^eval: / { on = 1; next }
        on && $1 ~ /\.png$/ && NF >= 5 {
            psnr = $2; gap = $NF; b = gap < 4 ? 0 : gap < 8 ? 1 : 2
            s[b] += psnr; n[b]++; all += psnr; na++
            v = $1; sub(/.*\//, "", v); sub(/\.png$/, "", v); if (v == "r_8" || v == "r_80") p[v] = psnr
            if (v ~ /^r_([2-9]|1[0-3])$/) { arc += psnr; narc++ }
        }
        on && $1 == "mean" { on = 0 }
        END {
            if (!na) { printf "fit_bins.sh: %s has no held-out table\n", name > "/dev/stderr"; exit 1 }
            printf "| %-28s | %6.2f |", name, all / na
            for (b = 0; b < 3; b++) printf " %6.2f (%2d) |", n[b] ? s[b] / n[b] : 0, n[b]
            printf " %6s | %6s |", ("r_8" in p) ? p["r_8"] : "-", ("r_80" in p) ? p["r_80"] : "-"
            if (narc) printf " %6.2f (%2d) |\n", arc / narc, narc; else printf " %-11s |\n", "-"
        }' "$log" || exit 1
done
