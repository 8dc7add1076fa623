/* frame.h - a rendered frame in float: colour with the background composited, opacity,
 * optional depth, and the frame's sample counters. Both renderers fill it; image.c
 * writes it; the viewer shows it. */
#ifndef VX_FRAME_H
#define VX_FRAME_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int width, height;
    float *rgb;      /* width*height*3, colour with background composited */
    float *alpha;    /* width*height, opacity = 1 - T_end */
    float *depth;    /* width*height expected depth, or NULL */
    long long samples;   /* samples evaluated in the frame */
    long long rays_hit;  /* rays that met the box */
} vx_frame;

/* Allocate a width x height frame (1..16384 each), with depth when want_depth. */
int vx_frame_alloc(vx_frame *f, int width, int height, int want_depth);
void vx_frame_free(vx_frame *f);

#ifdef __cplusplus
}
#endif

#endif
