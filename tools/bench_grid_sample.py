#!/usr/bin/env python3
"""bench_grid_sample.py - PyTorch's grid_sample on the sizes `voxray bench kernels` uses
(RES^3 grid, 4 and 28 channels, random points, trilinear, border padding, align
corners), timed with CUDA events; prints one parseable line per channel count.
Called by src/bench_kernels.c on the device machine."""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--res", type=int, default=256)
    ap.add_argument("--points", type=int, default=1 << 22)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"torch is not importable: {e}", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("torch sees no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    for c in (4, 28):
        inp = torch.rand(1, c, a.res, a.res, a.res, device=dev) * 2 - 1
        pts = torch.rand(1, 1, 1, a.points, 3, device=dev) * 2 - 1
        gout = torch.rand(1, c, 1, 1, a.points, device=dev)

        def fwd():
            return F.grid_sample(inp, pts, mode="bilinear", padding_mode="border", align_corners=True)

        leaf = inp.clone().requires_grad_(True)

        def fwdbwd():
            out = F.grid_sample(leaf, pts, mode="bilinear", padding_mode="border", align_corners=True)
            (g,) = torch.autograd.grad(out, leaf, gout)
            return g

        res = []
        for fn in (fwd, fwdbwd):
            with torch.no_grad() if fn is fwd else torch.enable_grad():
                for _ in range(2):
                    fn()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(a.reps):
                    fn()
                e.record()
                torch.cuda.synchronize()
                res.append(s.elapsed_time(e) / a.reps)
        print(f"grid_sample C={c} fwd_ms={res[0]:.4f} fwdbwd_ms={res[1]:.4f}", flush=True)
        del inp, pts, gout, leaf
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
