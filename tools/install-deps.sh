#!/bin/sh
# install-deps.sh - the Debian packages (and the pinned glad2 generator) voxray builds and
# tests with. `install-deps.sh` installs what is missing (as root; else prints the
# apt-get line): `make deps`, `make demo` and .ci/run call it. `install-deps.sh --check`
# installs nothing: it names what `make test` lacks and fails; `make test` calls it.
set -e
PKGS="gcc make pkg-config python3 python3-pip libstb-dev libcjson-dev libcmocka-dev zlib1g-dev libzip-dev
libglfw3-dev libgl-dev libgl1-mesa-dri xvfb xauth xdotool"
FUZZ_PKGS="clang libclang-rt-14-dev" # tests/fuzz (CI), not `make test`
# .vdb and .nvdb support (optional: the build leaves it out without them; tests/test_vdb.sh skips);
# libopenvdb-dev's headers include Boost's without depending on libboost-dev
VDB_PKGS="g++ libopenvdb-dev libboost-dev python3-openvdb libopenvdb-tools libnanovdb-dev libnanovdb-tools"
# MPI runs (optional: `make MPI=1`; tests/test_mpi.sh skips without them)
MPI_PKGS="libopenmpi-dev openmpi-bin"
GLAD_VERSION=2.0.8                   # the viewer's GL loader generator (third_party/README.md)
PYTHON=${PYTHON:-python3}
check=0
[ "${1:-}" = "--check" ] && check=1
[ $check = 1 ] || PKGS="$PKGS $FUZZ_PKGS $VDB_PKGS $MPI_PKGS"

have_glad() { "$PYTHON" -c "import glad,sys; sys.exit(glad.__version__ != '$GLAD_VERSION')" 2>/dev/null; }

missing=""
if command -v dpkg-query >/dev/null 2>&1; then
    for p in $PKGS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
else
    echo "voxray: not a Debian system (no dpkg-query): cannot check the packages; see README.md" >&2
fi
glad_missing=0
have_glad || glad_missing=1

if [ $check = 1 ]; then
    [ -z "$missing" ] && [ $glad_missing = 0 ] && exit 0
    [ -n "$missing" ] && echo "voxray: make test needs these Debian packages:$missing" >&2
    [ $glad_missing = 1 ] && echo "voxray: make test needs the Python package glad2==$GLAD_VERSION (the viewer's GL loader)" >&2
    echo "voxray: install them with 'make deps' (as root), or:" >&2
    [ -n "$missing" ] && echo "  apt-get update && apt-get install -y$missing" >&2
    [ $glad_missing = 1 ] && echo "  $PYTHON -m pip install 'glad2==$GLAD_VERSION'" >&2
    exit 1
fi

if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "voxray: missing Debian packages; run as root:" >&2
        echo "  apt-get update && apt-get install -y$missing" >&2
        exit 1
    fi
    echo "voxray: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if ! have_glad; then
    echo "voxray: installing glad2==$GLAD_VERSION (pip)"
    "$PYTHON" -m pip install -q "glad2==$GLAD_VERSION" 2>/dev/null ||
        "$PYTHON" -m pip install -q --break-system-packages "glad2==$GLAD_VERSION"
fi
