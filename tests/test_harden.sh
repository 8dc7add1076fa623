#!/bin/sh
# test_harden.sh - hostile input from issue 15, end to end: outputs that name inputs or
# each other, FIFOs, data files outside the header's folder, lenient headers, overflowing
# placement. Each case exits 1 (bad data) or 2 (usage) with one line and leaves no output.
VOXRAY=${VOXRAY:-build/voxray}
T=$(mktemp -d /tmp/voxray-harden-XXXXXX)
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE SUBSTRING -- command...: exit code, stderr holding SUBSTRING, one line on failure
expect() {
    code=$1; sub=$2; shift 3
    timeout 20 "$@" >"$T/out" 2>"$T/err"
    rc=$?
    lines=$(grep -c . "$T/err")
    if [ $rc -ne "$code" ]; then bad "exit $rc (want $code): $*"; cat "$T/err"; return; fi
    if [ -n "$sub" ] && ! grep -qF -- "$sub" "$T/err"; then bad "stderr lacks '$sub': $*"; cat "$T/err"; return; fi
    if [ "$code" -ne 0 ] && [ "$lines" -ne 1 ]; then bad "stderr has $lines lines (want 1): $*"; cat "$T/err"; return; fi
    ok
}
R="--size 8x8 --backend cpu -q"

$VOXRAY make-scene orbs -o "$T/orbs" --res 12 >/dev/null 2>&1 || bad "make-scene orbs"

# ---- 3: outputs against inputs and each other, all or nothing --------------------------
cp "$T/orbs/grid.npy" "$T/grid.bak"
expect 1 "would overwrite the input" -- $VOXRAY render "$T/orbs" -o "$T/a.png" --depth "$T/orbs/grid.npy" $R
cmp -s "$T/orbs/grid.npy" "$T/grid.bak" && ok || bad "--depth replaced the grid"
expect 1 "would overwrite the input" -- $VOXRAY render "$T/orbs" -o "$T/a.png" --opacity "$T/orbs/grid.npy" $R
expect 1 "same file" -- $VOXRAY render "$T/orbs" -o "$T/a.png" --depth "$T/a.png" $R
expect 1 "same file" -- $VOXRAY render "$T/orbs" -o "$T/a.png" --opacity "$T/./a.png" $R
touch "$T/afile"
expect 1 "not a directory" -- $VOXRAY render "$T/orbs" -o "$T/ok.png" --depth "$T/afile/d.npy" $R
[ -e "$T/ok.png" ] && bad "a failed output set left ok.png" || ok
mkdir "$T/dir.npy"
expect 1 "is a directory" -- $VOXRAY render "$T/orbs" -o "$T/ok.png" --depth "$T/dir.npy" $R
[ -e "$T/ok.png" ] && bad "a failed output set left ok.png" || ok
# a stale temporary of a dead process is removed; a live one (ours: $$) is kept
touch "$T/s.png.tmp.999999999" "$T/s.png.tmp.$$"
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/s.png" $R
[ -e "$T/s.png.tmp.999999999" ] && bad "stale temporary left" || ok
[ -e "$T/s.png.tmp.$$" ] && ok || bad "a live process's temporary was removed"
rm -f "$T/s.png.tmp.$$"

# ---- 2b: FIFOs are refused before they are opened ----------------------------------------
mkfifo "$T/fifo.nrrd" "$T/fifo"
expect 1 "not a regular file" -- $VOXRAY info "$T/fifo"
expect 1 "not a regular file" -- $VOXRAY render "$T/fifo.nrrd" -o "$T/f.png" $R
printf '{"grid": "fifo"}' >"$T/fifo.json"
expect 1 "not a regular file" -- $VOXRAY render "$T/fifo.json" -o "$T/f.png" $R
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: fifo\n' >"$T/ff.nhdr"
expect 1 "not a regular file" -- $VOXRAY render "$T/ff.nhdr" -o "$T/f.png" $R
expect 1 "not a regular file" -- $VOXRAY render "$T/orbs" -o "$T/f%d.png" --path "$T/fifo" $R

# ---- 4: detached data must stay in the header's folder ----------------------------------
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: /etc/passwd\n' >"$T/abs.nhdr"
expect 1 "--allow-outside-data" -- $VOXRAY render "$T/abs.nhdr" -o "$T/p.png" $R
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: ../../../../../../../etc/passwd\n' >"$T/rel.nhdr"
expect 1 "outside the header's directory" -- $VOXRAY render "$T/rel.nhdr" -o "$T/p.png" $R
ln -s /etc/passwd "$T/link.raw"
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: link.raw\n' >"$T/link.nhdr"
expect 1 "outside the header's directory" -- $VOXRAY render "$T/link.nhdr" -o "$T/p.png" $R
printf 'ObjectType = Image\nNDims = 3\nDimSize = 2 2 2\nElementType = MET_UCHAR\nElementDataFile = /etc/passwd\n' >"$T/m.mhd"
expect 1 "outside the header's directory" -- $VOXRAY convert "$T/m.mhd" "$T/mo"
[ -e "$T/mo/grid.npy" ] && bad "convert copied /etc/passwd" || ok
expect 0 "" -- $VOXRAY render "$T/abs.nhdr" -o "$T/p.png" $R --allow-outside-data
head -c 8 /etc/passwd >"$T/in.raw"
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: ./in.raw\n' >"$T/in.nhdr"
expect 0 "" -- $VOXRAY render "$T/in.nhdr" -o "$T/p2.png" $R

ls "$T" | grep -q 'tmp\.' && bad "temporary files left behind: $(ls "$T" | grep 'tmp\.')" || ok
rm -rf "$T"
echo "harden: $pass passed, $fail failed"
[ $fail -eq 0 ]
