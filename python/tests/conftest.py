"""pytest setup for the voxray package tests: import the package from this checkout
(python/voxray, which finds ../build/libvoxray.so) unless VOXRAY_TEST_INSTALLED=1 asks
for the installed one; make sure the library exists first."""
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SHARED = REPO.parent / "shared" / "data"

if os.environ.get("VOXRAY_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(HERE.parent))
    if "VOXRAY_LIB" not in os.environ and not (REPO / "build" / "libvoxray.so").is_file():
        pytest.exit("build/libvoxray.so is missing: run `make lib` first (or `make test-python`)", returncode=2)


def torch_cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.fixture
def shared_data():
    if not SHARED.is_dir():
        pytest.skip("../shared/data is not there")
    return SHARED
