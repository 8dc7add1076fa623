#!/bin/sh
# bench_mpi.sh - strong scaling of `mpirun -np N voxray render` on this machine (CPU
# backend, one OpenMP thread per rank): sort-last single frames of a dense .npy (orbs) and
# a sparse .npz (shell, deflated as make-scene writes it, and stored) - render + composite
# time from rank 0's "wrote" line, wall time of the job, CPU seconds summed over the ranks
# and peak RSS of every rank from /usr/bin/time - and frame-parallel turntables.
# The numbers in docs/BENCHMARKS.md ("MPI") come from it.
# Usage: tools/bench_mpi.sh [VOXRAY_MPI] [DENSE_RES] [SPARSE_RES] [MAXRANKS]
V=${1:-build-mpi/voxray}
RES=${2:-256}
SRES=${3:-768}
MAXN=${4:-4}
T=$(mktemp -d /tmp/voxray-bench-mpi-XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
set -e
echo "machine: $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "voxray: $V ($(git rev-parse --short HEAD 2>/dev/null))"
$V make-scene orbs -o "$T/dense" --res "$RES" >/dev/null
$V make-scene shell -o "$T/sparse" --sparse --res "$SRES" >/dev/null
$V convert "$T/sparse" "$T/stored" --sparse --compress none >/dev/null
for s in dense sparse; do $V info "$T/$s" | grep -E '^(grid|memory|sparse|file):'; done
now() { date +%s.%N; }
row() { # ranks, t0, t1: one table row from $T/log
    printf "%-6s %-20s %-11.2f %-11.1f %s\n" "$1" "$(sed -n 's/.*backend, \([0-9.]*\) ms.*/\1/p' "$T/log")" \
        "$(echo "$3 - $2" | bc)" "$(awk '/^rss/ {c += $4 + $5} END {print c}' "$T/log")" \
        "$(awk '/^rss/ {printf "%.0f ", $2 / 1024}' "$T/log")"
}
for scene in dense sparse stored; do
    echo "== sort-last, $scene, 512x512, --threads 1 per rank"
    echo "ranks  render+composite ms  job wall s  CPU s (sum)  peak RSS per rank (MiB)"
    t0=$(now)
    /usr/bin/time -f "rss %M cpu %U %S" $V render "$T/$scene" -o "$T/one.png" --size 512x512 --backend cpu --threads 1 >"$T/log" 2>&1
    t1=$(now)
    row none "$t0" "$t1"
    n=1
    while [ $n -le "$MAXN" ]; do
        t0=$(now)
        mpirun --oversubscribe -np $n /usr/bin/time -f "rss %M cpu %U %S" $V render "$T/$scene" -o "$T/s.png" --size 512x512 \
            --backend cpu --threads 1 >"$T/log" 2>&1
        t1=$(now)
        row "$n" "$t0" "$t1"
        n=$((n + 1))
    done
done
echo "== frame-parallel turntable, orbs $RES dense, 24 frames of 256x256, --threads 1 per rank"
echo "ranks  job wall s  ms/frame (rank 0's line)"
t0=$(now)
$V render "$T/dense" -o "$T/t/%02d.png" --turntable 24 --size 256x256 --backend cpu --threads 1 >"$T/log" 2>&1
t1=$(now)
printf "%-6s %-11s %s\n" none "$(echo "$t1 - $t0" | bc)" "$(sed -n 's/.*backend, \([0-9.]*\) ms\/frame.*/\1/p' "$T/log")"
n=1
while [ $n -le "$MAXN" ]; do
    t0=$(now)
    mpirun --oversubscribe -np $n $V render "$T/dense" -o "$T/u/%02d.png" --turntable 24 --size 256x256 --backend cpu \
        --threads 1 >"$T/log" 2>&1
    t1=$(now)
    printf "%-6s %-11s %s\n" "$n" "$(echo "$t1 - $t0" | bc)" "$(sed -n 's/.*backend, \([0-9.]*\) ms\/frame.*/\1/p' "$T/log")"
    n=$((n + 1))
done
