#!/bin/sh
# run_tests.sh - runs every cmocka test binary given on the command line, then the
# shell suites (CLI end to end, viewer under Xvfb, parser fuzzing when asked), and
# prints one closing line "N passed, N failed" (", N skipped" when tests were skipped,
# e.g. without ../shared/data). Called by `make test`.
# Environment: VOXRAY (binary), BUILD (build dir), FUZZ=1 to run the fuzz targets,
# PYTHON_TESTS=1 to run python/tests against $BUILD/libvoxray.so (PYTHON: the interpreter).
passed=0
failed=0
skipped=0
failed_names=""
log=$(mktemp)
for t in "$@"; do
    echo "== $t"
    "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    k=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    skipped=$((skipped + ${k:-0}))
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ] && [ "${f:-0}" = 0 ]; then failed=$((failed + 1)); fi
    [ $rc -ne 0 ] && failed_names="$failed_names $t"
done
for s in tests/test_*.sh; do
    [ -f "$s" ] || continue
    echo "== $s"
    sh "$s" >"$log" 2>&1
    rc=$?
    cat "$log"
    line=$(grep -E '^[a-z_-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    skipped=$((skipped + $(grep -c '^skipped: ' "$log")))
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ] && [ "${f:-0}" = 0 ]; then failed=$((failed + 1)); fi
    [ $rc -ne 0 ] && failed_names="$failed_names $s"
done
# The Python package (python/tests, pytest): when make asks for it (not in sanitizer builds,
# whose library Python cannot load) and numpy + pytest are there; torch-only tests skip
# themselves without torch, CUDA ones without a GPU, each with its reason.
if [ "${PYTHON_TESTS:-0}" = 1 ]; then
    py=${PYTHON:-python3}
    echo "== python/tests (pytest)"
    if ! "$py" -c "import numpy, pytest" 2>/dev/null; then
        echo "python tests skipped: numpy or pytest is not installed ($py -m pip install numpy pytest torch)"
    else
        VOXRAY_LIB="$BUILD/libvoxray.so" "$py" -m pytest -q -rs -p no:cacheprovider python/tests >"$log" 2>&1
        rc=$?
        cat "$log"
        line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|skipped)' "$log" | tail -n 1)
        p=$(echo "$line" | sed -n 's/.*\b\([0-9][0-9]*\) passed.*/\1/p')
        f=$(echo "$line" | sed -n 's/.*\b\([0-9][0-9]*\) failed.*/\1/p')
        e=$(echo "$line" | sed -n 's/.*\b\([0-9][0-9]*\) error.*/\1/p')
        passed=$((passed + ${p:-0}))
        failed=$((failed + ${f:-0} + ${e:-0}))
        if [ $rc -ne 0 ] && [ $((${f:-0} + ${e:-0})) = 0 ]; then failed=$((failed + 1)); fi
        [ $rc -ne 0 ] && failed_names="$failed_names python/tests"
    fi
fi
rm -f "$log"
[ -n "$failed_names" ] && echo "failing:$failed_names"
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped (see the 'skipped:' lines above)"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ -z "$failed_names" ]
