#!/bin/sh
# include_graph.sh - keeps the layering of docs/ARCHITECTURE.md checkable: prints every
# #include that runs upward (from a lower layer to a higher one) and, from the objects of
# a build (nm), every group of files that call each other in a cycle. Exit 1 if any.
# Usage: tools/include_graph.sh [BUILD_DIR]   (make layers runs it on build/)
cd "$(dirname "$0")/.." || exit 2
exec python3 - "${1:-build}" <<'PY'
import os, re, subprocess, sys

# Layers, bottom (0) to top (5); the first pattern that matches a path wins.
LAYERS = [
    (5, "commands",  [r"src/cmd/", r"src/main\.c", r"src/commands\.h", r"src/cli\.", r"src/view/", r"src/bench",
                      r"src/api\.c", r"src/voxray\.h"]),
    (4, "backends",  [r"src/backend\.", r"src/fit_backend", r"src/fit_train\.", r"src/fit_report\.",
                      r"src/dist", r"src/mpi/"]),
    (0, "device API", [r"kernels/cuda_device\.h", r"kernels/device\.cu", r"kernels/common\.cuh"]),
    (3, "renderers, training steps, kernels",
                     [r"src/render", r"src/volume\.", r"src/fit\.h", r"src/fit_cpu\.c", r"src/fit_coarse\.", r"src/fit_errmap\.",
                      r"kernels/"]),
    (2, "formats, scenes, datasets, images",
                     [r"src/scene\.", r"src/formats", r"src/npy\.", r"src/tf\.c", r"src/make_scene\.",
                      r"src/dataset\.", r"src/image\.", r"src/frame\.", r"src/sparse\.c", r"src/sparse_build\.c",
                      r"src/sparse_io\.c", r"src/sparse_grid\.h", r"src/sparse_apron\.", r"src/piece",
                      r"src/mlp\."]),
    (1, "march, decode, sparse, trilinear",
                     [r"src/march\.h", r"src/hdda_march\.h", r"src/decode\.h", r"src/fit_march\.h",
                      r"kernels/fit_rays\.cuh", r"src/trilinear"]),
    (0, "maths and common", [r"src/vx_", r"src/outputs\.", r"src/camera\.", r"src/grid\.", r"src/sparse\.h",
                             r"src/metrics\."]),
]

# Known upward edges, each with the reason and who removes it; printed, not counted.
KNOWN = {
}

def layer(path):
    for rank, name, pats in LAYERS:
        if any(re.match(p, path) for p in pats):
            return rank, name
    return None, None

files = []
for root in ("src", "kernels"):
    for d, _, names in os.walk(root):
        files += [os.path.join(d, n) for n in names if re.search(r"\.(c|h|cu|cuh)$", n)]
files.sort()
by_name = {}
for f in files:
    by_name.setdefault(os.path.basename(f), []).append(f)

bad = 0
print("== includes that run upward (lower layer -> higher layer)")
for f in files:
    rf, nf = layer(f)
    for line in open(f, errors="replace"):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m:
            continue
        cands = by_name.get(os.path.basename(m.group(1)), [])
        same_dir = [c for c in cands if os.path.dirname(c) == os.path.dirname(f)]
        target = (same_dir or cands or [None])[0]
        if target is None:
            continue
        rt, nt = layer(target)
        if rf is None or rt is None:
            print("  unplaced: %s -> %s (add it to tools/include_graph.sh)" % (f, target))
            bad += 1
        elif rt > rf and (f, target) in KNOWN:
            print("  known: %s -> %s: %s" % (f, target, KNOWN[(f, target)]))
        elif rt > rf:
            print("  %s (%d %s) -> %s (%d %s)" % (f, rf, nf, target, rt, nt))
            bad += 1

print("== cycles between objects (who calls whom, from nm)")
build = sys.argv[1]
objs = []
for d, _, names in os.walk(build):
    objs += [os.path.join(d, n) for n in names if n.endswith(".o") and "/tests/" not in d and "/glad/" not in d]
if not objs:
    print("  (no objects in %s: build first to check cycles)" % build)
else:
    defs, uses = {}, {}
    for o in objs:
        out = subprocess.run(["nm", "-g", o], capture_output=True, text=True).stdout
        src = os.path.relpath(o, build)[:-2]
        uses[src] = set()
        for l in out.splitlines():
            parts = l.split()
            if len(parts) == 2 and parts[0] == "U":
                uses[src].add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRVW":
                defs.setdefault(parts[2], src)
    edges = {s: {defs[u] for u in us if u in defs and defs[u] != s} for s, us in uses.items()}
    # Tarjan's strongly connected components
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop(); on.discard(w); c.append(w)
                if w == v: break
            if len(c) > 1: comps.append(sorted(c))
    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index: visit(v)
    for c in comps:
        print("  cycle: " + " <-> ".join(c))
        bad += 1
print("include_graph: %d problem(s)" % bad)
sys.exit(1 if bad else 0)
PY
