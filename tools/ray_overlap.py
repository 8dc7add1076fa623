#!/usr/bin/env python3
# ray_overlap.py - which training photos look along the same direction as a tile of a test
# view (docs/FIT.md session 24: lego's r_8 glare is seen, elsewhere on the baseplate, by
# training photos whose rays are parallel to r_8's). NeRF-synthetic cameras; numpy and PIL.
# Usage: tools/ray_overlap.py DATASET TEST_VIEW ROW0 COL0 SIZE [DEG (default 4)] [MARK.png]
#   prints the tile's mean ray direction and its spread, then every training photo with
#   on-object pixels (alpha > 1/2) whose rays lie within DEG of it: their count and mean
#   colour; MARK.png: the photo with the most such pixels, the DEG circle drawn on it.
import json
import os
import sys

import numpy as np
from PIL import Image


def frames(root, split):
    with open(os.path.join(root, "transforms_%s.json" % split)) as f:
        meta = json.load(f)
    return meta["camera_angle_x"], meta["frames"]


def rays(frame, w, h, fov, rows, cols):
    """Unit world directions of the pixel centres rows x cols."""
    f = 0.5 * w / np.tan(0.5 * fov)
    c2w = np.array(frame["transform_matrix"], dtype=float)[:3, :3]
    j, i = np.meshgrid(rows, cols, indexing="ij")
    d = np.stack([(i + 0.5 - w / 2) / f, -(j + 0.5 - h / 2) / f, -np.ones(i.shape)], -1) @ c2w.T
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def photo(root, frame):
    return Image.open(os.path.join(root, frame["file_path"] + ".png")).convert("RGBA")


def main(argv):
    if len(argv) not in (6, 7, 8):
        sys.exit("usage: tools/ray_overlap.py DATASET TEST_VIEW ROW0 COL0 SIZE [DEG] [MARK.png]")
    root, view = argv[1], argv[2]
    r0, c0, size = int(argv[3]), int(argv[4]), int(argv[5])
    deg = float(argv[6]) if len(argv) > 6 else 4.0
    mark = argv[7] if len(argv) > 7 else None
    fov, test = frames(root, "test")
    _, train = frames(root, "train")
    hit = [fr for fr in test if os.path.basename(fr["file_path"]) == view]
    if not hit:
        sys.exit("ray_overlap.py: %s: no test view named %s" % (root, view))
    w, h = photo(root, hit[0]).size
    if size < 1 or r0 < 0 or c0 < 0 or r0 + size > h or c0 + size > w:
        sys.exit("ray_overlap.py: the tile %d,%d +%d lies outside the %dx%d photo" % (r0, c0, size, w, h))
    d = rays(hit[0], w, h, fov, np.arange(r0, r0 + size), np.arange(c0, c0 + size)).reshape(-1, 3)
    dm = d.mean(0)
    dm /= np.linalg.norm(dm)
    spread = np.degrees(np.arccos(np.clip(d @ dm, -1, 1))).max()
    print("%s tile rows %d-%d, columns %d-%d: mean ray (%.4f %.4f %.4f), spread %.1f deg"
          % (view, r0, r0 + size - 1, c0, c0 + size - 1, dm[0], dm[1], dm[2], spread))
    best, total = None, 0
    for fr in train:
        img = np.asarray(photo(root, fr))
        ang = np.degrees(np.arccos(np.clip(rays(fr, img.shape[1], img.shape[0], fov, np.arange(img.shape[0]),
                                                np.arange(img.shape[1])) @ dm, -1, 1)))
        m = (ang < deg) & (img[..., 3] > 127)
        n = int(m.sum())
        if not n:
            continue
        total += n
        rgb = img[m][:, :3].mean(0)
        print("  %-16s %7d px within %.1f deg, mean rgb %3.0f %3.0f %3.0f" % (fr["file_path"], n, deg, *rgb))
        if best is None or n > best[0]:
            best = (n, fr, ang)
    print("  total %d on-object training pixels" % total)
    if mark and best:
        img = photo(root, best[1])
        bg = Image.new("RGBA", img.size, (255, 255, 255, 255))
        bg.alpha_composite(img)
        a = np.asarray(bg.convert("RGB")).copy()
        a[np.abs(best[2] - deg) < 0.2] = (255, 0, 255)
        Image.fromarray(a).save(mark)
        print("  %s: %s with the %.1f-deg circle" % (mark, best[1]["file_path"], deg))


if __name__ == "__main__":
    main(sys.argv)
