/* render_cpu.c - the reference renderer: every pixel's ray through vx_march_run with the
 * dense or sparse float32 op of march.h, OpenMP over rows (the mlp's reflected direction:
 * render_cpu_reflect.c). The CUDA backend (kernels/render.cu) is tested against this. */
#include "render.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "vx_common.h"

int vx_render_cpu(const vx_volume *v, const vx_camera *c, const vx_render_opts *o, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("frame %dx%d does not match the camera %dx%d", f->width, f->height, c->width, c->height);
    if (vx_decoder_mlp_reflect(&v->mp.dec)) return vx_render_cpu_reflect(v, c, o, f); /* render_cpu_reflect.c */
    long long samples = 0, hit = 0;
    int threads = o && o->threads > 0 ? o->threads : 0;
#ifdef _OPENMP
    if (!threads) threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    #pragma omp parallel for schedule(dynamic, 1) reduction(+ : samples, hit) num_threads(threads)
    for (int i = 0; i < c->height; i++) {
        for (int j = 0; j < c->width; j++) {
            vx_vec3 ro, rd;
            vx_camera_ray(c, (float)j + 0.5f, (float)i + 0.5f, &ro, &rd);
            size_t p = (size_t)i * c->width + j;
            vx_grid_op op = vx_grid_op_make(&v->mp, v->data, v->sparse);
            vx_ray_result r = vx_march_run(&v->mp, v->occ, ro, rd, vx_pixel_jitter(v->mp.jitter_seed, p),
                                           VX_MARCH_OP_OF(&op));
            f->rgb[3 * p] = r.rgb[0];
            f->rgb[3 * p + 1] = r.rgb[1];
            f->rgb[3 * p + 2] = r.rgb[2];
            f->alpha[p] = 1.0f - r.trans;
            if (f->depth) f->depth[p] = r.depth;
            samples += r.samples;
            hit += r.samples > 0 || r.trans < 1.0f;
        }
    }
    f->samples = samples;
    f->rays_hit = hit;
    return 0;
}
