# check_vdb.py - reads back a .vdb that `voxray convert` wrote and compares it with the fog
# sphere of make_vdb.py: every active voxel's world position and value (tests/test_vdb.sh);
# convert writes only voxels of density > 0, so the original's active zeros are left out.
# Usage: check_vdb.py WRITTEN.vdb ORIGINAL.vdb
import sys
import pyopenvdb as vdb

def world_values(path):
    g = vdb.read(path, "density")
    out = {}
    for it in g.citerOnValues():
        if it.count != 1:
            sys.exit("%s: active tile in the written grid" % path)
        w = g.transform.indexToWorld(it.min)
        out[tuple(round(x, 5) for x in w)] = it.value
    return out, g

a, ga = world_values(sys.argv[1])
b, gb = world_values(sys.argv[2])
b = {k: v for k, v in b.items() if v > 0}
if ga.gridClass != vdb.GridClass.FOG_VOLUME:
    sys.exit("written grid is not a fog volume")
if a != b:
    sys.exit("values differ: %d vs %d active voxels, %d positions differ" %
             (len(a), len(b), len(set(a.items()) ^ set(b.items()))))
print("check_vdb: %d voxels identical in value and world position" % len(a))
