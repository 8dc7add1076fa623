# make_vdb.py - writes the .vdb files of tests/test_vdb.sh with Debian's pyopenvdb (run by
# /usr/bin/python3), and for the fog sphere the same values as a voxray .npy + manifest.
# Usage: make_vdb.py OUTDIR
import json, math, os, sys
import numpy as np
import pyopenvdb as vdb

out = sys.argv[1]
C, S = math.cos(0.5), math.sin(0.5)
# OpenVDB's row-vector matrix: world = (i, j, k, 1) * M (rotation about z, voxel size 0.1)
M = [[0.1 * C, 0.1 * S, 0, 0], [-0.1 * S, 0.1 * C, 0, 0], [0, 0, 0.1, 0], [1.5, -2.0, 0.25, 1]]
CEN = (3, -5, 20)

def sphere():
    """(i, j, k) -> value of the fog sphere: radius 10 voxels, 1 - r/10 in steps of 1/64."""
    vals = {}
    for k in range(-10, 11):
        for j in range(-10, 11):
            for i in range(-10, 11):
                r = math.sqrt(i * i + j * j + k * k)
                if r < 10:
                    vals[(i + CEN[0], j + CEN[1], k + CEN[2])] = round((1 - r / 10) * 64) / 64
    return vals

vals = sphere()
fog = vdb.FloatGrid(0.0)
fog.name = "density"
fog.gridClass = vdb.GridClass.FOG_VOLUME
acc = fog.getAccessor()
for c, v in vals.items():
    acc.setValueOn(c, v)
fog.transform = vdb.createLinearTransform(M)
vdb.write(os.path.join(out, "fog.vdb"), grids=[fog])

# the same values as voxray's dense grid: lattice from the lowest leaf origin (multiples of 8)
lo = [min(c[a] for c in vals) // 8 * 8 for a in range(3)]
hi = [max(c[a] for c in vals) // 8 * 8 + 8 for a in range(3)]
n = [hi[a] - lo[a] for a in range(3)]
arr = np.zeros((n[2], n[1], n[0]), np.float32)
for c, v in vals.items():
    arr[c[2] - lo[2], c[1] - lo[1], c[0] - lo[0]] = v
d = os.path.join(out, "fog_npy")
os.makedirs(d, exist_ok=True)
np.save(os.path.join(d, "grid.npy"), arr)
i2w = [[M[c][r] for c in range(3)] + [M[3][r] + sum(lo[c] * M[c][r] for c in range(3))] for r in range(3)]
vmax = max(vals.values())  # the reader's default fog look, spelled out (docs/FORMATS.md)
dec = {"type": "scalar", "density_scale": 1, "window": [0, vmax], "shading": False,
       "transfer_function": [[0, 0.3, 0.3, 0.3, 0], [1, 0.3, 0.3, 0.3, vmax]]}
json.dump({"grid": "grid.npy", "index_to_world": i2w + [[0, 0, 0, 1]], "align_corners": False, "decoder": dec},
          open(os.path.join(d, "scene.json"), "w"))
json.dump({"lo": lo, "n": n, "i2w": i2w, "count": len(vals),
           "nonzero": sum(v > 0 for v in vals.values())}, open(os.path.join(out, "fog.json"), "w"))

# several grids: density, temperature, Cd (the colour Houdini writes)
t = vdb.FloatGrid(0.0)
t.name = "temperature"
t.transform = fog.transform
t.getAccessor().setValueOn((1, 2, 3), 300.0)
cd = vdb.Vec3SGrid((0, 0, 0))
cd.name = "Cd"
cd.transform = fog.transform
ca = cd.getAccessor()
for c in vals:
    ca.setValueOn(c, (1.0, 0.5, 0.25))
vdb.write(os.path.join(out, "multi.vdb"), grids=[fog, t, cd])

# a level-set sphere (radius 1, voxel 0.05, half width 3 voxels)
ls = vdb.createLevelSetSphere(radius=1.0, center=(0, 0, 0), voxelSize=0.05, halfWidth=3.0)
ls.name = "surface"
vdb.write(os.path.join(out, "levelset.vdb"), grids=[ls])

# an empty grid, a grid of an unsupported type
e = vdb.FloatGrid(0.0)
e.name = "density"
vdb.write(os.path.join(out, "empty.vdb"), grids=[e])
b = vdb.BoolGrid(False)
b.name = "density"
b.getAccessor().setValueOn((0, 0, 0), True)
vdb.write(os.path.join(out, "bool.vdb"), grids=[b])

# an absurd transform: voxel size 1e11 (over voxray's VX_MAX_SPACING)
a = vdb.FloatGrid(0.0)
a.name = "density"
a.getAccessor().setValueOn((0, 0, 0), 1.0)
a.transform = vdb.createLinearTransform(voxelSize=1e11)
vdb.write(os.path.join(out, "tiny.vdb"), grids=[a])
