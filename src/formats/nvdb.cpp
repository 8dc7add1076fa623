/* nvdb.cpp - NanoVDB .nvdb files through NanoVDB's headers: float grids into the sparse
 * grid (one leaf = one 8^3 brick, active tiles filled), and a scene written as a float fog
 * grid (GridBuilder + io::writeGrid). The file's segments are parsed here rather than by
 * io::readGrid, which trusts every size in the file: each header, name, size and node
 * offset is checked against the file before anything is allocated or followed. */
#include <nanovdb/NanoVDB.h>
#include <nanovdb/util/GridBuilder.h>
#include <nanovdb/util/GridChecksum.h>
#include <nanovdb/util/IO.h>
#include <zlib.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "nvdb.h"
#include "sparse_grid.h"
#include "vx_common.h"

namespace {

using Leaf = nanovdb::NanoLeaf<float>;
using Lower = nanovdb::NanoLower<float>;
using Upper = nanovdb::NanoUpper<float>;
using RootData = nanovdb::NanoRoot<float>::DataType;
using Tile = RootData::Tile;

/* One grid of the file: its metadata, name, codec and where its bytes start. */
struct vx_nv_entry {
    nanovdb::io::MetaData meta;
    std::string name;
    nanovdb::io::Codec codec;
    long long data_at;
};

struct vx_file {
    FILE *f = nullptr;
    ~vx_file() { if (f) fclose(f); }
};

const char *vx_type_name(nanovdb::GridType t) {
    return (uint32_t)t < (uint32_t)nanovdb::GridType::End ? nanovdb::toStr(t) : "an unknown type";
}

/* Every grid of every segment: header and metadata checked against the file size. */
int vx_list(const char *path, vx_file &fh, std::vector<vx_nv_entry> &out) {
    if (vx_check_regular(path)) return -1;
    struct stat st;
    if (stat(path, &st) != 0) return vx_error("%s: cannot stat the file", path);
    const long long size = (long long)st.st_size;
    fh.f = fopen(path, "rb");
    if (!fh.f) return vx_error("%s: cannot open the file", path);
    long long at = 0;
    while (at < size) {
        nanovdb::io::Header h;
        if (size - at < (long long)sizeof h || fread(&h, sizeof h, 1, fh.f) != 1)
            return vx_error("%s: truncated NanoVDB segment header at byte %lld", path, at);
        at += sizeof h;
        if (h.magic != NANOVDB_MAGIC_NUMBER) {
            if (h.magic == nanovdb::io::reverseEndianness(NANOVDB_MAGIC_NUMBER))
                return vx_error("%s: a big-endian NanoVDB file (voxray reads little-endian ones)", path);
            return vx_error("%s: not a NanoVDB file (bad magic number at byte %lld)", path, at - (long long)sizeof h);
        }
        if (h.version.getMajor() != NANOVDB_MAJOR_VERSION_NUMBER)
            return vx_error("%s: NanoVDB file format %u.%u; voxray reads format %d (rewrite it with this "
                            "NanoVDB's nanovdb_convert)", path, h.version.getMajor(), h.version.getMinor(),
                            NANOVDB_MAJOR_VERSION_NUMBER);
        if (h.gridCount == 0) return vx_error("%s: a NanoVDB segment with no grids", path);
        if ((uint16_t)h.codec >= (uint16_t)nanovdb::io::Codec::END)
            return vx_error("%s: unknown NanoVDB codec %u", path, (unsigned)h.codec);
        size_t first = out.size();
        for (unsigned i = 0; i < h.gridCount; i++) {
            vx_nv_entry e;
            if (size - at < (long long)sizeof e.meta || fread(&e.meta, sizeof e.meta, 1, fh.f) != 1)
                return vx_error("%s: truncated NanoVDB grid metadata at byte %lld", path, at);
            at += sizeof e.meta;
            if (e.meta.nameSize == 0 || e.meta.nameSize > 4096 || (long long)e.meta.nameSize > size - at)
                return vx_error("%s: NanoVDB grid %u has a name of %u bytes (the file has %lld left)", path, i,
                                e.meta.nameSize, size - at);
            std::vector<char> name(e.meta.nameSize + 1, 0);
            if (fread(name.data(), 1, e.meta.nameSize, fh.f) != e.meta.nameSize)
                return vx_error("%s: truncated NanoVDB grid name at byte %lld", path, at);
            at += e.meta.nameSize;
            e.name.assign(name.data());
            e.codec = h.codec;
            out.push_back(e);
        }
        for (size_t i = first; i < out.size(); i++) { /* the grids' bytes follow the metadata */
            uint64_t fs = out[i].meta.fileSize;
            if (fs > (uint64_t)(size - at))
                return vx_error("%s: NanoVDB grid '%s' needs %llu bytes; the file has %lld left (truncated?)", path,
                                out[i].name.c_str(), (unsigned long long)fs, size - at);
            out[i].data_at = at;
            at += (long long)fs;
        }
        if (fseek(fh.f, (long)at, SEEK_SET) != 0) return vx_error("%s: cannot seek to byte %lld", path, at);
    }
    if (out.empty()) return vx_error("%s: an empty file (no NanoVDB segment)", path);
    return 0;
}

/* The grid picked by name, else `density`, else the first float grid, else the first. */
const vx_nv_entry *vx_pick(const std::vector<vx_nv_entry> &all, const char *want) {
    for (const auto &e : all) if (want ? e.name == want : e.name == "density") return &e;
    if (want) return nullptr;
    for (const auto &e : all) if (e.meta.gridType == nanovdb::GridType::Float) return &e;
    return &all[0];
}

/* A grid's bytes, decompressed, in a 32-byte aligned buffer of exactly meta.gridSize. */
struct vx_buffer {
    unsigned char *p = nullptr;
    size_t n = 0;
    ~vx_buffer() { free(p); }
};

int vx_read_grid(const char *path, vx_file &fh, const vx_nv_entry &e, vx_buffer &b) {
    const uint64_t gs = e.meta.gridSize, fs = e.meta.fileSize;
    if (gs < sizeof(nanovdb::GridData) + sizeof(nanovdb::TreeData<3>) || gs % NANOVDB_DATA_ALIGNMENT)
        return vx_error("%s: NanoVDB grid '%s' has an impossible size of %llu bytes", path, e.name.c_str(),
                        (unsigned long long)gs);
    if (gs > vx_mem_budget()) return vx_mem_refuse(path, (size_t)gs);
    if (e.codec == nanovdb::io::Codec::BLOSC)
        return vx_error("%s: grid '%s' is blosc-compressed, which voxray's NanoVDB reader does not decode "
                        "(rewrite it uncompressed or with zip: nanovdb_convert -z)", path, e.name.c_str());
    if (e.codec == nanovdb::io::Codec::NONE && fs != gs)
        return vx_error("%s: NanoVDB grid '%s' stores %llu bytes for a grid of %llu", path, e.name.c_str(),
                        (unsigned long long)fs, (unsigned long long)gs);
    /* zip: deflate expands at most ~1032:1, so a tiny file cannot ask for a huge buffer */
    if (e.codec == nanovdb::io::Codec::ZIP && (fs < 8 || gs / 1032 > fs))
        return vx_error("%s: NanoVDB grid '%s' claims %llu bytes from %llu compressed ones", path, e.name.c_str(),
                        (unsigned long long)gs, (unsigned long long)fs);
    b.p = (unsigned char *)aligned_alloc(NANOVDB_DATA_ALIGNMENT, gs);
    if (!b.p) return vx_error("%s: out of memory for a grid of %llu bytes", path, (unsigned long long)gs);
    b.n = gs;
    if (fseek(fh.f, (long)e.data_at, SEEK_SET) != 0) return vx_error("%s: cannot seek", path);
    if (e.codec == nanovdb::io::Codec::NONE) {
        if (fread(b.p, 1, gs, fh.f) != gs) return vx_error("%s: truncated NanoVDB grid '%s'", path, e.name.c_str());
        return 0;
    }
    uint64_t zn;
    if (fread(&zn, 8, 1, fh.f) != 1 || zn != fs - 8)
        return vx_error("%s: NanoVDB grid '%s': the zip block size disagrees with the metadata", path, e.name.c_str());
    std::vector<unsigned char> z;
    z.resize(zn);
    if (fread(z.data(), 1, zn, fh.f) != zn) return vx_error("%s: truncated NanoVDB grid '%s'", path, e.name.c_str());
    uLongf got = (uLongf)gs;
    if (uncompress(b.p, &got, z.data(), (uLong)zn) != Z_OK || got != gs)
        return vx_error("%s: NanoVDB grid '%s': corrupt zip data", path, e.name.c_str());
    return 0;
}

/* Bytes [off, off + count * size) relative to base lie inside the buffer, 32-byte aligned. */
bool vx_span_ok(const vx_buffer &b, const void *base, uint64_t off, uint64_t count, uint64_t size) {
    uint64_t start = (uint64_t)((const unsigned char *)base - b.p);
    if (off > b.n || start > b.n - off) return false;
    start += off;
    if ((start % NANOVDB_DATA_ALIGNMENT) != 0) return false;
    return count == 0 || (b.n - start) / size >= count;
}

/* One fill of the sparse grid: a brick of leaf values, or a constant tile of 8^3 bricks. */
struct vx_block {
    long long origin[3];   /* voxel origin, a multiple of 8 (64-bit: a tile's may pass INT32_MAX) */
    int bricks;            /* bricks per edge: 1 (leaf or lower tile) or 16 (upper tile) */
    const Leaf *leaf;      /* the leaf, or nullptr for a tile */
    float value;           /* the tile's value */
};

/* The value voxray stores: the raw float, or a level set's density. */
struct vx_map_value {
    bool level_set;
    float w;
    float operator()(float v) const { return level_set ? std::min(1.0f, std::max(0.0f, 0.5f - v / w)) : v; }
};

int vx_load(const char *path, const char *want, vx_grid *out, vx_decoder *dec, int *has_dec) {
    vx_file fh;
    std::vector<vx_nv_entry> all;
    if (vx_list(path, fh, all)) return -1;
    const vx_nv_entry *e = vx_pick(all, want);
    if (!e) {
        std::string names;
        for (const auto &x : all) names += (names.empty() ? "" : ", ") + x.name;
        return vx_error("%s: no grid named '%s' (the file has: %s)", path, want, names.c_str());
    }
    const char *name = e->name.c_str();
    if (e->meta.gridType != nanovdb::GridType::Float)
        return vx_error("%s: grid '%s' holds %s values (voxray reads NanoVDB float grids; quantized Fp4/8/16/N "
                        "grids need a float rewrite)", path, name, vx_type_name(e->meta.gridType));
    vx_buffer b;
    if (vx_read_grid(path, fh, *e, b)) return -1;

    /* the grid and tree headers, then every node array, checked before use */
    const nanovdb::GridData *gd = reinterpret_cast<const nanovdb::GridData *>(b.p);
    if (gd->mMagic != NANOVDB_MAGIC_NUMBER || gd->mVersion.getMajor() != NANOVDB_MAJOR_VERSION_NUMBER ||
        gd->mGridType != nanovdb::GridType::Float || gd->mGridSize != b.n)
        return vx_error("%s: grid '%s': its grid header disagrees with the file's metadata (corrupt?)", path, name);
    const bool level_set = gd->mGridClass == nanovdb::GridClass::LevelSet;
    if (!level_set && gd->mGridClass != nanovdb::GridClass::FogVolume && gd->mGridClass != nanovdb::GridClass::Unknown)
        return vx_error("%s: grid '%s' is of class %s (voxray reads fog volumes, level sets and plain float grids)",
                        path, name, (uint32_t)gd->mGridClass < (uint32_t)nanovdb::GridClass::End
                                        ? nanovdb::toStr(gd->mGridClass) : "unknown");
    const auto *tree = reinterpret_cast<const nanovdb::TreeData<3> *>(b.p + sizeof(nanovdb::GridData));
    const uint64_t *off = tree->mNodeOffset;
    const uint32_t *cnt = tree->mNodeCount;
    if (!vx_span_ok(b, tree, off[0], cnt[0], sizeof(Leaf)) || !vx_span_ok(b, tree, off[1], cnt[1], sizeof(Lower)) ||
        !vx_span_ok(b, tree, off[2], cnt[2], sizeof(Upper)) || !vx_span_ok(b, tree, off[3], 1, sizeof(RootData)))
        return vx_error("%s: grid '%s': a node array lies outside the grid's %zu bytes (corrupt)", path, name, b.n);
    const auto *root = reinterpret_cast<const RootData *>((const unsigned char *)tree + off[3]);
    if (!vx_span_ok(b, root, sizeof(RootData), root->mTableSize, sizeof(Tile)))
        return vx_error("%s: grid '%s': the root table lies outside the grid (corrupt)", path, name);
    const vx_map_value map{level_set, root->mBackground};
    if (level_set && !(map.w > 0 && std::isfinite(map.w)))
        return vx_error("%s: level set '%s' has background %g (the band's half width must be > 0)", path, name,
                        (double)map.w);

    /* what to fill: leaves, then tiles (fog: active ones; level set: any whose density > 0) */
    std::vector<vx_block> blocks;
    const Leaf *leaves = reinterpret_cast<const Leaf *>((const unsigned char *)tree + off[0]);
    for (uint32_t i = 0; i < cnt[0]; i++) {
        const nanovdb::Coord o = leaves[i].origin();
        blocks.push_back({{o[0], o[1], o[2]}, 1, &leaves[i], 0.0f});
    }
    auto tiles = [&](const auto *nodes, uint32_t count, int bricks) {
        for (uint32_t i = 0; i < count; i++) {
            const auto *d = nodes[i].data();
            const nanovdb::Coord o = nodes[i].origin();
            for (uint32_t n = 0; n < (uint32_t)nodes[i].SIZE; n++) {
                if (d->mChildMask.isOn(n)) continue;
                float v = d->mTable[n].value;
                if (level_set ? !(map(v) > 0) : !d->mValueMask.isOn(n)) continue;
                const nanovdb::Coord l = nodes[i].OffsetToLocalCoord(n); /* in child nodes */
                const long long step = bricks * 8;
                blocks.push_back({{o[0] + l[0] * step, o[1] + l[1] * step, o[2] + l[2] * step}, bricks, nullptr, v});
            }
        }
    };
    tiles(reinterpret_cast<const Lower *>((const unsigned char *)tree + off[1]), cnt[1], 1);
    tiles(reinterpret_cast<const Upper *>((const unsigned char *)tree + off[2]), cnt[2], 16);
    const Tile *rt = reinterpret_cast<const Tile *>(root + 1);
    for (uint32_t i = 0; i < root->mTableSize; i++)
        if (!rt[i].child && (level_set ? map(rt[i].value) > 0 : rt[i].state != 0))
            return vx_error("%s: grid '%s' has a root tile of 4096^3 voxels holding a value (voxray takes at "
                            "most 65536 voxels per axis)", path, name);
    if (blocks.empty()) return vx_error("%s: grid '%s' has no active voxels", path, name);

    /* the lattice: from the lowest block origin to the highest block end */
    long long lo[3] = {LLONG_MAX, LLONG_MAX, LLONG_MAX}, hi[3] = {LLONG_MIN, LLONG_MIN, LLONG_MIN};
    size_t nbricks = 0;
    for (const auto &k : blocks) {
        for (int a = 0; a < 3; a++) {
            lo[a] = std::min(lo[a], (long long)k.origin[a]);
            hi[a] = std::max(hi[a], (long long)k.origin[a] + 8LL * k.bricks);
        }
        nbricks += (size_t)k.bricks * k.bricks * k.bricks;
    }
    long long n[3];
    for (int a = 0; a < 3; a++) {
        n[a] = hi[a] - lo[a];
        if (n[a] > 65536)
            return vx_error("%s: grid '%s' spans %lld voxels along %c (voxray takes at most 65536)", path, name, n[a],
                            "xyz"[a]);
    }
    /* the pool and the dense brick table, against the memory budget before either exists */
    size_t table = (size_t)((n[0] + 7) / 8) * (size_t)((n[1] + 7) / 8) * (size_t)((n[2] + 7) / 8) * sizeof(int32_t);
    size_t need = nbricks * (size_t)VX_BRICK_VOXELS * sizeof(float) + table;
    if (nbricks > SIZE_MAX / 2 / VX_BRICK_VOXELS / sizeof(float) || need > vx_mem_budget())
        return vx_mem_refuse(path, need);
    vx_sparse *s = (vx_sparse *)calloc(1, sizeof *s);
    if (!s) return vx_error("%s: out of memory", path);
    if (vx_sparse_alloc(s, (int)n[0], (int)n[1], (int)n[2], 1, nbricks, path)) { free(s); return -1; }
    s->background[0] = map(root->mBackground);
    auto fail = [&](int rc) { vx_sparse_free(s); free(s); return rc; };
    if (!std::isfinite(s->background[0]))
        return fail(vx_error("%s: grid '%s' has a background that is not finite", path, name));
    size_t slot = 0;
    for (const auto &k : blocks) {
        for (int bz = 0; bz < k.bricks; bz++)
            for (int by = 0; by < k.bricks; by++)
                for (int bx = 0; bx < k.bricks; bx++, slot++) {
                    size_t tx = (size_t)((k.origin[0] - lo[0]) / 8 + bx), ty = (size_t)((k.origin[1] - lo[1]) / 8 + by),
                           tz = (size_t)((k.origin[2] - lo[2]) / 8 + bz);
                    int32_t *t = &s->table[(tz * s->bn[1] + ty) * s->bn[0] + tx];
                    if (*t >= 0)
                        return fail(vx_error("%s: grid '%s' holds two nodes at voxel (%lld, %lld, %lld) (corrupt)", path,
                                             name, k.origin[0], k.origin[1], k.origin[2]));
                    *t = (int32_t)slot;
                    float *dst = s->pool + slot * VX_BRICK_VOXELS;
                    for (int z = 0; z < 8; z++)
                        for (int y = 0; y < 8; y++)
                            for (int x = 0; x < 8; x++) {
                                /* NanoVDB leaves are x-major: offset (x << 6) | (y << 3) | z */
                                float v = k.leaf ? k.leaf->data()->mValues[(x << 6) | (y << 3) | z] : k.value;
                                if (!std::isfinite(v))
                                    return fail(vx_error("%s: grid '%s' voxel (%lld, %lld, %lld) is not finite", path, name,
                                                         k.origin[0] + bx * 8 + x, k.origin[1] + by * 8 + y,
                                                         k.origin[2] + bz * 8 + z));
                                dst[(z * 8 + y) * 8 + x] = map(v);
                            }
                }
    }
    memset(out, 0, sizeof *out);
    out->nx = (int)n[0]; out->ny = (int)n[1]; out->nz = (int)n[2]; out->nc = 1;
    out->sparse = s;
    out->src_dtype = VX_DT_F32;
    out->align_corners = 0;
    /* NanoVDB's map: world = M (i, j, k) + v, M row-major in mMatD */
    const double *m = gd->mMap.mMatD, *v = gd->mMap.mVecD;
    for (int r = 0; r < 3; r++) {
        double t = v[r];
        for (int c = 0; c < 3; c++) {
            out->i2w[r * 4 + c] = m[r * 3 + c];
            t += (double)lo[c] * m[r * 3 + c];
        }
        out->i2w[r * 4 + 3] = t;
    }
    snprintf(out->source, sizeof out->source, "%s", path);
    float w2i[12];
    if (vx_grid_world_to_index(out, w2i)) {
        std::string why = vx_errmsg(), own = std::string(path) + ": ";
        if (why.compare(0, own.size(), own) == 0) why.erase(0, own.size());
        vx_grid_free(out);
        return vx_error("%s: grid '%s' has an unusable transform (%s)", path, name, why.c_str());
    }
    if (!level_set) {
        float mn, mx;
        vx_grid_range(out, 0, &mn, &mx);
        vx_fog_decoder(dec, mx);
        *has_dec = 1;
    }
    return 0;
}

} // namespace

extern "C" int vx_nvdb_load(const char *path, const char *grid_name, vx_grid *out, vx_decoder *dec, int *has_dec) {
    *has_dec = 0;
    try {
        return vx_load(path, grid_name, out, dec, has_dec);
    } catch (const std::exception &e) {
        return vx_error("%s: not a readable NanoVDB file (%s)", path, e.what());
    }
}

extern "C" int vx_nvdb_describe(const char *path, char *buf, size_t cap) {
    if (cap) buf[0] = 0;
    try {
        vx_file fh;
        std::vector<vx_nv_entry> all;
        if (vx_list(path, fh, all)) return -1;
        size_t used = (size_t)snprintf(buf, cap, "format:     NanoVDB, %zu grid(s)\n", all.size());
        for (const auto &e : all) {
            if (used >= cap) break;
            const auto &m = e.meta;
            const char *cls = (uint32_t)m.gridClass < (uint32_t)nanovdb::GridClass::End ? nanovdb::toStr(m.gridClass)
                                                                                          : "unknown class";
            used += (size_t)snprintf(buf + used, cap - used,
                                     "nvdb grid:  '%s': %s, %s, codec %s, %llu active voxels, index box [%d %d %d]..[%d "
                                     "%d %d], voxel size %g %g %g\n", e.name.c_str(), vx_type_name(m.gridType), cls,
                                     nanovdb::io::toStr(e.codec), (unsigned long long)m.voxelCount,
                                     m.indexBBox[0][0], m.indexBBox[0][1], m.indexBBox[0][2], m.indexBBox[1][0],
                                     m.indexBBox[1][1], m.indexBBox[1][2], m.voxelSize[0], m.voxelSize[1],
                                     m.voxelSize[2]);
        }
        return 0;
    } catch (const std::exception &e) {
        return vx_error("%s: not a readable NanoVDB file (%s)", path, e.what());
    }
}

namespace {

int vx_write(const char *path, const char *tmp, const vx_scene *s) {
    const vx_grid *g = &s->grid;
    nanovdb::GridBuilder<float> builder(0.0f, nanovdb::GridClass::FogVolume);
    auto acc = builder.getAccessor();
    size_t active = 0;
    for (int z = 0; z < g->nz; z++)
        for (int y = 0; y < g->ny; y++)
            for (int x = 0; x < g->nx; x++) {
                if (g->sparse && vx_sparse_offset(g->sparse->table, g->sparse->bn, g->nc, x, y, z) < 0) {
                    x |= VX_BRICK - 1; /* absent brick: its row segment is background */
                    continue;
                }
                float dn = vx_export_density(&s->dec, vx_grid_voxel(g, x, y, z));
                if (!(dn > 0)) continue;
                acc.setValue(nanovdb::Coord(x, y, z), dn);
                active++;
            }
    if (g->sparse && vx_export_density(&s->dec, g->sparse->background) > 0)
        return vx_error("%s: the grid's background decodes to density %g; a NanoVDB fog volume needs 0 outside "
                        "its voxels", path, (double)vx_export_density(&s->dec, g->sparse->background));
    if (!active) return vx_error("%s: the scene has no voxel with density > 0", path);
    /* Map::set takes the matrices transposed (OpenVDB's row-vector form) */
    double mat[3][3], inv[3][3], t[3];
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) mat[c][r] = g->i2w[r * 4 + c];
        t[r] = g->i2w[r * 4 + 3];
    }
    double a[9] = {g->i2w[0], g->i2w[1], g->i2w[2], g->i2w[4], g->i2w[5], g->i2w[6], g->i2w[8], g->i2w[9], g->i2w[10]};
    double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + a[2] * (a[3] * a[7] - a[4] * a[6]);
    if (!(std::fabs(det) > 0)) return vx_error("%s: the scene's transform is singular", path);
    double ia[9] = {a[4] * a[8] - a[5] * a[7], a[2] * a[7] - a[1] * a[8], a[1] * a[5] - a[2] * a[4],
                    a[5] * a[6] - a[3] * a[8], a[0] * a[8] - a[2] * a[6], a[2] * a[3] - a[0] * a[5],
                    a[3] * a[7] - a[4] * a[6], a[1] * a[6] - a[0] * a[7], a[0] * a[4] - a[1] * a[3]};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) inv[c][r] = ia[r * 3 + c] / det;
    nanovdb::Map map;
    map.set(mat, inv, t, 1.0);
    builder.setStats(nanovdb::StatsMode::All);
    builder.setChecksum(nanovdb::ChecksumMode::Full);
    auto handle = builder.getHandle(map, "density");
    /* GridBuilder takes the voxel size as M (1,1,1), wrong for a rotated map: the column
     * lengths instead (what OpenVDB reports), then the checksum again */
    nanovdb::NanoGrid<float> *grid = handle.grid<float>();
    if (!grid) return vx_error("%s: NanoVDB's GridBuilder made no float grid", path);
    for (int c = 0; c < 3; c++)
        grid->data()->mVoxelSize[c] = std::sqrt(a[c] * a[c] + a[3 + c] * a[3 + c] + a[6 + c] * a[6 + c]);
    nanovdb::updateChecksum(*grid, nanovdb::ChecksumMode::Full);
    nanovdb::io::writeGrid(tmp, handle, nanovdb::io::Codec::NONE);
    return vx_commit_temp(tmp, path, 1);
}

} // namespace

extern "C" int vx_nvdb_write(const char *path, const vx_scene *s) {
    /* the project's atomic write: PATH.tmp.PID, tracked for signals, renamed by
     * vx_commit_temp (or kept for the output set's joint rename) */
    char tmp[4200];
    vx_temp_name(path, tmp, sizeof tmp);
    try {
        int rc = vx_write(path, tmp, s);
        if (rc) vx_commit_temp(tmp, path, 0); /* an error before the rename: drop the temporary */
        return rc;
    } catch (const std::exception &e) {
        vx_commit_temp(tmp, path, 0); /* no half-written file stays behind */
        return vx_error("%s: cannot write the NanoVDB file (%s)", path, e.what());
    }
}
