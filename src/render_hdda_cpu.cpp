/* render_hdda_cpu.cpp - builds the NanoVDB grid of `bench hdda` from voxray's bricks
 * (nanovdb::GridBuilder) and renders it on the CPU with NanoVDB's HDDA (hdda_march.h):
 * the reference kernels/hdda.cu is tested against, and the bench's image check. */
#include <nanovdb/util/GridBuilder.h>

#include <exception>
#include <new>

#include "hdda_march.h"
#include "render.h"
#include "render_hdda.h"
#include "sparse.h"
#include "vx_common.h"

struct vx_hdda_grid {
    nanovdb::GridHandle<nanovdb::HostBuffer> handle;
    size_t leaves;
};

extern "C" int vx_hdda_grid_build(vx_hdda_grid **out, const vx_grid *g) {
    *out = nullptr;
    const vx_sparse *s = g->sparse;
    if (!s || g->nc != 1)
        return vx_error("%s: the NanoVDB HDDA path takes a sparse grid of one channel (this one: %s, %d channels)",
                        g->source, s ? "sparse" : "dense", g->nc);
    try {
        nanovdb::GridBuilder<float> b(s->background[0], nanovdb::GridClass::FogVolume);
        auto acc = b.getAccessor();
        size_t leaves = 0;
        for (int bz = 0; bz < s->bn[2]; bz++)
            for (int by = 0; by < s->bn[1]; by++)
                for (int bx = 0; bx < s->bn[0]; bx++) {
                    if (s->table[((size_t)bz * s->bn[1] + by) * s->bn[0] + bx] < 0) continue;
                    leaves++;
                    for (int z = bz * 8; z < bz * 8 + 8; z++)
                        for (int y = by * 8; y < by * 8 + 8; y++)
                            for (int x = bx * 8; x < bx * 8 + 8; x++) {
                                const float *v = vx_sparse_voxel(s, vx_mini(x, g->nx - 1), vx_mini(y, g->ny - 1),
                                                                 vx_mini(z, g->nz - 1));
                                acc.setValue(nanovdb::Coord(x, y, z), v[0]);
                            }
                }
        if (!leaves) return vx_error("%s: the sparse grid has no bricks", g->source);
        vx_hdda_grid *h = new vx_hdda_grid;
        h->handle = b.getHandle(1.0, nanovdb::Vec3d(0.0), "density");
        h->leaves = h->handle.grid<float>()->tree().nodeCount(0);
        if (h->leaves != leaves) {
            size_t made = h->leaves;
            delete h;
            return vx_error("%s: NanoVDB's GridBuilder made %zu leaves from %zu bricks", g->source, made, leaves);
        }
        *out = h;
        return 0;
    } catch (const std::exception &e) {
        return vx_error("%s: building the NanoVDB grid failed (%s)", g->source, e.what());
    }
}

extern "C" void vx_hdda_grid_free(vx_hdda_grid *h) { delete h; }

extern "C" const void *vx_hdda_grid_data(const vx_hdda_grid *h, size_t *bytes) {
    *bytes = h->handle.size();
    return h->handle.data();
}

extern "C" size_t vx_hdda_grid_leaves(const vx_hdda_grid *h) { return h->leaves; }

extern "C" int vx_render_hdda_cpu(const vx_hdda_grid *h, const vx_march_params *m, const vx_camera *c, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("frame %dx%d does not match the camera %dx%d", f->width, f->height, c->width, c->height);
    if (m->jitter_seed) return vx_error("the HDDA renderer takes no --jitter");
    const nanovdb::NanoGrid<float> *grid = h->handle.grid<float>();
    long long samples = 0, hit = 0;
    #pragma omp parallel for schedule(dynamic, 1) reduction(+ : samples, hit)
    for (int i = 0; i < c->height; i++)
        for (int j = 0; j < c->width; j++) {
            vx_vec3 ro, rd;
            vx_camera_ray(c, (float)j + 0.5f, (float)i + 0.5f, &ro, &rd);
            vx_ray_result r = vx_hdda_march(m, grid, ro, rd);
            size_t p = (size_t)i * c->width + j;
            vx_frame_put_ray(f, p, &r, &samples, &hit);
        }
    f->samples = samples;
    f->rays_hit = hit;
    return 0;
}
