"""The torch ops voxray.trilinear and voxray.grid_sample: against NumPy references and
torch's grid_sample, torch.library.opcheck, gradcheck / gradgradcheck in float64 on the
CPU, torch.compile(fullgraph=True), the errors for bad inputs; CUDA when torch sees a GPU
(skipped, visibly, otherwise)."""
import pytest

torch = pytest.importorskip("torch")
try:
    import numpy as np
except ImportError:  # the device may lack NumPy: the NumPy references skip, the rest runs
    np = None
import torch.nn.functional as F  # noqa: E402

import voxray  # noqa: E402

from conftest import torch_cuda  # noqa: E402

needs_numpy = pytest.mark.skipif(np is None, reason="NumPy is not installed: NumPy reference skipped")
needs_cuda = pytest.mark.skipif(not torch_cuda(), reason="no CUDA device visible to torch: CUDA op tests skipped")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def cell_inputs(n, f, dtype=torch.float32, device="cpu", seed=0):
    g = _gen(seed)
    feats = torch.randn(n, 8, f, generator=g, dtype=torch.float64).to(dtype)
    points = (torch.rand(n, 3, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
    return feats.to(device), points.to(device)


def grid_inputs(shape, m, dtype=torch.float32, device="cpu", seed=0, spread=1.0):
    g = _gen(seed)
    grid = torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)
    points = ((torch.rand(m, 3, generator=g, dtype=torch.float64) * 2 - 1) * spread).to(dtype)
    return grid.to(device), points.to(device)


def trilinear_numpy(feats, points):
    """The cell-form op as written in the tutorial: corner k = 4ix + 2iy + iz."""
    feats, points = np.asarray(feats, np.float64), np.asarray(points, np.float64)
    u, v, w = [(points[:, a] + 1) / 2 for a in range(3)]
    out = np.zeros((feats.shape[0], feats.shape[2]))
    for k in range(8):
        ix, iy, iz = (k >> 2) & 1, (k >> 1) & 1, k & 1
        wk = (u if ix else 1 - u) * (v if iy else 1 - v) * (w if iz else 1 - w)
        out += wk[:, None] * feats[:, k]
    return out


def gather_numpy(grid, points):
    """Trilinear, align corners, border clamp; grid (Z, Y, X, C), points (x, y, z)."""
    grid, points = np.asarray(grid, np.float64), np.asarray(points, np.float64)
    nz, ny, nx, _ = grid.shape
    idx = []
    for a, n in zip(range(3), (nx, ny, nz)):
        x = np.clip((points[:, a] + 1) / 2 * (n - 1), 0, n - 1)
        i0 = np.minimum(np.floor(x).astype(int), n - 2)
        idx.append((i0, x - i0))
    (x0, fx), (y0, fy), (z0, fz) = idx
    out = 0
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                w = (fz if dz else 1 - fz) * (fy if dy else 1 - fy) * (fx if dx else 1 - fx)
                out = out + w[:, None] * grid[z0 + dz, y0 + dy, x0 + dx]
    return out


def torch_grid_sample(grid, points):
    m = points.shape[0]
    return F.grid_sample(grid.permute(3, 0, 1, 2)[None], points.view(1, 1, 1, m, 3), mode="bilinear",
                         padding_mode="border", align_corners=True)[0, :, 0, 0].T


# ---- forward agreement -------------------------------------------------------------------

@needs_numpy
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n,f", [(1, 1), (37, 3), (1000, 32), (257, 20)])
def test_trilinear_matches_numpy(device, n, f):
    feats, points = cell_inputs(n, f, device=device, seed=n + f)
    out = voxray.trilinear(feats, points)
    assert out.shape == (n, f) and out.dtype == torch.float32 and out.device.type == device
    np.testing.assert_allclose(out.cpu().numpy(), trilinear_numpy(feats.cpu(), points.cpu()), rtol=1e-5, atol=1e-5)


def test_trilinear_corners_pick_their_feature():
    feats, _ = cell_inputs(8, 5, seed=3)
    corners = torch.tensor([[(k >> 2) & 1, (k >> 1) & 1, k & 1] for k in range(8)], dtype=torch.float32) * 2 - 1
    out = voxray.trilinear(feats, corners)
    torch.testing.assert_close(out, feats[torch.arange(8), torch.arange(8)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,spread", [((5, 6, 7, 4), 1.0), ((4, 3, 9, 3), 1.3), ((2, 2, 2, 28), 1.0),
                                          ((16, 8, 4, 1), 1.5)])
def test_grid_sample_matches_torch_and_numpy(device, shape, spread):
    grid, points = grid_inputs(shape, 500, device=device, seed=sum(shape), spread=spread)
    out = voxray.grid_sample(grid, points)
    assert out.shape == (500, shape[3])
    torch.testing.assert_close(out, torch_grid_sample(grid, points), rtol=1e-5, atol=1e-5)
    if np is not None:
        np.testing.assert_allclose(out.cpu().numpy(), gather_numpy(grid.cpu(), points.cpu()), rtol=1e-5, atol=1e-5)


def test_grid_sample_backward_matches_torch():
    grid, points = grid_inputs((6, 5, 4, 4), 300, seed=11, spread=1.2)
    g1 = grid.clone().requires_grad_()
    g2 = grid.clone().requires_grad_()
    w = torch.randn(300, 4, generator=_gen(2))
    (voxray.grid_sample(g1, points) * w).sum().backward()
    (torch_grid_sample(g2, points) * w).sum().backward()
    torch.testing.assert_close(g1.grad, g2.grad, rtol=1e-5, atol=1e-5)


def test_empty_inputs():
    feats, points = cell_inputs(0, 4)
    assert voxray.trilinear(feats, points).shape == (0, 4)
    grid, pts = grid_inputs((3, 3, 3, 2), 0)
    assert voxray.grid_sample(grid, pts).shape == (0, 2)


# ---- torch.library.opcheck, gradcheck ------------------------------------------------------

def _opcheck(op, args):
    result = torch.library.opcheck(op, args)
    assert all(v == "SUCCESS" for v in result.values()), result


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    dtypes = [torch.float32] + ([torch.float64] if device == "cpu" else [])
    for dt in dtypes:
        feats, points = cell_inputs(23, 6, dtype=dt, device=device, seed=5)
        _opcheck(voxray.ops._trilinear, (feats, points))
        _opcheck(voxray.ops._trilinear, (feats.requires_grad_(), points))
        _opcheck(voxray.ops._trilinear_backward, (torch.randn(23, 6, dtype=dt, device=device), points))
        grid, pts = grid_inputs((4, 5, 3, 4), 40, dtype=dt, device=device, seed=6, spread=1.2)
        _opcheck(voxray.ops._grid_gather, (grid, pts))
        _opcheck(voxray.ops._grid_gather, (grid.requires_grad_(), pts))
        _opcheck(voxray.ops._grid_scatter, (torch.randn(40, 4, dtype=dt, device=device), pts, [4, 5, 3, 4], False))


def test_gradcheck_trilinear_float64():
    feats, points = cell_inputs(17, 5, dtype=torch.float64, seed=7)
    feats.requires_grad_()
    assert torch.autograd.gradcheck(voxray.trilinear, (feats, points))
    assert torch.autograd.gradgradcheck(voxray.trilinear, (feats, points))


@pytest.mark.parametrize("shape", [(3, 4, 5, 2), (4, 4, 4, 4), (2, 3, 2, 1)])
def test_gradcheck_grid_sample_float64(shape):
    grid, points = grid_inputs(shape, 30, dtype=torch.float64, seed=8, spread=1.2)
    grid.requires_grad_()
    assert torch.autograd.gradcheck(voxray.grid_sample, (grid, points))
    assert torch.autograd.gradgradcheck(voxray.grid_sample, (grid, points))


@needs_cuda
def test_gradcheck_cuda_float32():
    """float32 finite differences with a wide step: the ops are linear in feats / grid."""
    kw = dict(eps=1e-2, atol=1e-2, rtol=1e-2, nondet_tol=1e-5, fast_mode=True)
    feats, points = cell_inputs(19, 8, device="cuda", seed=9)
    assert torch.autograd.gradcheck(voxray.trilinear, (feats.requires_grad_(), points), **kw)
    grid, pts = grid_inputs((3, 4, 5, 4), 25, device="cuda", seed=9, spread=1.2)
    assert torch.autograd.gradcheck(voxray.grid_sample, (grid.requires_grad_(), pts), **kw)


# ---- torch.compile --------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph(backend):
    torch._dynamo.reset()
    feats, points = cell_inputs(64, 8, seed=10)
    grid, pts = grid_inputs((5, 5, 5, 4), 64, seed=10)

    def f(feats, points, grid, pts):
        a = voxray.trilinear(feats, points)
        b = voxray.grid_sample(grid, pts)
        # means, so that the exponent is O(1): with sums it was ~79, and a float32 sum taken
        # in another order (inductor's vectorised reduction on another CPU) moved exp() by
        # 8e-6 relative, past assert_close's 1.3e-6 (CI, session 22)
        return (a.square().mean() + (b * 3).mean()).exp()

    fc = torch.compile(f, fullgraph=True, backend=backend)
    args = [feats.requires_grad_(), points, grid.requires_grad_(), pts]
    ref = f(*args)
    gref = torch.autograd.grad(ref, [args[0], args[2]])
    got = fc(*args)
    g = torch.autograd.grad(got, [args[0], args[2]])
    torch.testing.assert_close(got, ref)
    torch.testing.assert_close(g[0], gref[0])
    torch.testing.assert_close(g[1], gref[1])


# ---- bad inputs ------------------------------------------------------------------------------

def test_bad_shapes_dtypes_devices():
    feats, points = cell_inputs(4, 3)
    with pytest.raises(ValueError, match=r"feats must be \(N, 8, F\)"):
        voxray.trilinear(feats[:, :7], points)
    with pytest.raises(ValueError, match=r"points must be \(N, 3\)"):
        voxray.trilinear(feats, points[:, :2])
    with pytest.raises(ValueError, match="N = 4 but points has 3"):
        voxray.trilinear(feats, points[:3])
    with pytest.raises(TypeError, match="float32"):
        voxray.trilinear(feats.double(), points)
    with pytest.raises(TypeError, match="float32"):
        voxray.trilinear(feats.half(), points.half())
    with pytest.raises(TypeError, match="torch.Tensor"):
        voxray.trilinear(feats.tolist(), points)
    with pytest.raises(ValueError, match="different devices"):
        voxray.trilinear(feats, points.to("meta"))
    with pytest.raises(ValueError, match="CPU or a CUDA device"):
        voxray.trilinear(feats.to("meta"), points.to("meta"))
    grid, pts = grid_inputs((3, 3, 3, 2), 5)
    with pytest.raises(ValueError, match=r"\(Z, Y, X, C\)"):
        voxray.grid_sample(grid[0], pts)
    with pytest.raises(ValueError, match="at least 2 samples per axis"):
        voxray.grid_sample(grid[:1], pts)
    with pytest.raises(ValueError, match=r"points must be \(M, 3\)"):
        voxray.grid_sample(grid, pts.T)
    with pytest.raises(TypeError, match="float16 grid is supported on CUDA only"):
        voxray.grid_sample(grid.half(), pts)
    with pytest.raises(TypeError, match="both be float32"):
        voxray.grid_sample(grid, pts.double())


def test_points_get_no_gradient():
    feats, points = cell_inputs(4, 3)
    out = voxray.trilinear(feats.requires_grad_(), points.requires_grad_())
    with pytest.raises(RuntimeError, match="no gradient with respect to points"):
        out.sum().backward()


@needs_cuda
def test_cuda_float64_is_refused():
    feats, points = cell_inputs(4, 3, dtype=torch.float64, device="cuda")
    with pytest.raises(TypeError, match="CPU only"):
        voxray.trilinear(feats, points)


# ---- CUDA specifics ----------------------------------------------------------------------------

@needs_cuda
def test_cuda_matches_cpu_fw_bw():
    feats, points = cell_inputs(5000, 32, seed=12)
    dout = torch.randn(5000, 32, generator=_gen(1))
    fc, pc, dc = feats.cuda().requires_grad_(), points.cuda(), dout.cuda()
    f0 = feats.clone().requires_grad_()
    o0 = voxray.trilinear(f0, points)
    o1 = voxray.trilinear(fc, pc)
    o0.backward(dout)
    o1.backward(dc)
    torch.testing.assert_close(o1.cpu(), o0, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fc.grad.cpu(), f0.grad, rtol=1e-6, atol=1e-6)

    grid, pts = grid_inputs((20, 18, 16, 28), 20000, seed=13, spread=1.1)
    g0, g1 = grid.clone().requires_grad_(), grid.cuda().requires_grad_()
    w = torch.randn(20000, 28, generator=_gen(3))
    (voxray.grid_sample(g0, pts) * w).sum().backward()
    (voxray.grid_sample(g1, pts.cuda()) * w.cuda()).sum().backward()
    torch.testing.assert_close(g1.grad.cpu(), g0.grad, rtol=1e-4, atol=1e-4)


@needs_cuda
def test_cuda_half_grid():
    grid, pts = grid_inputs((8, 9, 10, 4), 3000, device="cuda", seed=14)
    out = voxray.grid_sample(grid.half(), pts)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch_grid_sample(grid.half().float(), pts), rtol=1e-3, atol=1e-3)
    gh = grid.half().requires_grad_()
    voxray.grid_sample(gh, pts).sum().backward()
    assert gh.grad.dtype == torch.float16


@needs_cuda
def test_cuda_runs_on_the_current_stream():
    feats, points = cell_inputs(1 << 16, 32, device="cuda", seed=15)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = voxray.trilinear(feats, points)
        grid, pts = grid_inputs((32, 32, 32, 4), 1 << 16, device="cuda", seed=15)
        g = voxray.grid_sample(grid, pts)
    s.synchronize()
    torch.testing.assert_close(out.cpu(), voxray.trilinear(feats.cpu(), points.cpu()), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g, torch_grid_sample(grid, pts), rtol=1e-5, atol=1e-5)


@needs_cuda
def test_cuda_compile_fullgraph():
    torch._dynamo.reset()
    feats, points = cell_inputs(4096, 32, device="cuda", seed=16)
    fc = torch.compile(lambda a, b: voxray.trilinear(a, b).relu().sum(), fullgraph=True)
    x = feats.requires_grad_()
    y = fc(x, points)
    (g,) = torch.autograd.grad(y, x)
    x2 = feats.detach().clone().requires_grad_()
    y2 = voxray.trilinear(x2, points).relu().sum()
    (g2,) = torch.autograd.grad(y2, x2)
    torch.testing.assert_close(y, y2)
    torch.testing.assert_close(g, g2)
