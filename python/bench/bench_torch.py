#!/usr/bin/env python3
"""bench_torch.py - voxray's ops through PyTorch on a CUDA device, against PyTorch.

For the trilinear op (cell form) at the sizes of docs/BENCHMARKS.md and at small N
(launch-bound), and for the grid gather (256^3, C = 4 and 28, 4M points), prints:
voxray through torch (fw, fw+bw, and the backward op alone), the same kernels called
straight through the C API (ctypes, no torch op: the C-level time), PyTorch eager,
torch.compile of the eager code, and torch.nn.functional.grid_sample; GB/s against a
device copy measured in the same run; then `build/voxray bench kernels` for comparison.

Run from the repository root after `make lib` (no install needed):
    python3 python/bench/bench_torch.py [--quick] [--no-compile] [--no-cli]
Times are CUDA-event means over --iters calls after --warmup, one stream, so a call
whose host side is slower than its kernel is measured as the host side (the overhead)."""
import argparse
import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import voxray  # noqa: E402
from voxray import _lib, ops  # noqa: E402


DEV = "cuda"  # --cpu-smoke: "cpu", tiny sizes, wall-clock times (checks the script, not the numbers)


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def timeit(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    sync()
    if DEV != "cuda":
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t) / iters * 1e3
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / iters


def host_us(fn, iters=2000):
    """Host wall time per call (the op's Python + dispatch + ctypes cost when launch-bound)."""
    for _ in range(50):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    dt = time.perf_counter() - t
    sync()
    return dt / iters * 1e6


def copy_gbs(args):
    n = (1 << 30) // 4 if DEV == "cuda" else (1 << 24)
    src = torch.empty(n, device=DEV).uniform_()
    dst = torch.empty_like(src)
    ms = timeit(lambda: dst.copy_(src), args.iters, args.warmup)
    del src, dst
    return 2 * n * 4 / ms / 1e6


# ---- the PyTorch versions to compare with ------------------------------------------------------

def trilinear_eager(feats, points):
    """The tutorial op in plain torch: weights (N, 8), corner k = 4ix + 2iy + iz."""
    u, v, w = ((points + 1) * 0.5).unbind(1)
    wx = torch.stack([1 - u, u], 1)[:, :, None, None]
    wy = torch.stack([1 - v, v], 1)[:, None, :, None]
    wz = torch.stack([1 - w, w], 1)[:, None, None, :]
    weights = (wx * wy * wz).reshape(-1, 8)
    return (weights[:, :, None] * feats).sum(1)


def grid_sample_torch(grid_ncdhw, points):
    m = points.shape[0]
    out = F.grid_sample(grid_ncdhw, points.view(1, 1, 1, m, 3), mode="bilinear", padding_mode="border",
                        align_corners=True)
    return out[0, :, 0, 0]  # (C, M)


def fw_bw(fn, x, *rest, dout):
    def run():
        x.grad = None
        fn(x, *rest).backward(dout)
    return run


def c_trilinear(backward, a, points, out, n, f):
    fn = _lib.lib.voxray_trilinear_backward if backward else _lib.lib.voxray_trilinear_forward
    dev, stream = (_lib.CUDA, torch.cuda.current_stream().cuda_stream) if DEV == "cuda" else (_lib.HOST, None)
    args = (dev, _lib.F32, a.data_ptr(), points.data_ptr(), out.data_ptr(), n, f, stream)

    def run():
        if fn(*args):
            raise voxray.VoxrayError(_lib.last_error())
    return run


def c_gather(grid, dtype, pts, out, desc):
    dev, stream = (_lib.CUDA, torch.cuda.current_stream().cuda_stream) if DEV == "cuda" else (_lib.HOST, None)
    args = (dev, dtype, ctypes.byref(desc), grid.data_ptr(), pts.data_ptr(), pts.shape[0], out.data_ptr(),
            stream)

    def run():
        if _lib.lib.voxray_grid_gather(*args):
            raise voxray.VoxrayError(_lib.last_error())
    return run


def fmt(x, w=9, p=4):
    return ("%*.*f" % (w, p, x)) if x is not None else " " * (w - 1) + "-"


# ---- trilinear ----------------------------------------------------------------------------------

def bench_trilinear(args, copy):
    sizes = [(1024, 32), (16384, 32), (80000, 256), (1 << 21, 32)]
    if args.quick:
        sizes = [(1024, 32), (1 << 21, 32)]
    if DEV != "cuda":
        sizes = [(1024, 32), (4096, 8)]
    print("\ntrilinear op (cell form), float32; ms per call (CUDA events, mean of %d)" % args.iters)
    print("  %-18s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s" % (
        "N x F", "vx fw", "vx fw+bw", "vx bw op", "C fw", "C bw", "eager fw", "eager f+b", "comp fw", "comp f+b",
        "fw/C", "bw/C", "host us", "C hostus"))
    notes = []
    compiled = torch.compile(trilinear_eager, fullgraph=True, dynamic=False) if args.compile else None
    for n, f in sizes:
        g = torch.Generator(device=DEV).manual_seed(n)
        feats = torch.randn(n, 8, f, device=DEV, generator=g)
        points = torch.rand(n, 3, device=DEV, generator=g) * 2 - 1
        dout = torch.randn(n, f, device=DEV, generator=g)
        out = torch.empty(n, f, device=DEV)
        dfeats = torch.empty(n, 8, f, device=DEV)
        # the op against the eager formula before timing anything
        torch.testing.assert_close(voxray.trilinear(feats, points), trilinear_eager(feats, points), rtol=1e-4,
                                   atol=1e-4)
        it, wu = args.iters, args.warmup
        vx_fw = timeit(lambda: voxray.trilinear(feats, points), it, wu)
        x = feats.clone().requires_grad_()
        vx_fb = timeit(fw_bw(voxray.trilinear, x, points, dout=dout), it, wu)
        vx_bw = timeit(lambda: ops._trilinear_backward(dout, points), it, wu)
        c_fw = timeit(c_trilinear(False, feats, points, out, n, f), it, wu)
        c_bw = timeit(c_trilinear(True, dout, points, dfeats, n, f), it, wu)
        e_fw = timeit(lambda: trilinear_eager(feats, points), it, wu)
        e_fb = timeit(fw_bw(trilinear_eager, x, points, dout=dout), it, wu)
        k_fw = k_fb = None
        if compiled is not None:
            with torch.no_grad():
                k_fw = timeit(lambda: compiled(feats, points), it, wu)
            k_fb = timeit(fw_bw(compiled, x, points, dout=dout), it, wu)
        host = host_us(lambda: voxray.trilinear(feats, points))
        c_host = host_us(c_trilinear(False, feats, points, out, n, f))
        print("  %-18s %s %s %s %s %s %s %s %s %s %8.3f %8.3f %8.1f %8.1f" % (
            "%d x %d" % (n, f), fmt(vx_fw), fmt(vx_fb), fmt(vx_bw), fmt(c_fw), fmt(c_bw), fmt(e_fw), fmt(e_fb),
            fmt(k_fw), fmt(k_fb), vx_fw / c_fw, vx_bw / c_bw, host, c_host))
        moved = (n * 8 * f + n * 3 + n * f) * 4
        notes.append("  %-18s fw %7.0f GB/s (%5.1f%% of copy), bw op %7.0f GB/s (%5.1f%%); C-level fw %5.1f%%, "
                     "bw %5.1f%%" % ("%d x %d" % (n, f), moved / vx_fw / 1e6, 100 * moved / vx_fw / 1e6 / copy,
                                     moved / vx_bw / 1e6, 100 * moved / vx_bw / 1e6 / copy,
                                     100 * moved / c_fw / 1e6 / copy, 100 * moved / c_bw / 1e6 / copy))
        del feats, points, dout, out, dfeats, x
        torch.cuda.empty_cache()
    print("  bandwidth (bytes: feats + points + out, each once; copy %.0f GB/s):" % copy)
    for line in notes:
        print(line)
    print("  vx = voxray.trilinear through torch; vx bw op = its backward op alone; C = the same kernel through the "
          "C API (ctypes);\n  eager / comp = the tutorial formula in torch, eager and torch.compile; host us = host "
          "time per vx fw call,\n  C hostus = per C-API call (ctypes only): the difference is the torch op's own "
          "cost (dispatch, checks, allocation)")


# ---- grid gather ----------------------------------------------------------------------------------

def bench_grid(args):
    res, m = (128, 1 << 20) if args.quick else (256, 1 << 22)
    if DEV != "cuda":
        res, m = 16, 4096
    print("\ngrid gather, %d^3 grid, %d random points in [-1,1]^3, align corners, border; ms per call" % (res, m))
    print("  %-4s %-5s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s" % (
        "C", "store", "vx fw", "vx fw+bw", "C fw", "gs fw", "gs fw+bw", "comp fw", "comp f+b", "host us",
        "x gs fw", "x gs f+b"))
    compiled = torch.compile(grid_sample_torch, fullgraph=True, dynamic=False) if args.compile else None
    for c in (4, 28):
        g = torch.Generator(device=DEV).manual_seed(c)
        grid = torch.rand(res, res, res, c, device=DEV, generator=g)
        pts = torch.rand(m, 3, device=DEV, generator=g) * 2 - 1
        dout = torch.randn(m, c, device=DEV, generator=g)
        gt = grid.permute(3, 0, 1, 2).contiguous()[None]  # grid_sample's (N, C, D, H, W)
        torch.testing.assert_close(voxray.grid_sample(grid, pts), grid_sample_torch(gt, pts).T, rtol=1e-4, atol=1e-4)
        it, wu = args.iters, args.warmup
        gs_fw = timeit(lambda: grid_sample_torch(gt, pts), it, wu)
        gtx = gt.clone().requires_grad_()
        gs_fb = timeit(fw_bw(grid_sample_torch, gtx, pts, dout=dout.T), it, wu)
        k_fw = k_fb = None
        if compiled is not None:
            with torch.no_grad():
                k_fw = timeit(lambda: compiled(gt, pts), it, wu)
            k_fb = timeit(fw_bw(compiled, gtx, pts, dout=dout.T), it, wu)
        del gtx
        for store in ("f32", "f16") if DEV == "cuda" else ("f32",):
            gs = grid if store == "f32" else grid.half()
            out = torch.empty(m, c, device=DEV)
            desc = ops._grid_desc(res, res, res, c)
            vx_fw = timeit(lambda: voxray.grid_sample(gs, pts), it, wu)
            x = gs.clone().requires_grad_()
            vx_fb = timeit(fw_bw(voxray.grid_sample, x, pts, dout=dout), it, wu)
            c_fw = timeit(c_gather(gs, _lib.F32 if store == "f32" else _lib.F16, pts, out, desc), it, wu)
            host = host_us(lambda: voxray.grid_sample(gs, pts), iters=200)
            print("  %-4d %-5s %s %s %s %s %s %s %s %9.1f %7.2fx %7.2fx" % (
                c, store, fmt(vx_fw), fmt(vx_fb), fmt(c_fw), fmt(gs_fw), fmt(gs_fb), fmt(k_fw), fmt(k_fb), host,
                gs_fw / vx_fw, gs_fb / vx_fb))
            del x, out
        del grid, pts, dout, gt
        torch.cuda.empty_cache()
    print("  vx = voxray.grid_sample (grid (Z,Y,X,C)); C = the gather kernel through the C API; gs = "
          "F.grid_sample on float32 (N,C,D,H,W);\n  comp = torch.compile(F.grid_sample); fw+bw zeroes the "
          "gradient grid in both; x gs = speed-up over grid_sample")


def run_all(args, copy):
    # one compiled graph per size and grad mode: more than dynamo's default limit of 8
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)
    bench_trilinear(args, copy)
    bench_grid(args)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer and smaller sizes")
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="skip torch.compile")
    ap.add_argument("--no-cli", dest="cli", action="store_false", help="skip `build/voxray bench kernels`")
    ap.add_argument("--cpu-smoke", action="store_true", help="run every step on the CPU at tiny sizes (a check "
                    "of this script where there is no GPU; the numbers mean nothing)")
    args = ap.parse_args()
    if args.cpu_smoke:
        global DEV
        DEV = "cpu"
        run_all(args, copy_gbs(args))
        return
    if not torch.cuda.is_available():
        sys.exit("bench_torch.py: torch sees no CUDA device")
    ok, why = voxray.cuda_available()
    if not ok:
        sys.exit("bench_torch.py: %s was built without CUDA or sees no device: %s" % (voxray.library_path, why))
    props = torch.cuda.get_device_properties(0)
    print("device: %s (%d SMs, %.0f GiB); torch %s (CUDA %s); voxray library %s" % (
        props.name, props.multi_processor_count, props.total_memory / 2**30, torch.__version__, torch.version.cuda,
        voxray.library_path))
    copy = copy_gbs(args)
    print("device-to-device copy (torch, 1 GiB): %.0f GB/s (bytes read + written)" % copy)
    run_all(args, copy)
    cli = REPO / "build" / "voxray"
    if args.cli and cli.is_file():
        print("\n== %s bench kernels (the C-level numbers, same machine)" % cli, flush=True)
        subprocess.run([str(cli), "bench", "kernels"], cwd=REPO, env=dict(os.environ))


if __name__ == "__main__":
    main()
