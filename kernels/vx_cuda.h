/* vx_cuda.h - umbrella over the per-module CUDA headers, for callers that use several:
 * cuda_device.h (memory, timers, probe), cuda_render.h, cuda_trilinear.h, cuda_fit.h,
 * cuda_view.h. New code includes the module header it needs. */
#ifndef VX_CUDA_H
#define VX_CUDA_H

#include "cuda_device.h"
#include "cuda_fit.h"
#include "cuda_render.h"
#include "cuda_trilinear.h"
#include "cuda_view.h"

#endif
