#!/bin/sh
# test_fit_tools.sh - tools/fit_pair.sh and tools/fit_bins.sh on small hand-written logs in
# both formats they read (a fit's held-out table, `voxray eval` reports cat'ed), against
# numbers worked out by hand, and their errors: one line naming the file, a non-zero exit.
# Run by tests/run_tests.sh; prints "fit-tools: N passed, N failed".
T=$(mktemp -d /tmp/voxray-fittools-XXXXXX)
. tests/cli_expect.sh
finish() {
    rm -rf "$T"
    echo "fit-tools: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}

# a fit log's held-out table (the base) and two eval halves (the other): views r_0-r_2 shared,
# r_3 only in the other, r_9 only in the base
cat > "$T/base.log" <<'EOF'
iter  100/100  24x40x40  loss 0.00100 (30.00 dB)
fit: held-out views
  view                               PSNR dB    SSIM   elev    gap
  test/r_0.png                        30.000  0.9500   47.2    0.4
  test/r_1.png                        31.000  0.9500   47.2    5.0
  test/r_2.png                        32.000  0.9500   47.2    9.0
  test/r_9.png                        20.000  0.9500   10.0   12.0
  mean                                28.250  0.9500
  worst view test/r_9.png (20.000 dB, elev 10.0)
EOF
cat > "$T/other.log" <<'EOF'
eval: /tmp/a on .legoA split 'test' (2 views, 800x800, cuda)
  view                               PSNR dB    SSIM   elev    gap
  test/r_0.png                        31.000  0.9600   47.2    0.4
  test/r_1.png                        30.500  0.9600   47.2    5.0
  mean                                30.750  0.9600
eval: /tmp/a on .legoB split 'test' (2 views, 800x800, cuda)
  view                               PSNR dB    SSIM   elev    gap
  test/r_2.png                        32.000  0.9600   47.2    9.0
  test/r_3.png                        40.000  0.9600   47.2    2.0
  mean                                36.000  0.9600
EOF
# differences +1, -0.5, 0: mean 0.1667, sd sqrt(0.58333) = 0.764, sem 0.441
sh tools/fit_pair.sh "$T/base.log" "$T/other.log" > "$T/pair" 2> "$T/err"
row=$(tail -n 1 "$T/pair")
case "$row" in
*"|     3 |    +0.167 | 0.764 | 0.441 |     1 / 1      | r_0 +1.00"*"| r_1 -0.50"*) ok ;;
*) bad "fit_pair.sh: the row is not the hand-worked one: $row" ;;
esac
# the other way round every sign flips, the spread stays
row=$(sh tools/fit_pair.sh "$T/other.log" "$T/base.log" | tail -n 1)
case "$row" in
*"|     3 |    -0.167 | 0.764 | 0.441 |     1 / 1      | r_1 +0.50"*"| r_0 -1.00"*) ok ;;
*) bad "fit_pair.sh, reversed: $row" ;;
esac
# one row per OTHER; a log against itself: no difference, no gain, no loss
[ "$(sh tools/fit_pair.sh "$T/base.log" "$T/other.log" "$T/base.log" | grep -c '^| /')" -eq 2 ] && ok ||
    bad "fit_pair.sh: two OTHER logs must give two rows"
row=$(sh tools/fit_pair.sh "$T/base.log" "$T/base.log" | tail -n 1)
case "$row" in
*"|     4 |    +0.000 | 0.000 | 0.000 |     0 / 0      | -"*) ok ;;
*) bad "fit_pair.sh, a log against itself: $row" ;;
esac

# fit_bins.sh: the other log's four views, binned by gap (0.4 and 2.0 | 5.0 | 9.0)
row=$(sh tools/fit_bins.sh "$T/other.log" | tail -n 1)
case "$row" in
*"|  33.38 |  35.50 ( 2) |  30.50 ( 1) |  32.00 ( 1) |"*"|  36.00 ( 2) |") ok ;;
*) bad "fit_bins.sh: $row" ;;
esac

# errors: usage (2); unreadable, tableless, duplicated views, nothing shared (1), one line each
expect 2 "usage:" -- sh tools/fit_pair.sh "$T/base.log"
expect 1 "$T/missing.log: cannot read it" -- sh tools/fit_pair.sh "$T/base.log" "$T/missing.log"
echo "no table here" > "$T/empty.log"
expect 1 "$T/empty.log has no held-out table" -- sh tools/fit_pair.sh "$T/empty.log" "$T/other.log"
expect 1 "$T/empty.log has no held-out table" -- sh tools/fit_pair.sh "$T/base.log" "$T/empty.log"
cat "$T/other.log" "$T/other.log" > "$T/twice.log"
expect 1 "$T/twice.log: view r_0 appears twice" -- sh tools/fit_pair.sh "$T/base.log" "$T/twice.log"
sed 's/r_\([0-9]\)\.png/q_\1.png/' "$T/other.log" > "$T/apart.log"
expect 1 "share no view" -- sh tools/fit_pair.sh "$T/base.log" "$T/apart.log"
sed 's/31\.000  0\.96/nan  0.96/' "$T/other.log" > "$T/nan.log"
expect 1 "$T/nan.log: view r_0 has no finite PSNR" -- sh tools/fit_pair.sh "$T/base.log" "$T/nan.log"
expect 1 "has no held-out table" -- sh tools/fit_bins.sh "$T/empty.log"
finish
