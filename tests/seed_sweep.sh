#!/bin/sh
# seed_sweep.sh - runs each randomized test binary ROUNDS times with fresh VX_SEED values
# (JOBS at a time) and keeps the log of every failing seed, so a tolerance that one draw in
# a hundred breaks is found here rather than by CI. `make seeds [ROUNDS=n] [JOBS=n]` calls
# it with the binaries `make test` runs; VX_SEED=<seed> <binary> replays a failure.
# Exit status: 0 when every round passed.
set -u
ROUNDS=${ROUNDS:-20}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
OUTDIR=${SWEEP_DIR:-build/seeds}
mkdir -p "$OUTDIR"
rm -f "$OUTDIR"/FAIL-* "$OUTDIR/list"
# only binaries that draw from a seed (they print it): the others would repeat one run
for t in "$@"; do
    [ -x "$t" ] || continue
    if grep -q "VX_SEED" "$t" 2>/dev/null; then
        i=0
        while [ $i -lt "$ROUNDS" ]; do
            # 48 bits of fresh seed a round (od reads /dev/urandom; no bash $RANDOM in sh)
            echo "$t $(od -An -N6 -tu8 /dev/urandom | tr -d ' ')" >> "$OUTDIR/list"
            i=$((i + 1))
        done
    fi
done
[ -f "$OUTDIR/list" ] || { echo "seeds: no randomized test binary given"; exit 1; }
total=$(wc -l < "$OUTDIR/list")
echo "seeds: $total runs ($ROUNDS a binary), $JOBS at a time"
# one run: a failing one leaves FAIL-<binary>-<seed>.log
xargs -P "$JOBS" -L 1 sh -c '
    log="$0.$$.log"
    if VX_SEED="$2" timeout 900 "$1" > "$log" 2>&1; then rm -f "$log"
    else mv "$log" "$0/FAIL-$(basename "$1")-$2.log"; echo "seeds: FAILED $1 (VX_SEED=$2)"; fi
' "$OUTDIR" < "$OUTDIR/list"
failed=$(ls "$OUTDIR" | grep -c '^FAIL-')
echo "seeds: $((total - failed)) passed, $failed failed (logs in $OUTDIR)"
[ "$failed" -eq 0 ]
