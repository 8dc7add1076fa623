#!/usr/bin/env python3
# lego_subset.py - the device copy of a NeRF-synthetic scene (issue 14): the training photos
# and every Nth test view (docs/FIT.md: lego scored on r_0, r_8, ... r_192 on the device,
# where the whole scene exceeds what a call may carry). Depth and normal images are left out.
# Usage: tools/lego_subset.py SRC DEST [EVERY (default 8)]
import json
import os
import shutil
import sys

if len(sys.argv) not in (3, 4):
    sys.exit("usage: tools/lego_subset.py SRC DEST [EVERY]")
src, dest = sys.argv[1], sys.argv[2]
every = int(sys.argv[3]) if len(sys.argv) == 4 else 8
if every < 1:
    sys.exit("lego_subset.py: EVERY must be >= 1")


def copy_split(split, step):
    with open(os.path.join(src, "transforms_%s.json" % split)) as f:
        meta = json.load(f)
    frames = meta["frames"][::step]
    for fr in frames:
        rel = fr["file_path"] + ".png"
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copyfile(os.path.join(src, rel), os.path.join(dest, rel))
    meta["frames"] = frames
    with open(os.path.join(dest, "transforms_%s.json" % split), "w") as f:
        json.dump(meta, f, indent=1)
    return len(frames)


os.makedirs(dest, exist_ok=True)
print("lego_subset.py: %d train, %d test views (every %d) in %s"
      % (copy_split("train", 1), copy_split("test", every), every, dest))
