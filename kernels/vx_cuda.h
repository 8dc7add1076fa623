/* vx_cuda.h - umbrella over the per-module CUDA headers (cuda_device.h, cuda_render.h,
 * cuda_trilinear.h, cuda_fit.h, cuda_view.h), kept for src/view/view_cuda.c only; new
 * code includes the module header it needs, and this file goes when the viewer does. */
#ifndef VX_CUDA_H
#define VX_CUDA_H

#include "cuda_device.h"
#include "cuda_fit.h"
#include "cuda_render.h"
#include "cuda_trilinear.h"
#include "cuda_view.h"

#endif
