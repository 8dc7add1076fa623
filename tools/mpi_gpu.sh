#!/bin/bash
# mpi_gpu.sh - issue 17 on the device: the MPI build (Open MPI from .deps/openmpi, `make
# mpi-bundle`) on the CUDA backend. (a) correctness: sort-last -np 1..4 single frames against the
# single-process CUDA image (colour, depth, opacity; max diff printed), the frame-parallel turntable
# byte for byte, tests/gpu/test_piece_cuda, one sort-last run under compute-sanitizer memcheck;
# (b) numbers: frame-parallel and sort-last strong scaling over 1..N ranks (one GPU per rank when
# the machine has several, else ranks share the one), seconds per frame, GPU and host memory per
# rank. Needs .deps carried (make deps-bundle). Logs and summary.txt go to $OUT. ~200 s with the
# build; every step is under a timeout, later steps are skipped past 300-400 s (run it under timeout 580; CAP_A / CAP_B move those limits).
# BACKEND=cpu VXBUILD=dir SL_RES=n FP_SIZE=WxH SL_SIZE=WxH: a dry run of the script on a CPU machine.
set -u
OUT=${OUT:-/tmp/voxray-mpigpu-out}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
elapsed() { echo $(( $(date +%s) - T0 )); }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
B=.deps/openmpi
BK=${BACKEND:-cuda}
[ -x "$B/bin/mpirun" ] || { log "no $B/bin/mpirun: run make deps-bundle (or make mpi-bundle) and carry .deps"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export CUDA_MODULE_LOADING=EAGER VOXRAY_MPI_TIMEOUT=60 # a hang is reported before the 90 s timeouts
NCPU=$(nproc)
export OMP_NUM_THREADS=$NCPU
# no binding: each rank's OpenMP threads (loading, PNG) may use every core
MPIRUN="$B/bin/mpirun --oversubscribe --bind-to none -x CUDA_MODULE_LOADING -x OMP_NUM_THREADS -x VOXRAY_MPI_TIMEOUT -np"
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
NGPU=$(grep -c '^GPU' "$OUT/gpu.txt")
log "machine: $NGPU GPU(s) ($(head -n 1 "$OUT/gpu.txt" | cut -c1-60)), $NCPU cores; $("$B/bin/mpirun" --version | head -n 1)"

# ---- build: one MPI binary (without mpirun it is the plain single-process voxray) ----------
VB=${VXBUILD:-build-mpi}
V=$VB/voxray
if ! timeout 300 make -j16 DEPS=.deps NO_VIEWER=1 MPI=1 BUILD=$VB $V $VB/tests/gpu/test_piece_cuda \
    >"$OUT/build.log" 2>&1; then
    log "build failed (build.log):"; tail -n 20 "$OUT/build.log" | tee -a "$OUT/summary.txt"; exit 1
fi
log "build: $(elapsed) s; $(ldd $V | grep -o 'libmpi.so[^ ]* => [^ ]*')"
T=$(mktemp -d /tmp/voxray-mpigpu-XXXXXX)
trap 'rm -rf "$T"' EXIT
PC=$T/pc
cc -O2 -I.deps/include -o "$PC" tests/png_compare.c -lm || { log "cannot build tests/png_compare.c"; exit 1; }
if ! timeout 30 $MPIRUN 2 true >"$OUT/preflight.log" 2>&1; then
    log "mpirun -np 2 true failed (preflight.log):"; tail -n 8 "$OUT/preflight.log" | tee -a "$OUT/summary.txt"; exit 1
fi
nbad=0

# ---- (a) correctness --------------------------------------------------------------------------
if [ $BK != cpu ]; then
    timeout 60 $VB/tests/gpu/test_piece_cuda >"$OUT/test_piece_cuda.log" 2>&1
    rc=$?
    [ $rc = 0 ] || nbad=$((nbad + 1))
    log "test_piece_cuda (sort-last pieces composited in one process, CUDA vs CPU): exit $rc ($(grep -E '^\[  (PASSED|FAILED)' "$OUT/test_piece_cuda.log" | tr -s ' ' | tr '\n' ' '))"
fi
# odd lattices (partial bricks at the high faces); sparse stored (piece read with seeks) and deflated
$V make-scene orbs -o "$T/orbs" --res 133 >/dev/null &&
    $V convert "$T/orbs" "$T/sp" --sparse --compress none >/dev/null &&
    $V convert "$T/orbs" "$T/spz" --sparse >/dev/null &&
    $V make-scene phantom -o "$T/ph" --res 97 >/dev/null &&
    $V make-scene sh-glass -o "$T/sh" --res 101 >/dev/null || { log "make-scene / convert failed"; exit 1; }
# transport preflight: a sort-last frame big enough for single-copy (CMA) transfers; containers
# that forbid process_vm_readv or have a small /dev/shm get copy-in/out through /tmp instead
shm=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print int($4 / 1024) }')
if [ "${shm:-0}" -lt 1024 ]; then export OMPI_MCA_btl_sm_backing_directory=/tmp; log "/dev/shm has ${shm:-no} MiB free: sm backing files in /tmp"; fi
if ! timeout 60 $MPIRUN 2 $V render "$T/orbs" -o "$T/pre.png" --size 800x600 --backend $BK >"$OUT/preflight2.log" 2>&1; then
    export OMPI_MCA_smsc=^cma
    timeout 60 $MPIRUN 2 $V render "$T/orbs" -o "$T/pre.png" --size 800x600 --backend $BK >>"$OUT/preflight2.log" 2>&1 &&
        log "sort-last -np 2 failed with CMA single copy and works without: OMPI_MCA_smsc=^cma from here (preflight2.log)" ||
        log "sort-last -np 2 fails with and without CMA (preflight2.log): $(tail -n 3 "$OUT/preflight2.log" | tr '\n' ' ')"
fi
SZ=320x240
same() { # label, scene, ranks, render flags...: sort-last -np N against the single-process CUDA image
    local label=$1 scene=$2 n=$3
    shift 3
    local k=${label// /_}
    [ "$(elapsed)" -lt ${CAP_A:-400} ] || { log "  $label -np $n: skipped (time budget)"; return; }
    if [ ! -f "$T/r_$k.png" ]; then
        timeout 60 $V render "$scene" -o "$T/r_$k.png" --depth "$T/r_${k}_d.png" --opacity "$T/r_${k}_o.png" \
            --size $SZ --backend $BK "$@" >"$OUT/ref_$k.log" 2>&1 || { log "FAIL $label: single process (ref_$k.log)"; nbad=$((nbad + 1)); return; }
    fi
    rm -f "$T/s.png" "$T/s_d.png" "$T/s_o.png"
    local t=$(now)
    timeout 90 $MPIRUN "$n" $V render "$scene" -o "$T/s.png" --depth "$T/s_d.png" --opacity "$T/s_o.png" \
        --size $SZ --backend $BK "$@" >"$OUT/sl_${k}_$n.log" 2>&1 || { log "FAIL $label -np $n: exit $? (sl_${k}_$n.log)"; nbad=$((nbad + 1)); return; }
    local w=$(secs "$t" "$(now)") md="" ok=1 m
    for m in "" _d _o; do
        "$PC" "$T/r_$k$m.png" "$T/s$m.png" >"$T/cmp" 2>&1 || ok=0
        md="$md $(sed -n 's/.*max diff \([0-9]*\)\/255.*/\1/p' "$T/cmp")"
    done
    grep -q "$BK backend.*sort-last over $n ranks" "$OUT/sl_${k}_$n.log" || { ok=0; md="$md (no '$BK backend, sort-last over $n ranks' line)"; }
    [ $ok = 1 ] || nbad=$((nbad + 1))
    log "$(printf '  %-24s -np %d: max diff colour/depth/opacity%-10s /255 %s (%s s)' "$label" "$n" "$md" "$([ $ok = 1 ] && echo ok || echo MISMATCH)" "$w")"
}
log "(a) sort-last on CUDA vs the single-process CUDA image, ${SZ}, tolerance 1/255:"
for n in 1 2 3 4; do
    same "dense" "$T/orbs" $n
    same "dense inside" "$T/orbs" $n --eye 0.1,-0.2,0.15 --target 0.9,0.4,-0.3 --fov 100
    same "sparse stored jitter" "$T/sp" $n --jitter 3
    same "sparse deflated inside" "$T/spz" $n --eye -0.3,0.2,0.1 --target 0.5,0.1,0.9 --fov 90
done
same "scalar shaded" "$T/ph" 3
same "sh2 glass" "$T/sh" 3 --azimuth 40 --elevation 25
same "half inside" "$T/sp" 2 --half --eye 0.1,-0.2,0.15 --target 0.9,0.4,-0.3 --fov 100
same "transparent" "$T/orbs" 4 --transparent --azimuth 200 --elevation -30

# frame-parallel: files byte for byte those of one process
timeout 60 $V render "$T/orbs" -o "$T/f1/%02d.png" --opacity "$T/f1/o%02d.npy" --depth "$T/f1/d%02d.png" --turntable 7 \
    --size 256x192 --backend $BK -q >"$OUT/fp_ref.log" 2>&1 || { log "FAIL frame-parallel reference (fp_ref.log)"; nbad=$((nbad + 1)); }
for n in 2 3 4; do
    rm -rf "$T/fn"
    timeout 90 $MPIRUN $n $V render "$T/orbs" -o "$T/fn/%02d.png" --opacity "$T/fn/o%02d.npy" --depth "$T/fn/d%02d.png" \
        --turntable 7 --size 256x192 --backend $BK >"$OUT/fp_$n.log" 2>&1
    rc=$?
    if [ $rc = 0 ] && diff -r "$T/f1" "$T/fn" >"$T/diff" 2>&1; then log "  frame-parallel turntable 7 frames -np $n: 21 files byte-identical ok"
    else log "  FAIL frame-parallel -np $n: exit $rc, $(head -n 3 "$T/diff" | tr '\n' ' ')"; nbad=$((nbad + 1)); fi
done

# one sort-last run under compute-sanitizer memcheck (the ownership kernels on sparse pieces)
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ $BK = cpu ] && CS=""
if [ -n "$CS" ]; then
    t=$(now)
    timeout 150 $MPIRUN 2 "$CS" --tool memcheck --error-exitcode 17 --print-limit 20 $V render "$T/spz" -o "$T/cs.png" \
        --size 160x120 --backend $BK --eye -0.3,0.2,0.1 --target 0.5,0.1,0.9 --fov 90 >"$OUT/memcheck.log" 2>&1
    rc=$?
    [ $rc = 0 ] || nbad=$((nbad + 1))
    log "  memcheck, sort-last -np 2, sparse deflated, camera inside: exit $rc, $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';') ($(secs "$t" "$(now)") s)"
else
    log "  compute-sanitizer not found: memcheck not run"
fi
log "(a) $nbad failure(s); $(elapsed) s so far"

# ---- (b) numbers ---------------------------------------------------------------------------------
# GPU memory per process and on all GPUs together (above idle) from nvidia-smi, sampled every
# 100 ms; host peak RSS (VmHWM) of each rank of this binary
VX=$(readlink -f $V)
gpu_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
IDLE=$(gpu_used)
measure() { # name, command...: runs it; sets WALL, GPUMEM, NGPUUSED, GPUTOT, HOSTMEM
    local name=$1
    shift
    nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits -lms 100 >"$OUT/smi_$name.csv" 2>&1 &
    local smi=$!
    nvidia-smi --query-gpu=timestamp,index,memory.used --format=csv,noheader,nounits -lms 100 >"$OUT/smitot_$name.csv" 2>&1 &
    local smit=$!
    (while :; do for p in $(pgrep -x voxray); do [ "$(readlink /proc/$p/exe 2>/dev/null)" = "$VX" ] &&
        echo "$p $(awk '/VmHWM/ {print $2}' /proc/$p/status 2>/dev/null)"; done; sleep 0.1; done) >"$T/rss" 2>/dev/null &
    local rss=$!
    local t=$(now)
    "$@" >"$OUT/run_$name.log" 2>&1
    RC=$?
    WALL=$(secs "$t" "$(now)")
    kill "$smi" "$smit" "$rss" 2>/dev/null
    wait "$smi" "$smit" "$rss" 2>/dev/null
    GPUTOT=$(awk -F', *' -v idle="$IDLE" '$3 ~ /^[0-9]+$/ { s[$1] += $3 } END { for (t in s) if (s[t] > m) m = s[t]; print (m > 0 ? m - idle : "n/a") }' "$OUT/smitot_$name.csv")
    GPUMEM=$(awk -F', *' '$3 ~ /^[0-9]+$/ { if ($3 > m[$1]) m[$1] = $3 } END { for (p in m) print m[p] }' "$OUT/smi_$name.csv" | sort -n | tr '\n' '/' | sed 's:/$::')
    NGPUUSED=$(awk -F', *' '$3 ~ /^[0-9]+$/ { u[$2] = 1 } END { print length(u) }' "$OUT/smi_$name.csv")
    HOSTMEM=$(awk 'NF == 2 { m[$1] = $2 } END { for (p in m) printf "%d\n", m[p] / 1024 }' "$T/rss" | sort -n | tr '\n' '/' | sed 's:/$::')
    [ -n "$GPUMEM" ] || GPUMEM=n/a
}
RANKS="1 2 4"
if [ "$NGPU" -ge 2 ]; then
    RANKS=""
    for n in 1 2 4 8; do [ $n -le "$NGPU" ] && RANKS="$RANKS $n"; done
    case " $RANKS " in *" $NGPU "*) ;; *) RANKS="$RANKS $NGPU" ;; esac
    log "(b) one GPU per rank (local rank modulo $NGPU GPUs); ranks:$RANKS"
else
    log "(b) ONE GPU: the ranks share it (contexts time-slice), so this shows overheads, not GPU scaling; ranks: $RANKS"
fi
FP_N=48 FP_SIZE=${FP_SIZE:-1920x1080} SL_RES=${SL_RES:-1024} SL_SIZE=${SL_SIZE:-1920x1080}
$V make-scene orbs -o "$T/fp" --res 256 >/dev/null || { log "make-scene orbs 256 failed"; exit 1; }
$V make-scene orbs -o "$T/big" --res "$SL_RES" --sparse --compress none >"$OUT/big_scene.log" 2>&1 ||
    { log "make-scene orbs --res $SL_RES --sparse failed"; exit 1; }
log "    frame-parallel: orbs 256^3 dense rgba (256 MiB), --turntable $FP_N at $FP_SIZE, PNG out"
log "    sort-last: $(sed -n 's/.*wrote [^ ]* (\([^;]*\);.*/\1/p' "$OUT/big_scene.log"), stored .npz, one frame $SL_SIZE"
cat "$T/big/grid.sparse.npz" >/dev/null
log "$(printf '    %-15s %5s %4s %8s %10s %7s  %-24s %9s  %s' mode ranks GPUs wall_s s/frame speedup 'GPU MiB per rank' 'GPU MiB all' 'host peak RSS MiB per rank')"
fp1="" sl1=""
for n in $RANKS; do
    [ "$(elapsed)" -lt ${CAP_B:-300} ] || { log "    (stopped at $(elapsed) s: time budget)"; break; }
    export OMP_NUM_THREADS=$(( NCPU / n > 0 ? NCPU / n : 1 ))
    rm -rf "$T/fo"
    measure "fp_$n" timeout 120 $MPIRUN "$n" $V render "$T/fp" -o "$T/fo/%03d.png" --turntable $FP_N --size $FP_SIZE --backend $BK
    spf=$(sed -n 's/.*wrote [0-9]* frames ([^,]*, [^,]*, \([0-9.]*\) ms\/frame.*/\1/p' "$OUT/run_fp_$n.log" | awk '{printf "%.4f", $1 / 1000}')
    [ $RC = 0 ] && [ -n "$spf" ] || spf="FAIL($RC)"
    [ -n "$fp1" ] || fp1=$spf
    log "$(printf '    %-15s %5d %4s %8s %10s %7s  %-24s %9s  %s' frame-parallel $n "$NGPUUSED" "$WALL" "$spf" \
        "$(awk -v a="$fp1" -v b="$spf" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')" "$GPUMEM" "$GPUTOT" "$HOSTMEM")"
    measure "sl_$n" timeout 120 $MPIRUN "$n" $V render "$T/big" -o "$T/sl.png" --size $SL_SIZE --backend $BK
    spf=$(sed -n 's/.*wrote [^ ]* ([^,]*, [^,]*, \([0-9.]*\) ms,.*/\1/p' "$OUT/run_sl_$n.log" | awk '{printf "%.4f", $1 / 1000}')
    [ $RC = 0 ] && [ -n "$spf" ] || spf="FAIL($RC)"
    [ -n "$sl1" ] || sl1=$spf
    log "$(printf '    %-15s %5d %4s %8s %10s %7s  %-24s %9s  %s' sort-last $n "$NGPUUSED" "$WALL" "$spf" \
        "$(awk -v a="$sl1" -v b="$spf" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')" "$GPUMEM" "$GPUTOT" "$HOSTMEM")"
    [ $n = 1 ] && cp "$T/sl.png" "$T/sl1.png"
    [ $n != 1 ] && [ -f "$T/sl1.png" ] && log "      sort-last -np $n vs -np 1: $("$PC" "$T/sl1.png" "$T/sl.png" 2>&1 | sed 's/.*: \([0-9]*x[0-9]*, max diff.*\)/\1/')"
done
export OMP_NUM_THREADS=$NCPU
measure "single" timeout 120 $V render "$T/big" -o "$T/sl0.png" --size $SL_SIZE --backend $BK
log "    single process (no mpirun), the sort-last scene: wall $WALL s, $(sed -n 's/.*wrote [^ ]* ([^,]*, [^,]*, \([0-9.]*\) ms,.*/\1 ms/p' "$OUT/run_single.log"), GPU $GPUMEM MiB (all GPUs $GPUTOT), host $HOSTMEM MiB"
log "    s/frame: frame-parallel = rank 0's wall from the renderer being ready to the last frame reported / frames;"
log "    sort-last = rank 0's render + composite of the one frame (loading excluded; wall_s includes mpirun start, load, PNG)"
log "total: $(elapsed) s"
