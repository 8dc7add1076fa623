#!/bin/sh
# test_view.sh - `voxray view` under Xvfb with the CPU backend: scripted frames whose
# screenshot must equal `voxray render` pixel for pixel (within 1/255), orbit, resize,
# the four render modes, a scene written by `voxray fit`, shader errors, and a clear
# failure without a display.
# Run by tests/run_tests.sh (VOXRAY, BUILD set); prints "view: N passed, N failed".
VOXRAY=${VOXRAY:-build/voxray}
BUILD=${BUILD:-build}
# Under the sanitizer build, Mesa's llvmpipe driver (dlopen'ed, unloaded at exit) leaks
# a few hundred bytes that LeakSanitizer can only place in an "<unknown module>", so leak
# checking is off for the viewer runs; address and undefined-behaviour checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
T=$(mktemp -d /tmp/voxray-view-XXXXXX)
CMP=$T/png_compare
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
    [ -n "$KEEP" ] && { echo "kept $T"; echo "view: $pass passed, $fail failed"; exit 1; }
    rm -rf "$T"
    echo "view: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}

# Mesa's llvmpipe gives OpenGL 3.3 core under Xvfb; a fresh server per run, 24-bit.
export LIBGL_ALWAYS_SOFTWARE=1
# The command's own exit code, not xvfb-run's: xvfb-run exits non-zero when it cannot clean
# up its temporary folder (seen once in CI: "problem while cleaning up temporary directory").
xrun() {
    rm -f "$T/xrc"
    timeout 120 xvfb-run -a -s "-screen 0 1280x1024x24" sh -c '"$@"; echo $? >"$0"' "$T/xrc" "$@"
    xr=$?
    [ -s "$T/xrc" ] && return "$(cat "$T/xrc")"
    return $xr
}

if ! command -v xvfb-run >/dev/null 2>&1; then bad "xvfb-run not found (install xvfb xauth)"; finish; fi
if ! cc -O2 -o "$CMP" tests/png_compare.c -lm; then bad "building tests/png_compare.c"; finish; fi
if $VOXRAY view --help 2>&1 | grep -q "built without the viewer"; then
    bad "$VOXRAY was built without the viewer (libglfw3-dev missing at build time)"
    finish
fi
$VOXRAY make-scene orbs -o "$T/orbs" --res 40 >/dev/null || bad "make-scene orbs"
$VOXRAY make-scene phantom -o "$T/phantom" --res 40 >/dev/null || bad "make-scene phantom"

# same NAME VIEW_ARGS -- RENDER_ARGS: the viewer's screenshot equals the offline render
same() {
    name=$1; shift
    va=""
    while [ "$1" != "--" ]; do va="$va $1"; shift; done
    shift
    # shellcheck disable=SC2086
    if ! xrun $VOXRAY view $va --backend cpu --screenshot "$T/$name.view.png" >"$T/$name.log" 2>&1; then
        bad "$name: view failed"; cat "$T/$name.log"; return
    fi
    if ! $VOXRAY render "$@" --backend cpu -o "$T/$name.ref.png" -q 2>"$T/$name.rlog"; then
        bad "$name: render failed"; cat "$T/$name.rlog"; return
    fi
    $CMP "$T/$name.view.png" "$T/$name.ref.png" --tol 1 && ok || bad "$name: viewer frame differs from voxray render"
}

# ---- the displayed frame is the rendered frame -----------------------------------------
same frames "$T/orbs" --size 200x150 --frames 3 -- "$T/orbs" --size 200x150
same camera "$T/orbs" --size 160x160 --frames 2 --eye 1.5,0.7,2.2 --target 0,0,0 --fov 45 \
    -- "$T/orbs" --size 160x160 --eye 1.5,0.7,2.2 --target 0,0,0 --fov 45
same scalar "$T/phantom" --size 150x170 --frames 2 --preset ct-soft --background 1,1,1 \
    -- "$T/phantom" --size 150x170 --preset ct-soft --background 1,1,1
# 4 frames at 15 degrees per frame from azimuth 10: the last one is at azimuth 55
same orbit "$T/orbs" --size 180x120 --frames 4 --azimuth 10 --elevation 20 --orbit-speed 15 \
    -- "$T/orbs" --size 180x120 --azimuth 55 --elevation 20
# a resize halfway: the last frame is rendered at the new size
same resize "$T/orbs" --size 200x150 --frames 4 --resize 130x170 -- "$T/orbs" --size 130x170
# a sparse scene (8^3 bricks) in the window: the frame equals the render of the same bricks
if $VOXRAY make-scene orbs -o "$T/orbs-sparse" --res 40 --sparse >/dev/null 2>&1; then
    same sparse "$T/orbs-sparse" --size 160x120 --frames 2 -- "$T/orbs-sparse" --size 160x120
else bad "make-scene --sparse failed"; fi
grep -q "resized to framebuffer 130x170" "$T/resize.log" && ok || bad "resize: no resize line in the log"
# a scene written by `voxray fit` (a short CPU fit of the mic views at 100x100) opens in
# the viewer at its saved camera and shows what `voxray render` shows
MIC=${VX_MIC:-../shared/data/nerf_synthetic_mic}
if [ -f "$MIC/transforms_train.json" ]; then
    if $VOXRAY fit "$MIC" -o "$T/micfit" --backend cpu --downscale 8 --res 24 --iters 40 --batch 2048 \
        --val-every 0 >"$T/fit.log" 2>&1; then
        same fit "$T/micfit" --size 120x100 --frames 1 -- "$T/micfit" --size 120x100
        # and that frame is not just the white background
        $VOXRAY render "$T/micfit" --size 120x100 --density-scale 0 --backend cpu -o "$T/fit.empty.png" -q &&
            $CMP "$T/fit.view.png" "$T/fit.empty.png" --differ --tol 16 >/dev/null && ok ||
            bad "the fitted scene shows an empty frame"
    else
        bad "fit of $MIC failed"; tail -5 "$T/fit.log"
    fi
else
    echo "skipped: fit scene in the viewer: $MIC/transforms_train.json not found (../shared/data absent; set VX_MIC)"
fi
grep -q "display: cpu backend, frames uploaded with glTexSubImage2D" "$T/frames.log" && ok ||
    bad "the display path is not reported on stderr"

# ---- render modes ---------------------------------------------------------------------
for m in depth opacity occupancy; do
    if xrun $VOXRAY view "$T/orbs" --size 160x120 --frames 2 --mode $m --backend cpu \
        --screenshot "$T/mode-$m.png" >"$T/mode-$m.log" 2>&1; then ok; else bad "mode $m failed"; cat "$T/mode-$m.log"; fi
done
$VOXRAY render "$T/orbs" --size 160x120 --backend cpu -o "$T/mode-colour.png" --opacity "$T/opacity-ref.png" -q ||
    bad "render --opacity failed"
# opacity mode shows the bytes of `render --opacity X.png`
$CMP "$T/mode-opacity.png" "$T/opacity-ref.png" --tol 0 && ok || bad "opacity mode differs from render --opacity"
for m in depth occupancy; do
    $CMP "$T/mode-$m.png" "$T/mode-colour.png" --differ --tol 8 >/dev/null && ok || bad "mode $m looks like colour"
done
$CMP "$T/mode-depth.png" "$T/mode-opacity.png" --differ --tol 8 >/dev/null && ok || bad "depth mode looks like opacity"
xrun $VOXRAY view "$T/orbs" --frames 1 --mode 9 >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "is not one of colour" "$T/err" && ok || bad "--mode 9 not refused"

# ---- interactive: keys and mouse through xdotool ----------------------------------------
# Runs inside one Xvfb: start the viewer, drive it, press P after each step (the
# screenshot is the displayed framebuffer) and keep a copy per step.
cat >"$T/drive.sh" <<'EOF_DRIVE'
V=$1; T=$2; SCENE=$3; shift 3
$V view "$SCENE" --backend cpu --size 200x150 --screenshot "$T/i.png" "$@" >"$T/ilog" 2>&1 &
pid=$!
wid=$(timeout 20 xdotool search --sync --name "^voxray - " | head -n 1)
[ -n "$wid" ] || { echo "drive: no viewer window"; kill $pid; exit 1; }
shots() { grep -c "voxray: screenshot" "$T/ilog"; }
idle() { # until the title says the full-resolution frame is shown again
    i=0
    while xdotool getwindowname "$wid" | grep -q moving && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    sleep 0.3
}
snap() {
    idle
    n=$(shots); xdotool key --window "$wid" p
    i=0; while [ "$(shots)" -le "$n" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    cp "$T/i.png" "$T/$1"
}
drag() { # button dx: drag from the centre, reading the title while moving
    xdotool mousemove --window "$wid" 100 75 mousedown "$1"
    for k in 1 2 3 4 5 6 7 8; do
        xdotool mousemove --window "$wid" $((100 + k * $2)) $((75 + k)); sleep 0.04
        xdotool getwindowname "$wid" >>"$T/titles"
    done
    xdotool mouseup "$1"
    for k in 1 2 3; do xdotool getwindowname "$wid" >>"$T/titles"; sleep 0.05; done
}
snap start.png
xdotool key --window "$wid" 3; snap opacity.png
xdotool key --window "$wid" 1; drag 1 6; snap orbit.png
xdotool key --window "$wid" r; snap reset.png
drag 3 5; snap pan.png
xdotool key --window "$wid" r; xdotool click --window "$wid" 4 4 4; snap zoom.png
xdotool key --window "$wid" f; snap framed.png
xdotool key --window "$wid" r; xdotool keydown --window "$wid" w; sleep 0.4; xdotool keyup --window "$wid" w; snap fly.png
xdotool key --window "$wid" r b b; snap background.png
xdotool key --window "$wid" b b bracketright bracketright bracketright; snap coarse.png
xdotool key --window "$wid" bracketleft bracketleft bracketleft r; xdotool windowsize "$wid" 170 130
sleep 0.5; snap resized.png
xdotool key --window "$wid" Right Right Up; snap window.png
xdotool keydown shift; drag 1 4; xdotool keyup shift; snap shiftdrag.png
xdotool key --window "$wid" h Escape 2>/dev/null
i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
if kill -0 $pid 2>/dev/null; then echo "drive: Esc did not quit"; kill $pid; exit 1; fi
wait $pid
EOF_DRIVE
if ! command -v xdotool >/dev/null 2>&1; then
    bad "xdotool not found: the interactive checks need it (apt-get install xdotool)"
else
    for sc in orbs phantom; do
        rm -f "$T"/*.png.i "$T/titles"
        if xrun sh "$T/drive.sh" "$VOXRAY" "$T" "$T/$sc" >"$T/drive.log" 2>&1; then ok; else bad "$sc: interactive run"; cat "$T/drive.log" "$T/ilog"; continue; fi
        $VOXRAY render "$T/$sc" --size 200x150 --backend cpu -o "$T/iref.png" --opacity "$T/iop.png" -q || bad "render $sc"
        $CMP "$T/start.png" "$T/iref.png" >/dev/null && ok || bad "$sc: refined first frame differs from render"
        $CMP "$T/reset.png" "$T/iref.png" >/dev/null && ok || bad "$sc: R does not restore the starting camera"
        $CMP "$T/opacity.png" "$T/iop.png" --tol 0 >/dev/null && ok || bad "$sc: key 3 is not the opacity of render"
        $CMP "$T/framed.png" "$T/zoom.png" --differ --tol 2 >/dev/null && ok || bad "$sc: F did not reframe"
        for st in orbit pan zoom framed fly background coarse; do
            $CMP "$T/$st.png" "$T/iref.png" --differ --tol 2 >/dev/null && ok || bad "$sc: '$st' did not change the picture"
        done
        $VOXRAY render "$T/$sc" --size 170x130 --backend cpu -o "$T/iref2.png" -q || bad "render $sc 170x130"
        $CMP "$T/resized.png" "$T/iref2.png" >/dev/null && ok || bad "$sc: frame after a window resize differs from render"
        grep -q "(moving)" "$T/titles" && ok || bad "$sc: no reduced-resolution frame while dragging"
        grep -q "Esc  *quit" "$T/ilog" && ok || bad "$sc: H printed no help"
        # scalar: Shift + drag moves the window; rgba: it orbits
        $CMP "$T/shiftdrag.png" "$T/window.png" --differ --tol 2 >/dev/null && ok || bad "$sc: Shift + drag changed nothing"
        if [ $sc = phantom ]; then
            $CMP "$T/window.png" "$T/iref2.png" --differ --tol 2 >/dev/null && ok || bad "phantom: the window keys changed nothing"
            grep -q "window .*\.\." "$T/titles" && ok || bad "phantom: the title does not show the window"
        fi
    done
fi

# ---- failures are clear and quick -----------------------------------------------------
(unset DISPLAY WAYLAND_DISPLAY; timeout 20 $VOXRAY view "$T/orbs" --frames 1 --backend cpu) >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "no display available" "$T/err" && [ "$(grep -c . "$T/err")" -eq 1 ] && ok ||
    { bad "no display: exit $rc (want 1, one line)"; cat "$T/err"; }
(DISPLAY=:987; export DISPLAY; timeout 20 $VOXRAY view "$T/orbs" --frames 1 --backend cpu) >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "no display available" "$T/err" && ok || { bad "unreachable display: exit $rc (want 1)"; cat "$T/err"; }
mkdir -p "$T/badshaders"
cp shaders/view.vert "$T/badshaders/"
printf '#version 330 core\nout vec4 o;\nvoid main() { o = undefined_thing; }\n' >"$T/badshaders/view.frag"
VOXRAY_SHADERS="$T/badshaders" xrun $VOXRAY view "$T/orbs" --frames 1 --backend cpu >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "view.frag: compile failed" "$T/err" && ok || { bad "broken shader: exit $rc"; cat "$T/err"; }
xrun $VOXRAY view "$T/nothing-here" --frames 1 --backend cpu >/dev/null 2>"$T/err"
[ $? -eq 1 ] && [ "$(grep -c . "$T/err")" -eq 1 ] && ok || { bad "missing scene"; cat "$T/err"; }
$VOXRAY view "$T/orbs" --frames 0 >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q -- "--frames" "$T/err" && ok || bad "--frames 0 not refused"
$VOXRAY view "$T/orbs" --no-such-flag >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "no-such-flag" "$T/err" && ok || bad "unknown flag not refused"

finish
