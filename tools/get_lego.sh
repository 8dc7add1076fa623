#!/bin/sh
# get_lego.sh - copy the NeRF-synthetic lego scene (100 train, 100 val, 200 test views and
# their transforms) out of a local git mirror of luo-ziyuan/CopyRNeRF-code (issue 14) into
# DEST (an ignored folder such as .lego/; the photos never enter this repository).
# Usage: tools/get_lego.sh DEST [GIT_DIR]   (GIT_DIR default: the fetch tool's mirror)
set -eu
dest=${1:?usage: tools/get_lego.sh DEST [GIT_DIR]}
gitdir=${2:-/work/.mirror/luo-ziyuan+CopyRNeRF-code/repo}
commit=454f028b606be4eb69c629aa4019b501504fb12b
path=data/nerf_synthetic/lego
git --git-dir="$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null ||
    { echo "get_lego.sh: $gitdir has no commit $commit" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lego.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# (git archive may warn about blobs elsewhere in the tree that the mirror left out; its exit
# status and the checks below decide)
git --git-dir="$gitdir" archive -o "$tmp/lego.tar" "$commit" "$path"
tar -x -C "$tmp" -f "$tmp/lego.tar"
for s in train val test; do
    [ -f "$tmp/$path/transforms_$s.json" ] || { echo "get_lego.sh: $path/transforms_$s.json missing" >&2; exit 1; }
done
n=$(find "$tmp/$path" -name '*.png' | wc -l)
[ "$n" -ge 800 ] || { echo "get_lego.sh: only $n PNGs under $path (want 100 train, 100 val, 600 test)" >&2; exit 1; }
mkdir -p "$dest"
rm -f "$tmp/$path/.DS_Store"
cp -R "$tmp/$path/." "$dest/"
echo "get_lego.sh: $n PNGs and transforms_{train,val,test}.json in $dest"
