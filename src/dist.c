/* dist.c - the part of sort-last set-up that needs no MPI (dist.h): this process's piece,
 * cut from the whole grid when the scene's format was read whole, and the render options
 * of its partial image. Both dist_mpi.c and dist_none.c builds link it. */
#include "dist.h"

#include <stdlib.h>

#include "vx_common.h"

int vx_dist_piece_make(vx_piece_req *req, vx_scene *s, vx_render_opts *o, float bg[3]) {
    for (int k = 0; k < 3; k++) bg[k] = o->has_background ? o->background[k] : s->background[k];
    if (!req->done) { /* loaded whole (volume formats, scalar grids): plan from it, then cut */
        uint32_t *w = NULL;
        int n[3] = {s->grid.nx, s->grid.ny, s->grid.nz}, blo[3], bhi[3];
        if (vx_piece_weights(&s->grid, &w)) return -1;
        int rc = vx_piece_plan_make(&req->plan, n, req->count, w);
        free(w);
        if (rc) return -1;
        /* gradient shading and the mlp's reflected direction read half a voxel behind a
         * piece's low faces: one brick more */
        vx_piece_store_box(&req->plan, req->index, vx_decoder_probes(&s->dec), blo, bhi);
        if (vx_piece_cut(&s->grid, blo, bhi)) return -1;
        req->done = 1;
    }
    if (req->count > 1 && o->stop > 1.0f / 255.0f)
        vx_note("sort-last with --stop %g: a piece cannot know the transmittance in front of it, so the image may "
                "differ from one process's by up to %g (docs/SCALING.md)", o->stop, o->stop);
    o->own = 1;
    vx_piece_own_box(&req->plan, req->index, o->own_lo, o->own_hi);
    o->has_background = 1; /* the partial image: premultiplied colour, the background comes last */
    o->background[0] = o->background[1] = o->background[2] = 0.0f;
    return 0;
}
