# check_fit_vdb.py - the fitted-scene round trip of tests/test_vdb.sh: a fitted SH scene
# (as `convert --dense` wrote it), the .vdb `convert` made of it, and voxray's own read-back
# of that .vdb (`convert --dense`). Checks through pyopenvdb and the read-back that the
# density and DC colour of every voxel are what docs/FORMATS.md says convert writes, at the
# same world position; then writes two scenes for the render comparisons and prints the
# camera flags of the fitted scene.
# Usage: check_fit_vdb.py SCENE_DENSE_DIR OUT.vdb READBACK_DENSE_DIR WORK_DIR
import json
import os
import sys

import numpy as np
import pyopenvdb as vdb

scene_dir, vdb_path, back_dir, work = sys.argv[1:5]
grid = np.load(scene_dir + "/grid.npy")  # (z, y, x, c), float32
man = json.load(open(scene_dir + "/scene.json"))
dec = man["decoder"]
if dec["type"] != "sh":
    sys.exit("the fitted scene's decoder is %s, not sh" % dec["type"])
nb = (dec["degree"] + 1) ** 2
i2w = np.array(man["index_to_world"], dtype=np.float64)
f32 = np.float32

# What convert writes (src/formats/vdb.cpp, float32 arithmetic): density = the density
# activation of channel 0 (density_scale left out); colour = the DC term 0.5 + C0 k0 per
# colour, or sigmoid(C0 k0) for sigmoid scenes, clamped to [0, 1]. relu / none and the
# plenoxels / clamp colour are the same float32 operations in numpy and C, so those must
# match exactly; softplus, exp and sigmoid go through libm in C and numpy's own exp / log1p
# here, which may differ by an ulp: 1e-6 for those.
s0 = grid[..., 0]
act = dec["density_activation"]
exact = act in ("relu", "none") and dec["color_activation"] != "sigmoid"
with np.errstate(over="ignore"):
    if act == "softplus":
        dens = np.where(s0 > 20, s0, np.log1p(np.exp(s0))).astype(f32)
    elif act == "exp":
        dens = np.exp(np.minimum(s0, f32(80))).astype(f32)
    else:
        dens = np.maximum(s0, f32(0))
    dc = f32(0.28209479177387814) * grid[..., [1, 1 + nb, 1 + 2 * nb]]
    col = f32(1) / (f32(1) + np.exp(-dc)) if dec["color_activation"] == "sigmoid" else dc + f32(0.5)
col = np.minimum(f32(1), np.maximum(f32(0), col)).astype(f32)
active = dens > 0
col_active = np.where(active[..., None], col, f32(0))  # inactive voxels read the background, 0
tol = 0.0 if exact else 1e-6
fails = []


def close(a, b):
    return np.array_equal(a, b) if tol == 0 else np.allclose(a, b, rtol=0, atol=tol)


# 1. through pyopenvdb: both grids, the voxel counts, every active voxel's value and world position
d = vdb.read(vdb_path, "density")
c = vdb.read(vdb_path, "color")
if d.gridClass != vdb.GridClass.FOG_VOLUME:
    fails.append("density is not a fog volume")
if d.activeVoxelCount() != active.sum() or c.activeVoxelCount() != active.sum():
    fails.append("active voxels: density %d, color %d, scene %d voxels of density > 0" %
                 (d.activeVoxelCount(), c.activeVoxelCount(), active.sum()))
got = {}
for it in d.citerOnValues():
    if it.count != 1:
        fails.append("active tile in the density grid")
        break
    got[tuple(it.min)] = it.value
want = {(int(x), int(y), int(z)): dens[z, y, x] for z, y, x in zip(*np.nonzero(active))}
if set(got) != set(want):
    fails.append("%d active density voxels sit elsewhere than the scene's" % len(set(got) ^ set(want)))
else:
    keys = sorted(want)
    if not close(np.array([got[k] for k in keys], f32), np.array([want[k] for k in keys], f32)):
        fails.append("density values differ from the scene's activated channel 0")
    ca = c.getConstAccessor()
    cg = np.array([ca.getValue(k) for k in keys], f32)
    cw = np.array([col[k[2], k[1], k[0]] for k in keys], f32)
    if not close(cg, cw):
        fails.append("colour differs from the scene's DC colour (max %g)" % abs(cg - cw).max())
    # world position: OpenVDB index = voxray index (convert writes no offset)
    pts = np.array(keys[:: max(1, len(keys) // 64)], np.float64)
    wv = np.array([d.transform.indexToWorld(tuple(p)) for p in pts])
    ws = pts @ i2w[:3, :3].T + i2w[:3, 3]
    if not np.allclose(wv, ws, rtol=0, atol=1e-12):
        fails.append("world positions differ from the scene's index_to_world (max %g)" % abs(wv - ws).max())
    if not np.allclose(c.transform.indexToWorld(tuple(pts[0])), wv[0], rtol=0, atol=0):
        fails.append("color and density are placed differently")

# 2. through voxray's reader: the whole lattice, inactive voxels included, and its placement
back = np.load(back_dir + "/grid.npy")
bman = json.load(open(back_dir + "/scene.json"))
if back.shape != grid.shape[:3] + (4,):
    fails.append("read-back lattice %s, scene %s" % (back.shape, grid.shape))
elif not (close(back[..., 0], dens) and close(back[..., 1:], col_active)):
    fails.append("voxray's read-back differs from the scene's density / DC colour")
if not np.allclose(np.array(bman["index_to_world"]), i2w, rtol=0, atol=1e-12):
    fails.append("voxray's read-back index_to_world differs from the scene's")

# 3. scenes for the renders, with the fitted scene's camera, step and density scale:
# ref = the same volume as voxray's rgba (what the .vdb must render as, to 1/255),
# dc = the fitted scene with its DC colour only (sh degree 0)
for name, g, d2 in (("ref", np.concatenate([dens[..., None], col_active], -1),
                     {"type": "rgba", "density_activation": "none", "color_activation": "clamp"}),
                    ("dc", grid[..., [0, 1, 1 + nb, 1 + 2 * nb]], dict(dec, degree=0))):
    m = dict(man, decoder=dict(d2, density_scale=dec["density_scale"]))
    os.makedirs(work + "/" + name, exist_ok=True)
    np.save(work + "/" + name + "/grid.npy", np.ascontiguousarray(g, dtype=f32))
    json.dump(m, open(work + "/" + name + "/scene.json", "w"))

if fails:
    sys.exit("check_fit_vdb: " + "; ".join(fails))
cam = man["camera"]
print("--eye %s --target %s --up %s --fov %r --step %r --density-scale %r" % (
    ",".join(map(repr, cam["eye"])), ",".join(map(repr, cam["target"])), ",".join(map(repr, cam["up"])),
    cam["fov"], man.get("step", 0.5), dec["density_scale"]))
print("check_fit_vdb: %d voxels: density and DC colour %s, world positions equal" %
      (active.sum(), "identical" if exact else "within 1e-6"), file=sys.stderr)
