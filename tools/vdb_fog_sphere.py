# vdb_fog_sphere.py - writes the 10 M-voxel OpenVDB fog sphere of docs/BENCHMARKS.md (the
# CPU timing of issue 13): a 272^3 array, radius 134 voxels, density 1 - 0.9 r/134 inside,
# voxel size 0.01, through Debian's pyopenvdb. Usage: /usr/bin/python3 tools/vdb_fog_sphere.py OUT.vdb
import sys

import numpy as np
import pyopenvdb as vdb

n, radius = 272, 134.0
c = (n - 1) / 2.0
z, y, x = np.ogrid[:n, :n, :n]
r = np.sqrt((x - c) ** 2 + (y - c) ** 2 + (z - c) ** 2)
a = np.where(r <= radius, 1.0 - 0.9 * r / radius, 0.0).astype(np.float32)
g = vdb.FloatGrid()
g.copyFromArray(a)  # zeros stay inactive: 10 080 448 active voxels
g.name = "density"
g.gridClass = vdb.GridClass.FOG_VOLUME
g.transform = vdb.createLinearTransform(voxelSize=0.01)
vdb.write(sys.argv[1], grids=[g])
print("%s: %d active voxels" % (sys.argv[1], g.activeVoxelCount()))
