#!/bin/sh
# make_volumes.sh - renders the four real volumes of ../shared/data/volumes at 256x256 and
# joins them into docs/img/volumes.png (the collage in docs/FORMATS.md). Run from the
# repository root after `make`: sh docs/img/make_volumes.sh
set -e
V=${VOXRAY:-build/voxray}
D=../shared/data/volumes
T=$(mktemp -d)
$V render $D/FLAIR.nrrd -o $T/1.png --size 256x256 --distance 300 -q
$V render $D/ch2bet.nii.gz -o $T/2.png --size 256x256 --distance 330 -q
$V render $D/skull_2.9.inr -o $T/3.png --size 256x256 --window 2.6,5.5 --distance 430 -q
$V render $D/brainsmall.den -o $T/4.png --size 256x256 --spacing 2,2,1.95 \
    --eye 300,70,370 --target 127,127,81 --up 0,-1,0 --fov 40 -q
python3 docs/img/collage.py docs/img/volumes.png $T/1.png $T/2.png $T/3.png $T/4.png
rm -rf "$T"
echo "wrote docs/img/volumes.png"
