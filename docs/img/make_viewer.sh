#!/bin/sh
# make_viewer.sh - docs/img/viewer.png: `voxray view` screenshots (--screenshot, the
# displayed framebuffer) of the phantom in the four modes, colour / depth / opacity /
# occupancy cells, side by side. Run from the repository root after `make`.
set -e
V=${VOXRAY:-build/voxray}
T=$(mktemp -d)
export LIBGL_ALWAYS_SOFTWARE=1
$V make-scene phantom -o $T/phantom --res 256 >/dev/null
for m in colour depth opacity occupancy; do
    xvfb-run -a -s "-screen 0 1280x1024x24" $V view $T/phantom --backend cpu --size 200x200 --frames 1 \
        --mode $m --azimuth 30 --elevation 25 --distance 3.6 --screenshot $T/$m.png 2>/dev/null
done
python3 docs/img/collage.py docs/img/viewer.png $T/colour.png $T/depth.png $T/opacity.png $T/occupancy.png
rm -rf "$T"
echo "wrote docs/img/viewer.png"
