"""voxray's trilinear op and dense-grid gather as PyTorch custom ops (torch.library).

voxray.trilinear(feats, points) and voxray.grid_sample(grid, points) run the kernels of
kernels/trilinear.cu (CUDA tensors, on PyTorch's current stream) or the references of
src/trilinear_cpu.c (CPU tensors, float32 or float64) through the shared library; no
kernel is written here. Each op has a fake (meta) kernel, so torch.compile(fullgraph=True)
traces through it, and autograd registered with torch.library (double backward too: the
backward ops are each other's adjoints). Points get no gradient."""
from functools import lru_cache
from typing import List

import ctypes

import torch
from torch import Tensor

from . import _lib

__all__ = ["trilinear", "grid_sample"]

_DTYPES = {torch.float32: _lib.F32, torch.float64: _lib.F64}


def _stream(device):
    """PyTorch's current CUDA stream on device, as a raw cudaStream_t."""
    try:
        return torch._C._cuda_getCurrentRawStream(device.index)
    except AttributeError:  # an older torch without the raw getter
        return torch.cuda.current_stream(device).cuda_stream


def _run(fn, t, *args):
    """Call a voxray_* op entry point for tensor t's device; raise VoxrayError on failure."""
    if t.device.type == "cpu":
        rc = fn(_lib.HOST, *args, None)
    else:
        idx = t.device.index
        if idx != torch.cuda.current_device():
            with torch.cuda.device(idx):
                rc = fn(_lib.CUDA, *args, _stream(t.device))
        else:
            rc = fn(_lib.CUDA, *args, _stream(t.device))
    _lib.check(rc, fn.__name__)


def _aligned(t):
    """t contiguous and 16-byte aligned (the CUDA kernels load float4 / 4 x half)."""
    t = t.contiguous()
    if t.device.type == "cuda" and t.data_ptr() % 16:
        t = t.clone()
    return t


# ---- checks: wrong shapes, dtypes and devices fail here, with the argument's name -----------

def _check_device(name, t, *others):
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError("%s: tensors must be on the CPU or a CUDA device, got %s" % (name, t.device))
    for o in others:
        if o.device != t.device:
            raise ValueError("%s: tensors are on different devices (%s and %s)" % (name, t.device, o.device))


def _check_tensor(name, arg, t):
    if not isinstance(t, Tensor):
        raise TypeError("%s: %s must be a torch.Tensor, got %s" % (name, arg, type(t).__name__))


def _check_trilinear(feats, points):
    name = "voxray.trilinear"
    _check_tensor(name, "feats", feats)
    _check_tensor(name, "points", points)
    if feats.dim() != 3 or feats.shape[1] != 8:
        raise ValueError("%s: feats must be (N, 8, F), got shape %s" % (name, tuple(feats.shape)))
    if points.dim() != 2 or points.shape[1] != 3:
        raise ValueError("%s: points must be (N, 3), got shape %s" % (name, tuple(points.shape)))
    if points.shape[0] != feats.shape[0]:
        raise ValueError("%s: feats has N = %d but points has %d rows" % (name, feats.shape[0], points.shape[0]))
    _check_device(name, feats, points)
    if feats.dtype not in _DTYPES or points.dtype != feats.dtype:
        raise TypeError("%s: feats and points must both be float32 (or both float64 on the CPU), got %s and %s"
                        % (name, feats.dtype, points.dtype))
    if feats.dtype == torch.float64 and feats.device.type == "cuda":
        raise TypeError("%s: float64 runs on the CPU only; the CUDA kernels are float32" % name)


def _check_grid(grid, points):
    name = "voxray.grid_sample"
    _check_tensor(name, "grid", grid)
    _check_tensor(name, "points", points)
    if grid.dim() != 4:
        raise ValueError("%s: grid must be (Z, Y, X, C), channel last, got shape %s" % (name, tuple(grid.shape)))
    if min(grid.shape[:3]) < 2 or not 1 <= grid.shape[3] <= 64:
        raise ValueError("%s: grid (Z, Y, X, C) needs at least 2 samples per axis and 1..64 channels, got %s"
                         % (name, tuple(grid.shape)))
    if points.dim() != 2 or points.shape[1] != 3:
        raise ValueError("%s: points must be (M, 3) (x, y, z in [-1, 1]), got shape %s" % (name, tuple(points.shape)))
    _check_device(name, grid, points)
    if grid.dtype == torch.float16:
        if grid.device.type != "cuda":
            raise TypeError("%s: a float16 grid is supported on CUDA only" % name)
        if points.dtype != torch.float32:
            raise TypeError("%s: with a float16 grid, points must be float32, got %s" % (name, points.dtype))
    elif grid.dtype not in _DTYPES or points.dtype != grid.dtype:
        raise TypeError("%s: grid and points must both be float32 (or both float64 on the CPU; a float16 grid "
                        "on CUDA), got %s and %s" % (name, grid.dtype, points.dtype))
    if grid.dtype == torch.float64 and grid.device.type == "cuda":
        raise TypeError("%s: float64 runs on the CPU only; the CUDA kernels are float32" % name)


# ---- the cell-form trilinear op --------------------------------------------------------------

@torch.library.custom_op("voxray::trilinear", mutates_args=(), device_types=("cpu", "cuda"))
def _trilinear(feats: Tensor, points: Tensor) -> Tensor:
    feats, points = feats.contiguous(), points.contiguous()
    n, _, f = feats.shape
    out = torch.empty((n, f), dtype=feats.dtype, device=feats.device)
    if n and f:
        _run(_lib.lib.voxray_trilinear_forward, feats, _DTYPES[feats.dtype], feats.data_ptr(), points.data_ptr(),
             out.data_ptr(), n, f)
    return out


@torch.library.custom_op("voxray::trilinear_backward", mutates_args=(), device_types=("cpu", "cuda"))
def _trilinear_backward(dout: Tensor, points: Tensor) -> Tensor:
    dout, points = dout.contiguous(), points.contiguous()
    n, f = dout.shape
    dfeats = torch.empty((n, 8, f), dtype=dout.dtype, device=dout.device)
    if n and f:
        _run(_lib.lib.voxray_trilinear_backward, dout, _DTYPES[dout.dtype], dout.data_ptr(), points.data_ptr(),
             dfeats.data_ptr(), n, f)
    return dfeats


@_trilinear.register_fake
def _(feats, points):
    return feats.new_empty((feats.shape[0], feats.shape[2]))


@_trilinear_backward.register_fake
def _(dout, points):
    return dout.new_empty((dout.shape[0], 8, dout.shape[1]))


def _save_points(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])


def _no_points_grad(ctx, name):
    if ctx.needs_input_grad[1]:
        raise RuntimeError("%s: no gradient with respect to points (the kernels do not compute it); "
                           "pass points.detach()" % name)


def _trilinear_grad(ctx, grad):
    _no_points_grad(ctx, "voxray.trilinear")
    (points,) = ctx.saved_tensors
    return _trilinear_backward(grad, points), None


def _trilinear_backward_grad(ctx, grad):
    _no_points_grad(ctx, "voxray.trilinear (double backward)")
    (points,) = ctx.saved_tensors
    return _trilinear(grad, points), None


_trilinear.register_autograd(_trilinear_grad, setup_context=_save_points)
_trilinear_backward.register_autograd(_trilinear_backward_grad, setup_context=_save_points)


def trilinear(feats, points):
    """Trilinear interpolation inside one cell per point (the pytorch-cppcuda-tutorial op).

    feats: (N, 8, F), the features at the 8 corners of each point's cell, corner
    k = 4*ix + 2*iy + iz; points: (N, 3), the point's (x, y, z) in [-1, 1] inside its cell.
    Returns (N, F): sum_k w_k feats[:, k], w_k = (ix ? u : 1-u)(iy ? v : 1-v)(iz ? w : 1-w)
    with (u, v, w) = (points + 1) / 2. Differentiable in feats (not in points).
    float32 on CPU or CUDA, float64 on the CPU (for gradcheck)."""
    _check_trilinear(feats, points)
    return _trilinear(feats, points)


# ---- the dense-grid gather -----------------------------------------------------------------

@lru_cache(maxsize=64)
def _grid_desc(nz, ny, nx, nc):
    g = _lib.GridDesc()
    _lib.check(_lib.lib.voxray_grid_desc_unit(ctypes.byref(g), nx, ny, nz, nc), "grid desc")
    return g


def _grid_code(dtype):
    return _lib.F16 if dtype == torch.float16 else _DTYPES[dtype]


@torch.library.custom_op("voxray::grid_gather", mutates_args=(), device_types=("cpu", "cuda"))
def _grid_gather(grid: Tensor, points: Tensor) -> Tensor:
    grid, points = _aligned(grid), points.contiguous()
    nz, ny, nx, nc = grid.shape
    m = points.shape[0]
    out = torch.empty((m, nc), dtype=points.dtype, device=grid.device)
    if m:
        _run(_lib.lib.voxray_grid_gather, grid, _grid_code(grid.dtype), ctypes.byref(_grid_desc(nz, ny, nx, nc)),
             grid.data_ptr(), points.data_ptr(), m, out.data_ptr())
    return out


@torch.library.custom_op("voxray::grid_scatter", mutates_args=(), device_types=("cpu", "cuda"))
def _grid_scatter(dout: Tensor, points: Tensor, grid_shape: List[int], half: bool) -> Tensor:
    dout, points = _aligned(dout), points.contiguous()
    nz, ny, nx, nc = grid_shape
    dgrid = torch.zeros(grid_shape, dtype=torch.float16 if half else dout.dtype, device=dout.device)
    m = points.shape[0]
    if m:
        _run(_lib.lib.voxray_grid_scatter, dout, _grid_code(dgrid.dtype), ctypes.byref(_grid_desc(nz, ny, nx, nc)),
             dout.data_ptr(), points.data_ptr(), m, dgrid.data_ptr())
    return dgrid


@_grid_gather.register_fake
def _(grid, points):
    return points.new_empty((points.shape[0], grid.shape[3]))


@_grid_scatter.register_fake
def _(dout, points, grid_shape, half):
    return dout.new_empty(grid_shape, dtype=torch.float16 if half else dout.dtype)


def _gather_setup(ctx, inputs, output):
    grid, points = inputs
    ctx.save_for_backward(points)
    ctx.grid_shape = list(grid.shape)
    ctx.half = grid.dtype == torch.float16


def _gather_grad(ctx, grad):
    _no_points_grad(ctx, "voxray.grid_sample")
    (points,) = ctx.saved_tensors
    return _grid_scatter(grad, points, ctx.grid_shape, ctx.half), None


def _scatter_grad(ctx, grad):
    _no_points_grad(ctx, "voxray.grid_sample (double backward)")
    (points,) = ctx.saved_tensors
    return _grid_gather(grad, points), None, None, None


_grid_gather.register_autograd(_gather_grad, setup_context=_gather_setup)
_grid_scatter.register_autograd(_scatter_grad, setup_context=_save_points)


def grid_sample(grid, points):
    """Trilinear samples of a dense grid at world points, channel last.

    grid: (Z, Y, X, C), channel innermost (voxray's layout; torch's grid_sample input is
    (N, C, D, H, W)); points: (M, 3), (x, y, z) in [-1, 1], x along X, y along Y, z along Z.
    Returns (M, C). Equals torch.nn.functional.grid_sample(grid.permute(3, 0, 1, 2)[None],
    points.view(1, 1, 1, M, 3), mode='bilinear', padding_mode='border',
    align_corners=True)[0, :, 0, 0].T. Differentiable in grid (not in points).
    float32 on CPU or CUDA, float64 on the CPU (for gradcheck), and on CUDA a float16
    grid (float32 points and result; its gradient is accumulated in float16)."""
    _check_grid(grid, points)
    return _grid_gather(grid, points)
