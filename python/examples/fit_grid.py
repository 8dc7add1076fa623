#!/usr/bin/env python3
"""fit_grid.py - fit a tiny voxel grid with torch autograd through voxray.grid_sample,
then render it with voxray's renderer.

The target is a soft ball of density with a colour gradient, known only as a function
of position. A (R, R, R, 4) grid (density, r, g, b) starts at zero; every step samples
random points, compares voxray.grid_sample(grid, points) with the function there, and
lets Adam follow the gradient the op's backward (the grid scatter) returns. At the end
the fitted grid is rendered straight from memory (voxray.render on the array) next to
the target's render, and both are written as PPM images.

    python3 python/examples/fit_grid.py [--res 24] [--steps 200] [--device cpu|cuda] [--out fit]
"""
import argparse
import math
import time

import numpy as np
import torch

import voxray


def target(points):
    """Density 10 inside a ball of radius 0.6 (soft edge), colour from position."""
    r = points.norm(dim=1, keepdim=True)
    density = 10 * torch.sigmoid((0.6 - r) * 25)
    colour = (points + 1) * 0.5
    return torch.cat([density, colour], 1)


def write_ppm(path, img):
    h, w, _ = img.shape
    with open(path, "wb") as f:
        f.write(b"P6 %d %d 255\n" % (w, h))
        f.write((np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8).tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--res", type=int, default=24, help="grid resolution per axis")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=8192, help="random points per step")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default="fit", help="prefix of the PPM images written")
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device(args.device)
    grid = torch.zeros(args.res, args.res, args.res, 4, device=dev, requires_grad=True)
    opt = torch.optim.Adam([grid], lr=args.lr)
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        points = torch.rand(args.batch, 3, device=dev) * 2 - 1
        pred = voxray.grid_sample(grid, points)                 # (batch, 4), differentiable in grid
        loss = torch.nn.functional.mse_loss(pred, target(points))
        opt.zero_grad(set_to_none=True)
        loss.backward()                                          # voxray's scatter fills grid.grad
        opt.step()
        if step == 1 or step % max(1, args.steps // 6) == 0 or step == args.steps:
            print("step %4d  loss %.5f" % (step, loss.item()), flush=True)
    print("fitted %d^3 x 4 on %s in %.1f s" % (args.res, dev, time.perf_counter() - t0))

    # Held-out check: fresh points, the fitted grid against the function.
    with torch.no_grad():
        points = torch.rand(65536, 3, device=dev) * 2 - 1
        err = torch.nn.functional.mse_loss(voxray.grid_sample(grid, points), target(points)).item()
    print("held-out mse %.5f" % err)

    # Render the fitted grid from memory, and the target sampled on the same lattice.
    lin = torch.linspace(-1, 1, args.res)
    z, y, x = torch.meshgrid(lin, lin, lin, indexing="ij")
    truth = target(torch.stack([x, y, z], -1).reshape(-1, 3)).reshape(args.res, args.res, args.res, 4)
    cam = dict(eye=(2.2, 1.4, 2.6), target=(0, 0, 0), fov=40, size=(160, 160))
    fitted_img = voxray.render(grid.detach().cpu().numpy(), **cam)
    truth_img = voxray.render(truth.numpy(), **cam)
    psnr = -10 * math.log10(max(float(np.mean((fitted_img - truth_img) ** 2)), 1e-12))
    write_ppm(args.out + "_fitted.ppm", fitted_img)
    write_ppm(args.out + "_target.ppm", truth_img)
    print("render of the fitted grid vs the target's: PSNR %.1f dB (%s_fitted.ppm, %s_target.ppm)"
          % (psnr, args.out, args.out))


if __name__ == "__main__":
    main()
