/* hdda_march.h - one ray through a NanoVDB float grid with NanoVDB's own HDDA, for the
 * `bench hdda` comparison (C++, host and device: render_hdda_cpu.cpp and kernels/hdda.cu).
 * The samples, decoding and compositing are voxray's (march.h) so that only the way empty
 * space is found and voxels are fetched differs:
 *   - voxray (vx_march_run): segments of dt from the box entry, midpoints sampled; a sample
 *     whose 8^3 occupancy cell (built from decoded density, one voxel of margin) is empty
 *     jumps to the cell's exit; fetch = brick table + eight voxel loads (sparse.h).
 *   - here: the same segments and midpoints, but empty space comes from NanoVDB's
 *     hierarchical DDA over the tree (nanovdb::HDDA, node sizes from the accessor's getDim:
 *     root 4096^3, upper 128^3, lower 8^3 tiles; a leaf counts as one 8^3 cell); a segment is
 *     sampled when its midpoint lies in a leaf's interval, and the fetch is NanoVDB's
 *     trilinear sampler (SampleFromVoxels order 1) through a cached ReadAccessor.
 * The grid's index space is voxray's lattice (vx_hdda_grid_build), so the same world-to-index
 * map serves both. Samples in no leaf are skipped, voxray's clamp at the lattice border
 * is not applied (outside the leaves NanoVDB reads the background). */
#ifndef VX_HDDA_MARCH_H
#define VX_HDDA_MARCH_H

#include <nanovdb/NanoVDB.h>
#include <nanovdb/util/HDDA.h>
#include <nanovdb/util/Ray.h>
#include <nanovdb/util/SampleFromVoxels.h>

#include "march.h"

/* Node size at ijk for the HDDA (a leaf counts as 8: its interval is sampled whole); *leaf
 * tells whether ijk lies in a leaf. */
template <class AccT, class RayT>
__hostdev__ inline int vx_hdda_dim(AccT &acc, const nanovdb::Coord &ijk, const RayT &ray, bool *leaf) {
    int dim = (int)acc.getDim(ijk, ray);
    *leaf = dim == 1;
    return dim < 8 ? 8 : dim;
}

/* March one world-space ray (unit direction d) through grid with m's segments, decoder,
 * background and early stop (a scalar decoder: one channel); the result is what
 * vx_march_run returns for the same ray, up to the differences listed above. */
__hostdev__ inline vx_ray_result vx_hdda_march(const vx_march_params *m, const nanovdb::NanoGrid<float> *grid,
                                               vx_vec3 o, vx_vec3 d) {
    vx_composite c = {{0.0f, 0.0f, 0.0f}, 1.0f, 0.0f, 0};
    float t0, t1;
    vx_vec3 oi = vx_affine_point(m->w2i, o), di = vx_affine_dir(m->w2i, d);
    if (vx_ray_box(m->box_lo, m->box_hi, oi, di, &t0, &t1)) {
        using RayT = nanovdb::Ray<float>;
        auto acc = grid->getAccessor();
        auto sampler = nanovdb::createSampler<1>(acc);
        RayT ray(nanovdb::Vec3f(oi.x, oi.y, oi.z), nanovdb::Vec3f(di.x, di.y, di.z), t0, t1);
        const int n = vx_segment_count(t1 - t0, m->dt, m->max_segments);
        const float eps = 1e-3f * m->dt; /* classify a node just past its entry, as NanoVDB's ZeroCrossing does */
        bool leaf;
        nanovdb::HDDA<RayT> hdda(ray, vx_hdda_dim(acc, nanovdb::RoundDown<nanovdb::Coord>(ray(t0 + eps)), ray, &leaf));
        int k = 0;
        for (;;) {
            if (leaf) { /* the segments whose midpoints lie in [time, next) */
                const float ta = hdda.time(), tb = hdda.next();
                float kf = ceilf((ta - t0) / m->dt - 0.5f);
                if (kf > (float)k) k = kf < (float)n ? (int)kf : n;
                for (; k < n; k++) {
                    vx_sample s;
                    vx_segment(m, t0, t0, t1, n, k, &s.ta, &s.tb);
                    s.tm = 0.5f * (s.ta + s.tb);
                    if (s.tm >= tb) break;
                    s.p = vx_add(oi, vx_scale(di, s.tm));
                    float raw[1] = {sampler(nanovdb::Vec3f(s.p.x, s.p.y, s.p.z))}, rgb[3];
                    float sigma = vx_decode_scalar(&m->dec, raw, rgb); /* scalar decoders only (the bench checks) */
                    if (m->dec.type == VX_DEC_SCALAR && m->dec.shade && sigma > 0.0f) {
                        float f[6];
                        for (int q = 0; q < 6; q++) {
                            vx_vec3 g = vx_gradient_probe(s.p, q);
                            f[q] = sampler(nanovdb::Vec3f(g.x, g.y, g.z));
                        }
                        vx_shade(m, f, d, rgb);
                    }
                    c.samples++;
                    if (!(sigma > 0.0f)) continue;
                    vx_composite_step(&c, sigma, rgb, &s);
                    if (c.T < m->stop) { k = n; break; }
                }
                if (k >= n) break;
            }
            if (!hdda.step()) break;
            hdda.update(ray, vx_hdda_dim(acc, nanovdb::RoundDown<nanovdb::Coord>(ray(hdda.time() + eps)), ray, &leaf));
        }
    }
    vx_ray_result r;
    for (int k = 0; k < 3; k++) r.rgb[k] = c.acc[k] + c.T * m->bg[k];
    r.trans = c.T;
    r.depth = c.depth;
    r.samples = c.samples;
    return r;
}

#endif
