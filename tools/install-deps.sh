#!/bin/sh
# install-deps.sh - make sure the Debian packages voxray builds and tests with are
# present. As root it installs what is missing; otherwise it prints the apt-get line.
# Called by `make test` and `make demo`; CI runs it through them.
set -e
PKGS="gcc make pkg-config python3 python3-pip libstb-dev libcjson-dev libcmocka-dev zlib1g-dev libzip-dev
libglfw3-dev libgl-dev libgl1-mesa-dri xvfb xauth xdotool clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "voxray: missing Debian packages; run as root:" >&2
    echo "  apt-get update && apt-get install -y$missing" >&2
    exit 1
fi
echo "voxray: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
