#!/bin/sh
# run_fuzz.sh - builds one libFuzzer target per volume reader plus .npy, scene.json,
# transforms.json and load-then-render (clang, -fsanitize=fuzzer,address,undefined,
# float-cast-overflow), writes a seed corpus of small valid files, and runs each target
# for FUZZ_TIME seconds (default 20; CI runs them briefly, `make fuzz FUZZ_TIME=600` for
# longer; FUZZ_TARGETS="npy scene" picks some; nvdb and vdb join when NanoVDB's and
# OpenVDB's headers are installed). `make fuzz` and CI call it from
# the repository root. Needs clang and libclang-rt-*-dev (Debian: clang libclang-rt-14-dev).
set -u
CLANG=${CLANG:-clang}
T=${FUZZ_TIME:-20}
B=${FUZZ_BUILD:-build/fuzz}
TARGETS=${FUZZ_TARGETS:-"nrrd nifti metaimage inr volpack raw plenoxels sparse npy scene transforms render"}
if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "fuzz: $CLANG not found (install clang and libclang-rt-14-dev)"; echo "fuzz: 0 passed, 1 failed"; exit 1
fi
mkdir -p "$B/obj" "$B/corpus" "$B/logs"
SAN="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all"
CF="-g -O1 -std=c11 -D_GNU_SOURCE -fopenmp -Isrc -Isrc/formats -Ikernels -Itests $SAN"
LIBS="-lzip -lz -lm -lcjson -fopenmp"
# every C file of the library (as the Makefile's LIB_SRC without CUDA, the command-line
# verbs, MPI or the viewer) goes into one archive, and each target links what it reaches:
# a hand-kept list of the files the readers and vx_render_cpu reach broke CI's link twice
# when the renderer grew a file
AOBJS=""
for s in src/*.c src/formats/*.c; do
    [ "$s" = src/main.c ] && continue
    o="$B/obj/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')"
    "$CLANG" $CF -fsanitize=fuzzer-no-link -c "$s" -o "$o" || { echo "fuzz: cannot compile $s"; echo "fuzz: 0 passed, 1 failed"; exit 1; }
    AOBJS="$AOBJS $o"
done
rm -f "$B/libvx_fuzz.a"
# shellcheck disable=SC2086 # the object list is a word list
ar rcs "$B/libvx_fuzz.a" $AOBJS || { echo "fuzz: cannot archive the library"; echo "fuzz: 0 passed, 1 failed"; exit 1; }
OBJS="$B/libvx_fuzz.a"
# the C++ readers, when their headers are here: NanoVDB (header-only) and OpenVDB (over the
# uninstrumented libopenvdb; C++ UBSan's vptr/function checks need a runtime clang does not link)
CXXF="-g -O1 -std=c++17 -Isrc -Isrc/formats $SAN -fno-sanitize=vptr,function,alignment -fsanitize=fuzzer-no-link"
SEEDF=""
if [ -f /usr/include/nanovdb/NanoVDB.h ] && ${CLANG}++ $CXXF -c src/formats/nvdb.cpp -o "$B/obj/nvdb.o"; then
    OBJS="$B/obj/nvdb.o $OBJS"; SEEDF="$SEEDF -DFUZZ_NVDB"; LIBS="$LIBS -lstdc++"
    TARGETS=${FUZZ_TARGETS:-"$TARGETS nvdb"}
fi
if [ -f /usr/include/openvdb/openvdb.h ] && ${CLANG}++ $CXXF -c src/formats/vdb.cpp -o "$B/obj/vdb.o"; then
    OBJS="$B/obj/vdb.o $OBJS"; SEEDF="$SEEDF -DFUZZ_VDB"
    LIBS="$LIBS -lopenvdb $(pkg-config --libs Imath 2>/dev/null) -ltbb -lstdc++"
    # opt-in (FUZZ_VDB=1): libopenvdb itself takes 2.8 GB and 7 s on some 3 kB inputs
    # (docs/FORMATS.md), which a clean run cannot survive; voxray still ends with one line
    [ "${FUZZ_VDB:-0}" = 1 ] && TARGETS=${FUZZ_TARGETS:-"$TARGETS vdb"}
fi
"$CLANG" $CF $SEEDF tests/fuzz/make_seeds.c $OBJS $LIBS -o "$B/make_seeds" || { echo "fuzz: 0 passed, 1 failed"; exit 1; }
rm -rf "$B/seeds"
"$B/make_seeds" "$B/seeds" || { echo "fuzz: seed generation failed"; echo "fuzz: 0 passed, 1 failed"; exit 1; }
passed=0
failed=0
for t in $TARGETS; do
    if ! "$CLANG" $CF -fsanitize=fuzzer "tests/fuzz/fuzz_$t.c" $OBJS $LIBS -o "$B/fuzz_$t"; then
        echo "fuzz_$t: build failed"; failed=$((failed + 1)); continue
    fi
    mkdir -p "$B/corpus/$t"
    log="$B/logs/fuzz_$t.log"
    max_len=16384
    [ "$t" = nvdb ] && max_len=400000 # the smallest NanoVDB tree with a leaf is ~300 kB
    # libopenvdb (uninstrumented, not voxray's code) sizes some buffers from the file before
    # reading them (a 1.6 GB malloc from a 16 kB input): for it the malloc limit is lifted and
    # ASan's malloc returns NULL past its maximum, so operator new throws bad_alloc, which
    # vdb.cpp turns into its one line; the RSS limit still catches memory really used
    asan=${ASAN_OPTIONS:-}
    mlimit=512
    [ "$t" = vdb ] && asan="${asan:+$asan:}allocator_may_return_null=1" && mlimit=1000000
    if TMPDIR=${TMPDIR:-/tmp} ASAN_OPTIONS="$asan" LSAN_OPTIONS="suppressions=$(pwd)/tests/vdb/lsan.supp:print_suppressions=0" \
        "$B/fuzz_$t" -max_total_time="$T" -rss_limit_mb=2048 -malloc_limit_mb=$mlimit \
        -timeout=10 -max_len=$max_len -print_final_stats=1 -artifact_prefix="$B/logs/$t-" \
        "$B/corpus/$t" "$B/seeds/$t" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz_$t: clean, ${runs:-?} runs in ${T}s"
        passed=$((passed + 1))
    else
        echo "fuzz_$t: FAILED (see $log)"
        grep -m 5 -E "ERROR|SUMMARY|runtime error|malloc" "$log"
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
