/* render_cpu_reflect.c - the CPU renderer for mlp scenes whose network sees the reflected
 * direction (decode.h vx_decoder_mlp_reflect): render_cpu.c's loop with march.h's reflect
 * op. Its own file: with both ops in one loop gcc stopped inlining the march there and
 * called every sample through a pointer; apart, render_cpu.o is the code it was (so that
 * loop also keeps its own pixel store, where this one and HDDA's share vx_frame_put_ray). */
#include "render.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "vx_common.h"

int vx_render_cpu_reflect(const vx_volume *v, const vx_camera *c, const vx_render_opts *o, vx_frame *f) {
    if (f->width != c->width || f->height != c->height)
        return vx_error("frame %dx%d does not match the camera %dx%d", f->width, f->height, c->width, c->height);
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
            vx_grid_reflect_op op = vx_grid_reflect_op_make(&v->mp, v->data, v->sparse);
            vx_ray_result r = vx_march_run(&v->mp, v->occ, ro, rd, vx_pixel_jitter(v->mp.jitter_seed, p),
                                           VX_MARCH_OP_OF(&op));
            vx_frame_put_ray(f, p, &r, &samples, &hit);
        }
    }
    f->samples = samples;
    f->rays_hit = hit;
    return 0;
}
