#!/bin/sh
# deps-bundle.sh - gathers the headers and shared libraries that a GPU machine without
# Debian's -dev packages lacks (cJSON, cmocka, stb, libzip and its libbz2, zlib, and
# NanoVDB's header-only library for .nvdb and the HDDA bench) into
# DIR (default .deps, ignored by git), so `make DEPS=DIR NO_VIEWER=1` builds there.
# Called by `make deps-bundle`; carry DIR to the machine along with the tree.
set -e
D=${1:-.deps}
rm -rf "$D"
mkdir -p "$D/include/cjson" "$D/include/stb" "$D/lib"
sh "$(dirname "$0")/install-deps.sh"
cp /usr/include/cjson/cJSON.h "$D/include/cjson/"
cp /usr/include/cmocka.h "$D/include/"
cp /usr/include/stb/stb_image.h /usr/include/stb/stb_image_write.h "$D/include/stb/"
cp -r /usr/include/nanovdb "$D/include/"
cp /usr/include/zip.h /usr/include/zlib.h /usr/include/zconf.h "$D/include/" 2>/dev/null || true
for h in zipconf.h zconf.h; do
    f=$(ls /usr/include/$h /usr/include/*-linux-gnu/$h 2>/dev/null | head -n 1)
    [ -n "$f" ] && cp "$f" "$D/include/"
done
L=/usr/lib/$(gcc -dumpmachine)
for lib in libcjson.so.1 libcmocka.so.0 libzip.so.4 libz.so.1; do
    src=$(ls "$L/$lib" "/lib/$(gcc -dumpmachine)/$lib" 2>/dev/null | head -n 1)
    [ -n "$src" ] || { echo "deps-bundle: $lib not found" >&2; exit 1; }
    cp -L "$src" "$D/lib/$lib"
    ln -sf "$lib" "$D/lib/${lib%%.so*}.so"
done
cp -L "/lib/$(gcc -dumpmachine)/libbz2.so.1.0" "$D/lib/" 2>/dev/null || true
echo "deps-bundle: $(du -sh "$D" | cut -f1) in $D"
