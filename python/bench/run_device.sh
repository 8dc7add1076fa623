#!/bin/sh
# run_device.sh - the Python package's GPU checks on a machine with a GPU, torch and nvcc
# but no network: builds build/libvoxray.so and build/voxray (against .deps from
# `make deps-bundle` when Debian's -dev packages are absent), installs numpy / pytest
# from .whl when missing (see the README), then runs python/tests (CUDA cases included)
# and/or python/bench/bench_torch.py.
#   sh python/bench/run_device.sh test            # build + pytest
#   sh python/bench/run_device.sh bench [ARGS]    # build + benchmark tables
#   sh python/bench/run_device.sh all [ARGS]      # both
set -u
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
what=${1:-all}
[ $# -gt 0 ] && shift
$PY -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| CUDA', torch.version.cuda, '| GPU:', torch.cuda.is_available() and torch.cuda.get_device_name(0))" || exit 1
for m in numpy pytest; do
    $PY -c "import $m" 2>/dev/null && continue
    echo "run_device: installing $m from .whl"
    $PY -m pip install -q --no-index --find-links .whl "$m" || echo "run_device: no $m wheel for this Python"
done
deps=""
[ -d .deps ] && [ ! -f /usr/include/cjson/cJSON.h ] && deps="DEPS=.deps"
build() { make -j"$(nproc)" $deps NO_VIEWER=1 build/voxray lib >/tmp/voxray_make.log 2>&1; }
# objects left from a build before -fPIC cannot go into the library: rebuild them once
build || { echo "run_device: build failed, retrying from clean"; make clean >/dev/null; build; } || {
    tail -30 /tmp/voxray_make.log; exit 1; }
echo "run_device: built build/libvoxray.so and build/voxray ($deps)"
rc=0
if [ "$what" = test ] || [ "$what" = all ]; then
    echo "== python/tests"
    VOXRAY_LIB=build/libvoxray.so $PY -m pytest -q -rs -p no:cacheprovider python/tests || rc=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    echo "== python/bench/bench_torch.py $*"
    $PY python/bench/bench_torch.py "$@" || rc=1
fi
exit $rc
