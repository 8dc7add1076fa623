/* frame.c - allocation of vx_frame (frame.h), checked against the largest frame any
 * command renders. */
#include "frame.h"

#include <stdlib.h>
#include <string.h>

#include "vx_common.h"

int vx_frame_alloc(vx_frame *f, int width, int height, int want_depth) {
    memset(f, 0, sizeof *f);
    if (width < 1 || height < 1 || width > 16384 || height > 16384)
        return vx_error("image size %dx%d is outside 1..16384", width, height);
    size_t n = (size_t)width * height;
    f->width = width;
    f->height = height;
    f->rgb = vx_malloc(n * 3 * sizeof(float), "frame colour");
    f->alpha = vx_malloc(n * sizeof(float), "frame opacity");
    f->depth = want_depth ? vx_malloc(n * sizeof(float), "frame depth") : NULL;
    if (!f->rgb || !f->alpha || (want_depth && !f->depth)) { vx_frame_free(f); return -1; }
    return 0;
}

void vx_frame_free(vx_frame *f) {
    free(f->rgb);
    free(f->alpha);
    free(f->depth);
    f->rgb = f->alpha = f->depth = NULL;
}
