/* vdb.cpp - OpenVDB .vdb files through libopenvdb: float and level-set grids into the
 * sparse grid (one OpenVDB leaf = one 8^3 brick), Vec3 colour as rgba channels 1..3, the
 * linear transform as i2w; and the write side. Every library exception becomes vx_error. */
#include <openvdb/openvdb.h>
#include <openvdb/io/File.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "vdb.h"
#include "sparse_grid.h"
#include "vx_common.h"

namespace {

using openvdb::Coord;
using openvdb::FloatGrid;
using openvdb::GridBase;
using openvdb::Vec3fGrid;

void vx_init() {
    static bool done = false;
    if (!done) { openvdb::initialize(); done = true; }
}

/* The grid picked by name, else `density`, else the first float grid. */
std::string vx_pick(const openvdb::GridPtrVecPtr &meta, const char *want) {
    if (want) return want;
    for (const auto &g : *meta) if (g->getName() == "density") return "density";
    for (const auto &g : *meta) if (g->isType<FloatGrid>()) return g->getName();
    return meta->empty() ? std::string() : (*meta)[0]->getName();
}

const char *vx_class(const GridBase &g) {
    switch (g.getGridClass()) {
    case openvdb::GRID_LEVEL_SET: return "level set";
    case openvdb::GRID_FOG_VOLUME: return "fog volume";
    case openvdb::GRID_STAGGERED: return "staggered";
    default: return "unknown class";
    }
}

/* Level set -> fog in place: density clamp(0.5 - phi / w, 0, 1), w = background. */
int vx_levelset_to_fog(const char *path, FloatGrid &g) {
    float w = g.background();
    if (!(w > 0) || !std::isfinite(w))
        return vx_error("%s: level set '%s' has background %g (the band's half width must be > 0)", path,
                        g.getName().c_str(), (double)w);
    FloatGrid::Ptr fog = FloatGrid::create(0.0f);
    fog->setTransform(g.transform().copy());
    fog->setName(g.getName());
    auto acc = fog->getAccessor();
    for (auto it = g.tree().cbeginValueAll(); it; ++it) {
        float d = std::min(1.0f, std::max(0.0f, 0.5f - it.getValue() / w));
        if (!(d > 0)) continue;
        if (it.isVoxelValue()) acc.setValue(it.getCoord(), d);
        else {
            openvdb::CoordBBox bb;
            it.getBoundingBox(bb);
            fog->tree().fill(bb, d, true);
        }
    }
    g.setTree(fog->treePtr());
    g.setGridClass(openvdb::GRID_FOG_VOLUME);
    return 0;
}

int vx_load(const char *path, const char *want, vx_grid *out, vx_decoder *dec, int *has_dec) {
    vx_init();
    if (vx_check_regular(path)) return -1;
    openvdb::io::File file(path);
    file.open(false);
    openvdb::GridPtrVecPtr meta = file.readAllGridMetadata();
    std::string name = vx_pick(meta, want);
    if (name.empty()) return vx_error("%s: the file holds no grids", path);
    if (!file.hasGrid(name)) {
        std::string names;
        for (const auto &g : *meta) names += (names.empty() ? "" : ", ") + g->getName();
        return vx_error("%s: no grid named '%s' (the file has: %s)", path, name.c_str(), names.c_str());
    }
    GridBase::Ptr base = file.readGrid(name);
    FloatGrid::Ptr g = openvdb::gridPtrCast<FloatGrid>(base);
    if (!g)
        return vx_error("%s: grid '%s' holds %s values (voxray reads float grids, with a Vec3f color/Cd "
                        "grid beside them)", path, name.c_str(), base->valueType().c_str());
    const openvdb::math::Transform &xf = g->transform();
    if (!xf.isLinear())
        return vx_error("%s: grid '%s' has a %s transform (voxray places linear transforms only)", path,
                        name.c_str(), xf.mapType().c_str());
    bool level_set = g->getGridClass() == openvdb::GRID_LEVEL_SET;
    if (level_set && vx_levelset_to_fog(path, *g)) return -1;
    g->tree().voxelizeActiveTiles();
    /* colour: a Vec3f color/Cd grid beside `density`, same transform */
    Vec3fGrid::Ptr col;
    if (!want || name == "density") {
        for (const char *cn : {"color", "Cd"}) {
            if (!file.hasGrid(cn)) continue;
            col = openvdb::gridPtrCast<Vec3fGrid>(file.readGrid(cn));
            if (col && col->transform() != xf)
                return vx_error("%s: grid '%s' is placed differently from '%s'", path, cn, name.c_str());
            if (col) break;
        }
    }
    file.close();

    Coord lo(INT32_MAX, INT32_MAX, INT32_MAX), hi(INT32_MIN, INT32_MIN, INT32_MIN);
    size_t nleaves = 0;
    for (auto l = g->tree().cbeginLeaf(); l; ++l) {
        lo.minComponent(l->origin());
        hi.maxComponent(l->origin());
        nleaves++;
    }
    if (nleaves == 0) return vx_error("%s: grid '%s' has no active voxels", path, name.c_str());
    long long n[3];
    for (int a = 0; a < 3; a++) {
        n[a] = (long long)hi[a] - lo[a] + 8;
        if (n[a] > 65536)
            return vx_error("%s: grid '%s' spans %lld voxels along %c (voxray takes at most 65536)", path,
                            name.c_str(), n[a], "xyz"[a]);
    }
    int nc = col ? 4 : 1;
    size_t need = nleaves * (size_t)VX_BRICK_VOXELS * nc * sizeof(float) + /* pool + brick table */
                  (size_t)((n[0] + 7) / 8) * (size_t)((n[1] + 7) / 8) * (size_t)((n[2] + 7) / 8) * sizeof(int32_t);
    if (need > vx_mem_budget()) return vx_mem_refuse(path, need);
    vx_sparse *s = (vx_sparse *)calloc(1, sizeof *s);
    if (!s) return vx_error("%s: out of memory", path);
    if (vx_sparse_alloc(s, (int)n[0], (int)n[1], (int)n[2], nc, nleaves, path)) { free(s); return -1; }
    s->background[0] = g->background();
    if (col) for (int c = 0; c < 3; c++) s->background[1 + c] = col->background()[c];
    auto cacc = col ? col->getConstAccessor() : Vec3fGrid::ConstAccessor(Vec3fGrid::create()->tree());
    size_t slot = 0;
    for (auto l = g->tree().cbeginLeaf(); l; ++l, slot++) {
        Coord o = l->origin() - lo;
        int bx = o.x() >> 3, by = o.y() >> 3, bz = o.z() >> 3;
        s->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx] = (int32_t)slot;
        float *dst = s->pool + slot * VX_BRICK_VOXELS * nc;
        for (int z = 0; z < 8; z++)
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++) {
                    float *v = dst + ((size_t)(z * 8 + y) * 8 + x) * nc;
                    v[0] = l->getValue(openvdb::Index((x << 6) | (y << 3) | z)); /* a leaf is x-major */
                    if (col) {
                        openvdb::Vec3f k = cacc.getValue(l->origin().offsetBy(x, y, z));
                        v[1] = k[0]; v[2] = k[1]; v[3] = k[2];
                    }
                    for (int ch = 0; ch < nc; ch++)
                        if (!std::isfinite(v[ch])) {
                            Coord c = l->origin().offsetBy(x, y, z);
                            vx_sparse_free(s); free(s);
                            return vx_error("%s: grid '%s' voxel (%d, %d, %d) is not finite", path,
                                            name.c_str(), c.x(), c.y(), c.z());
                        }
                }
    }
    memset(out, 0, sizeof *out);
    out->nx = (int)n[0]; out->ny = (int)n[1]; out->nz = (int)n[2]; out->nc = nc;
    out->sparse = s;
    out->src_dtype = VX_DT_F32;
    out->align_corners = 0;
    /* OpenVDB maps row vectors: world = (i, j, k, 1) * M, with i = voxray x + lo.x */
    openvdb::Mat4d m = xf.baseMap()->getAffineMap()->getMat4();
    for (int r = 0; r < 3; r++) {
        double t = m(3, r);
        for (int c = 0; c < 3; c++) {
            out->i2w[r * 4 + c] = m(c, r);
            t += (double)lo[c] * m(c, r);
        }
        out->i2w[r * 4 + 3] = t;
    }
    snprintf(out->source, sizeof out->source, "%s", path);
    float w2i[12];
    if (vx_grid_world_to_index(out, w2i)) {
        std::string why = vx_errmsg(), own = std::string(path) + ": ";
        if (why.compare(0, own.size(), own) == 0) why.erase(0, own.size());
        vx_grid_free(out);
        return vx_error("%s: grid '%s' has an unusable transform (%s)", path, name.c_str(), why.c_str());
    }
    if (!col && !level_set) { /* fog: grey smoke, sigma = the value per world unit */
        float mn, mx;
        vx_grid_range(out, 0, &mn, &mx);
        vx_fog_decoder(dec, mx);
        *has_dec = 1;
    }
    if (col) {
        memset(dec, 0, sizeof *dec);
        dec->type = VX_DEC_RGBA;
        dec->density_act = VX_DACT_NONE;
        dec->color_act = VX_CACT_CLAMP;
        dec->density_scale = 1.0f;
        *has_dec = 1;
    }
    return 0;
}

} // namespace

extern "C" int vx_vdb_load(const char *path, const char *grid_name, vx_grid *out, vx_decoder *dec,
                           int *has_dec) {
    *has_dec = 0;
    try {
        return vx_load(path, grid_name, out, dec, has_dec);
    } catch (const std::exception &e) {
        return vx_error("%s: not a readable OpenVDB file (%s)", path, e.what());
    } catch (...) {
        return vx_error("%s: not a readable OpenVDB file", path);
    }
}

extern "C" int vx_vdb_describe(const char *path, char *buf, size_t cap) {
    if (cap) buf[0] = 0;
    try {
        vx_init();
        if (vx_check_regular(path)) return -1;
        openvdb::io::File file(path);
        file.open(false);
        openvdb::GridPtrVecPtr meta = file.readAllGridMetadata();
        size_t used = (size_t)snprintf(buf, cap, "format:     OpenVDB (file version %s), %zu grid(s)\n",
                                       file.version().c_str(), meta->size());
        for (const auto &g : *meta) {
            if (used >= cap) break;
            openvdb::Vec3d vs = g->voxelSize();
            long long count = -1;
            openvdb::Vec3i bmin(0), bmax(-1);
            try { count = (long long)g->metaValue<openvdb::Int64>(GridBase::META_FILE_VOXEL_COUNT); } catch (...) {}
            try {
                bmin = g->metaValue<openvdb::Vec3i>(GridBase::META_FILE_BBOX_MIN);
                bmax = g->metaValue<openvdb::Vec3i>(GridBase::META_FILE_BBOX_MAX);
            } catch (...) {}
            used += (size_t)snprintf(buf + used, cap - used,
                                     "vdb grid:   '%s': %s, %s, %lld active voxels, index box [%d %d %d]..[%d %d %d], "
                                     "voxel size %g %g %g\n", g->getName().c_str(), g->valueType().c_str(),
                                     vx_class(*g), count, bmin[0], bmin[1], bmin[2], bmax[0], bmax[1], bmax[2],
                                     vs[0], vs[1], vs[2]);
        }
        file.close();
        return 0;
    } catch (const std::exception &e) {
        return vx_error("%s: not a readable OpenVDB file (%s)", path, e.what());
    }
}

namespace {

/* colour: rgba channels 1..3 through the colour activation; sh the DC term
 * 0.5 + C0 * k0 (sigmoid(C0 * k0) for sigmoid scenes), clamped to [0, 1] */
openvdb::Vec3f vx_out_color(const vx_decoder *d, const float *v) {
    openvdb::Vec3f c;
    int nb = (d->sh_degree + 1) * (d->sh_degree + 1);
    for (int k = 0; k < 3; k++) {
        float x;
        if (d->type == VX_DEC_RGBA)
            x = d->color_act == VX_CACT_SIGMOID ? vx_sigmoidf(v[1 + k]) : v[1 + k];
        else {
            float s = 0.28209479177387814f * v[1 + k * nb];
            x = d->color_act == VX_CACT_SIGMOID ? vx_sigmoidf(s) : s + 0.5f;
        }
        c[k] = std::min(1.0f, std::max(0.0f, x));
    }
    return c;
}

int vx_write(const char *path, const char *tmp, const vx_scene *s) {
    vx_init();
    const vx_grid *g = &s->grid;
    const vx_decoder *d = &s->dec;
    bool color = d->type == VX_DEC_RGBA || d->type == VX_DEC_SH;
    openvdb::Mat4d m = openvdb::Mat4d::identity();
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) m(c, r) = g->i2w[r * 4 + c];
        m(3, r) = g->i2w[r * 4 + 3];
    }
    openvdb::math::Transform::Ptr xf = openvdb::math::Transform::createLinearTransform(m);
    FloatGrid::Ptr fog = FloatGrid::create(0.0f);
    fog->setName("density");
    fog->setGridClass(openvdb::GRID_FOG_VOLUME);
    fog->setTransform(xf);
    Vec3fGrid::Ptr col = Vec3fGrid::create(openvdb::Vec3f(0.0f));
    col->setName("color");
    col->setTransform(xf->copy());
    auto fa = fog->getAccessor();
    auto ca = col->getAccessor();
    for (int z = 0; z < g->nz; z++)
        for (int y = 0; y < g->ny; y++)
            for (int x = 0; x < g->nx; x++) {
                if (g->sparse && vx_sparse_offset(g->sparse->table, g->sparse->bn, g->nc, x, y, z) < 0) {
                    x |= VX_BRICK - 1; /* absent brick: its row segment is background */
                    continue;
                }
                const float *v = vx_grid_voxel(g, x, y, z);
                float dn = vx_export_density(d, v);
                if (!(dn > 0)) continue;
                fa.setValue(Coord(x, y, z), dn);
                if (color) ca.setValue(Coord(x, y, z), vx_out_color(d, v));
            }
    if (g->sparse) {
        float bd = vx_export_density(d, g->sparse->background);
        if (bd > 0)
            return vx_error("%s: the grid's background decodes to density %g; an OpenVDB fog volume needs 0 "
                            "outside its voxels", path, (double)bd);
    }
    if (fog->activeVoxelCount() == 0) return vx_error("%s: the scene has no voxel with density > 0", path);
    openvdb::GridPtrVec grids;
    grids.push_back(fog);
    if (color) grids.push_back(col);
    openvdb::io::File file(tmp);
    file.write(grids);
    file.close();
    return vx_commit_temp(tmp, path, 1);
}

} // namespace

extern "C" int vx_vdb_write(const char *path, const vx_scene *s) {
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
        return vx_error("%s: cannot write the OpenVDB file (%s)", path, e.what());
    }
}
