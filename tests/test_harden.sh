#!/bin/sh
# test_harden.sh - hostile input from issue 15, end to end: outputs that name inputs or
# each other, FIFOs, data files outside the header's folder, lenient headers, overflowing
# placement. Each case exits 1 (bad data) or 2 (usage) with one line and leaves no output.
VOXRAY=${VOXRAY:-build/voxray}
T=$(mktemp -d /tmp/voxray-harden-XXXXXX)
EXPECT_TIMEOUT=20
. tests/cli_expect.sh
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

# ... the detached data file of a header counts as an input too
mkdir -p "$T/det"
head -c 8 /dev/zero >"$T/det/grid.npy"
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: grid.npy\n' >"$T/det/h.nhdr"
expect 1 "would overwrite the input" -- $VOXRAY convert "$T/det/h.nhdr" "$T/det"
expect 1 "would overwrite the input" -- $VOXRAY render "$T/det/h.nhdr" -o "$T/det/o.png" --depth "$T/det/grid.npy" $R
[ "$(wc -c <"$T/det/grid.npy")" -eq 8 ] && ok || bad "the detached data file was replaced"

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

# ---- 1, 5, 6: placement that overflows float, lenient or overflowing header fields -------
nrrd() { # nrrd FILE DIMENSION EXTRA-LINES: a 4^3 uint8 NRRD with the payload attached
    printf 'NRRD0004\ntype: uint8\ndimension: %s\nsizes: 4 4 4\nencoding: raw\n%b\n\n' "$2" "$3" >"$1"
    head -c 64 /dev/zero >>"$1"
}
nrrd "$T/huge.nrrd" 3 'spacings: 1e38 1e38 1e38'
expect 1 "placement" -- $VOXRAY render "$T/huge.nrrd" -o "$T/h.png" $R
expect 1 "placement" -- $VOXRAY render "$T/huge.nrrd" -o "$T/h.png" $R --no-skip
nrrd "$T/far.nrrd" 3 'spacings: 1e30 1e30 1e30\nspace origin: (-2e30,-2e30,-2e30)'
expect 1 "placement" -- $VOXRAY render "$T/far.nrrd" -o "$T/h.png" $R --eye 0,0,0 --target 1,1,1
nrrd "$T/dim.nrrd" 4294967299 'spacings: 1 1 1'
expect 1 "dimension" -- $VOXRAY render "$T/dim.nrrd" -o "$T/h.png" $R
nrrd "$T/nan.nrrd" 3 'spacings: nan 1 1'
expect 1 "spacings" -- $VOXRAY render "$T/nan.nrrd" -o "$T/h.png" $R
nrrd "$T/inf.nrrd" 3 'spacings: 1 inf 1'
expect 1 "spacings" -- $VOXRAY render "$T/inf.nrrd" -o "$T/h.png" $R
nrrd "$T/skip.nrrd" 3 'byte skip: 9223372036854775807'
expect 1 "byte skip" -- $VOXRAY render "$T/skip.nrrd" -o "$T/h.png" $R
printf 'ObjectType = Image\nNDims = 3\nDimSize = 2 2 2\nElementNumberOfChannels = 4294967297\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n12345678' >"$T/ch.mha"
expect 1 "ElementNumberOfChannels" -- $VOXRAY render "$T/ch.mha" -o "$T/h.png" $R
printf '{"grid": "grid.npy\\u0000.png"}' >"$T/orbs/nul.json"
expect 1 "u0000" -- $VOXRAY render "$T/orbs/nul.json" -o "$T/h.png" $R
printf 'NRRD0004\ntype: uint8\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: /dev/zero\n' >"$T/zero.nhdr"
expect 1 "not a regular file" -- $VOXRAY render "$T/zero.nhdr" -o "$T/h.png" $R --allow-outside-data
grep -q "Success" "$T/err" && bad "stale errno in: $(cat "$T/err")" || ok
python3 - "$T" <<'PY' || bad "python3 for the +-3e38 grid"
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4, 4, 4), }"
hdr += " " * (64 - 10 - len(hdr) - 1) + "\n"
vals = [3e38 if i % 3 else -3e38 for i in range(256)]
open(sys.argv[1] + "/extreme.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode()
                                             + b"".join(struct.pack("<f", v) for v in vals))
PY
expect 1 "within +-1e+30" -- $VOXRAY render "$T/extreme.npy" -o "$T/h.png" $R
long=$(printf 'd%.0s' $(seq 1 1100))
expect 1 "longer than" -- $VOXRAY render "$T/$long.json" -o "$T/h.png" $R
cat >"$T/degenerate.json" <<'J'
{"camera_angle_x": 0.69, "frames": [{"file_path": "./r_0", "transform_matrix": [[0,0,0,0],[0,0,0,0],[0,0,0,4],[0,0,0,1]]}]}
J
expect 1 "degenerate" -- $VOXRAY render "$T/orbs" -o "$T/c%d.png" --path "$T/degenerate.json" $R
cat >"$T/huge_cam.json" <<'J'
{"camera_angle_x": 0.69, "frames": [{"file_path": "./r_0", "transform_matrix": [[1e300,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}
J
expect 1 "camera matrix" -- $VOXRAY render "$T/orbs" -o "$T/c%d.png" --path "$T/huge_cam.json" $R
ls "$T" | grep -q '^[hc][0-9]*\.png' && bad "a failed render left an image" || ok

# ---- 7: memory follows a budget the user can raise; the refusal is one line ---------------
python3 - "$T" <<'PY' || bad "python3 for the gzip bomb"
import sys, zlib
h = b"NRRD0004\ntype: uint8\ndimension: 3\nsizes: 1024 1024 1024\nencoding: gzip\nspacings: 1 1 1\n\n"
c = zlib.compressobj(9, zlib.DEFLATED, 31)
open(sys.argv[1] + "/bomb.nrrd", "wb").write(h + b"".join(c.compress(bytes(1 << 24)) for _ in range(64)) + c.flush())
PY
expect 1 "--max-memory allows" -- $VOXRAY render "$T/bomb.nrrd" -o "$T/h.png" $R --max-memory 512M
expect 1 "--max-memory allows" -- $VOXRAY info "$T/bomb.nrrd" --max-memory 1G
expect 1 "--max-memory allows" -- $VOXRAY convert "$T/bomb.nrrd" "$T/bombc" --max-memory 1G
expect 1 "--max-memory allows" -- $VOXRAY render "$T/orbs" -o "$T/h.png" $R --max-memory 16K
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/m.png" $R --max-memory 64M
expect 2 "--max-memory" -- $VOXRAY render "$T/orbs" -o "$T/h.png" $R --max-memory lots
# sparse grids (files and in-memory make-scene specs) follow the same budget
expect 0 "" -- $VOXRAY convert "$T/orbs" "$T/orbs_sp" --sparse
expect 1 "--max-memory allows" -- $VOXRAY render "$T/orbs_sp" -o "$T/h.png" $R --max-memory 16K
expect 1 "--max-memory allows" -- $VOXRAY render make-scene:shell:40 -o "$T/h.png" $R --max-memory 16K
expect 0 "" -- $VOXRAY render "$T/orbs_sp" -o "$T/m.png" $R --max-memory 64M
expect 1 "--max-memory allows" -- $VOXRAY make-scene shell -o "$T/ms" --res 40 --sparse --max-memory 16K
expect 0 "" -- $VOXRAY make-scene shell -o "$T/ms" --res 40 --sparse --max-memory 64M
expect 2 "--max-memory" -- $VOXRAY make-scene shell -o "$T/ms" --res 40 --max-memory lots

# ---- convert: reads what render reads, keeps the direct render's look --------------------
expect 0 "" -- $VOXRAY convert "$T/orbs/grid.npy" "$T/conv_npy"
nrrd "$T/vol.nrrd" 3 'spacings: 1 1 2'
expect 0 "" -- $VOXRAY convert "$T/vol.nrrd" "$T/conv"
expect 0 "" -- $VOXRAY render "$T/vol.nrrd" -o "$T/direct.png" $R
expect 0 "" -- $VOXRAY render "$T/conv" -o "$T/converted.png" $R
cmp -s "$T/direct.png" "$T/converted.png" && ok || bad "convert changed the look of the render"
# a uint8 volume stays uint8: the copy is not four times the bytes
head -c 10 "$T/conv/grid.npy" >/dev/null && grep -a -q "'|u1'" "$T/conv/grid.npy" && ok || bad "convert widened uint8 to float32"

# ---- the first-time user's findings ----------------------------------------------------
$VOXRAY render "$T/orbs" -o "$T/quiet.png" --size 8x8 -q >"$T/out" 2>"$T/err"
[ -s "$T/err" ] && bad "-q still printed: $(cat "$T/err")" || ok
$VOXRAY help render | grep -q "^usage: voxray render" && ok || bad "voxray help render"
expect 2 "unknown command" -- $VOXRAY help nope
expect 2 "preset 'nope'" -- $VOXRAY render "$T/orbs" -o "$T/h.png" $R --preset nope
[ "$($VOXRAY view --help | grep -c -- '--size')" = 1 ] && ok || bad "view --help lists --size twice"
if $VOXRAY view --help >/dev/null 2>&1 && ! $VOXRAY view /nonexist 2>&1 | grep -q "built without"; then
    expect 1 "/nonexist: cannot open" -- $VOXRAY view /nonexist
    grep -q "display\|backend" "$T/err" && bad "view /nonexist: $(cat "$T/err")" || ok
fi
touch "$T/somefile.png"
expect 1 "is a file" -- $VOXRAY make-scene orbs -o "$T/somefile.png" --res 8
grep -q "tmp\." "$T/err" && bad "make-scene showed a temporary name" || ok

# --turntable starts from the scene's camera: its frame 0 is the single frame
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/single.png" $R
expect 0 "" -- $VOXRAY render "$T/orbs" -o "$T/tt%d.png" --turntable 3 $R
cmp -s "$T/single.png" "$T/tt0.png" && ok || bad "turntable frame 0 differs from the scene's camera"
# a scalar volume is framed by its content, not its (mostly empty) box
python3 - "$T" <<'PY' || bad "python3 for the blob volume"
import sys
n = 32
vox = bytearray(n * n * n)
for z in range(2, 10):
    for y in range(2, 10):
        for x in range(2, 10):
            vox[(z * n + y) * n + x] = 200
vox[0] = 255  # the window's top, so the blob is not all of the range
hdr = b"NRRD0004\ntype: uint8\ndimension: 3\nsizes: 32 32 32\nencoding: raw\nspacings: 1 1 1\n\n"
open(sys.argv[1] + "/blob.nrrd", "wb").write(hdr + bytes(vox))
PY
expect 0 "" -- $VOXRAY render "$T/blob.nrrd" -o "$T/blob.png" --size 64x64 --backend cpu -q
python3 - "$T/blob.png" <<'PY' && ok || bad "the blob fills less than 45% of the frame's width"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
pos, idat = 8, b""
while pos < len(d):
    n, = struct.unpack(">I", d[pos:pos + 4]); t = d[pos + 4:pos + 8]; c = d[pos + 8:pos + 8 + n]; pos += 12 + n
    if t == b"IHDR": w, h = struct.unpack(">II", c[:8])
    if t == b"IDAT": idat += c
raw, stride, prev, xs = zlib.decompress(idat), w * 3, bytearray(w * 3), []
for y in range(h):
    f = raw[y * (stride + 1)]; line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - 3] if x >= 3 else 0; b = prev[x]; c = prev[x - 3] if x >= 3 else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    xs += [x for x in range(w) if min(line[3 * x:3 * x + 3]) < 235]
    prev = line
sys.exit(0 if xs and (max(xs) - min(xs)) >= 0.45 * w else 1)
PY

# a long single frame says it is still rendering (threshold lowered for the test)
VOXRAY_PROGRESS_AFTER=0.05 $VOXRAY render "$T/orbs" -o "$T/slow.png" --size 200x200 --threads 1 --step 0.02 --backend cpu >/dev/null 2>"$T/err"
grep -q "rendering 200x200 on the cpu backend" "$T/err" && ok || bad "no progress line for a long frame: $(cat "$T/err")"
VOXRAY_PROGRESS_AFTER=0.05 $VOXRAY render "$T/orbs" -o "$T/slow.png" --size 200x200 --threads 1 --step 0.02 --backend cpu -q >/dev/null 2>"$T/err"
[ -s "$T/err" ] && bad "-q printed progress: $(cat "$T/err")" || ok

# bench render on the CPU: no CUDA-only e2e column, samples/s in millions
$VOXRAY bench render "$T/orbs" --size 16x16 --frames 2 --backend cpu >"$T/bench" 2>/dev/null
grep -E "^  orbs .* - +[0-9.]+ M " "$T/bench" >/dev/null && ok || bad "bench render on the CPU: $(tail -n 1 "$T/bench")"

# two sizes in one bench run: one row each (the scene is prepared once)
$VOXRAY bench render "$T/orbs" --size 16x16 --size 24x8 --frames 2 --backend cpu >"$T/bench" 2>/dev/null
[ "$(grep -cE "^  orbs .* - +[0-9.]+ M " "$T/bench")" = 2 ] && ok || bad "bench render with two sizes: $(cat "$T/bench")"

# bench fit --coarse: a missing or out-of-range level is refused before anything loads
expect 2 "--coarse needs a value" -- $VOXRAY bench fit "$T/orbs" "$T" --coarse
expect 2 "--coarse: 1 is outside" -- $VOXRAY bench fit "$T/orbs" "$T" --coarse 1
expect 2 "--coarse: 1 is outside" -- $VOXRAY bench fit "$T/orbs" "$T" --coarse 64,1
expect 2 "has an empty value" -- $VOXRAY bench fit "$T/orbs" "$T" --coarse 64,
expect 2 "has more than 4 values" -- $VOXRAY bench fit "$T/orbs" "$T" --coarse 8,16,32,64,128

# make-scene:NAME:RES builds the sparse scene in memory: the same image as its written form
$VOXRAY make-scene shell -o "$T/shell_sp" --res 40 --sparse >/dev/null 2>&1 || bad "make-scene shell --sparse"
expect 0 "" -- $VOXRAY render "$T/shell_sp" -o "$T/sp_file.png" --size 24x24 --backend cpu -q
expect 0 "" -- $VOXRAY render make-scene:shell:40 -o "$T/sp_mem.png" --size 24x24 --backend cpu -q
cmp -s "$T/sp_file.png" "$T/sp_mem.png" && ok || bad "make-scene:shell:40 renders unlike make-scene shell --sparse --res 40"
expect 1 "unknown scene" -- $VOXRAY render make-scene:nope:40 -o "$T/x.png"
expect 1 "make-scene:NAME:RES" -- $VOXRAY render make-scene:shell -o "$T/x.png"
expect 1 "outside" -- $VOXRAY render make-scene:shell:5000 -o "$T/x.png"
expect 1 "1024" -- $VOXRAY render make-scene:cloud:2048 -o "$T/x.png"

# make install PREFIX=...: the copied binary runs, has its man page, and `view` finds the
# installed shaders from any folder (under Xvfb when there is one)
BUILD=${BUILD:-build}
if [ "$VOXRAY" = "$BUILD/voxray" ] && command -v make >/dev/null 2>&1; then
    make -s --no-print-directory install PREFIX="$T/inst" BUILD="$BUILD" >/dev/null 2>&1 && ok || bad "make install PREFIX=$T/inst"
    "$T/inst/bin/voxray" --version >/dev/null 2>&1 && ok || bad "installed voxray does not run"
    [ -s "$T/inst/share/man/man1/voxray.1" ] && [ -s "$T/inst/share/voxray/shaders/view.frag" ] && ok || bad "man page or shaders not installed"
    if command -v xvfb-run >/dev/null 2>&1 && ! "$T/inst/bin/voxray" view --help 2>&1 | grep -q "built without"; then
        (cd / && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 120 xvfb-run -a -s "-screen 0 640x480x24" "$T/inst/bin/voxray" view "$T/orbs" --size 64x48 \
            --frames 1 --backend cpu >/dev/null 2>"$T/view.err") && ok || bad "installed view: $(tail -n 1 "$T/view.err")"
    fi
fi

ls "$T" | grep -q 'tmp\.' && bad "temporary files left behind: $(ls "$T" | grep 'tmp\.')" || ok
rm -rf "$T"
echo "harden: $pass passed, $fail failed"
[ $fail -eq 0 ]
