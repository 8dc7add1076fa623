"""voxray from Python: the voxel renderer from NumPy and its kernels as PyTorch ops.

    import voxray
    scene = voxray.load("scenes/orbs")                   # or voxray.from_array(grid)
    img = voxray.render(scene, eye=(2, 1, 2), target=(0, 0, 0), fov=40, size=(320, 240))
    out = voxray.trilinear(feats, points)                # torch: (N,8,F), (N,3) -> (N,F)
    vals = voxray.grid_sample(grid, points)              # torch: (Z,Y,X,C), (M,3) -> (M,C)

Everything runs in build/libvoxray.so (src/voxray.h) through ctypes. NumPy is needed for
scenes; PyTorch only for trilinear / grid_sample (imported on first use), which also
work without NumPy."""
from ._lib import VoxrayError
from ._lib import path as library_path
try:
    from .scene import Frame, Scene, convert, cuda_available, from_array, load, render
except ImportError as _e:  # no NumPy: the torch ops still work; the scene API says why not
    if getattr(_e, "name", None) != "numpy":
        raise
    _why = str(_e)

    def _needs_numpy(*args, **kwargs):
        raise ImportError("voxray: scenes and rendering need NumPy (%s)" % _why)

    Frame = Scene = convert = cuda_available = from_array = load = render = _needs_numpy

__version__ = "0.1.0"
__all__ = ["VoxrayError", "Frame", "Scene", "load", "from_array", "render", "convert", "cuda_available",
           "trilinear", "grid_sample", "library_path"]


def __getattr__(name):
    # The torch ops load on first use, so NumPy-only users never import torch.
    if name in ("trilinear", "grid_sample", "ops"):
        import importlib
        ops = importlib.import_module(".ops", __name__)
        return ops if name == "ops" else getattr(ops, name)
    raise AttributeError("module 'voxray' has no attribute %r" % name)
