# cli_expect.sh - sourced by the shell suites (test_cli.sh, test_harden.sh): pass/fail
# counters and expect(), which runs a command and checks its exit code and its stderr.
# The suite sets T (a scratch folder) first; EXPECT_TIMEOUT bounds each command (60 s).
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE SUBSTRING -- command...: exit code, stderr holding SUBSTRING, and exactly one
# stderr line when the command fails (a hang counts as exit 124)
expect() {
    code=$1; sub=$2; shift 3
    timeout "${EXPECT_TIMEOUT:-60}" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    lines=$(grep -c . "$T/err")
    if [ $rc -ne "$code" ]; then bad "exit $rc (want $code): $*"; cat "$T/err"; return; fi
    if [ -n "$sub" ] && ! grep -qF -- "$sub" "$T/err"; then bad "stderr lacks '$sub': $*"; cat "$T/err"; return; fi
    if [ "$code" -ne 0 ] && [ "$lines" -ne 1 ]; then bad "stderr has $lines lines (want 1): $*"; cat "$T/err"; return; fi
    ok
}
