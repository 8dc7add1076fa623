/* mlp.h - the mlp decoder's weights on disk: one 1-D float32 .npy in PyTorch nn.Linear
 * order (weight[out][in], bias, layer after layer), packed for decode.h's vx_decode_mlp
 * (the first layer transposed) and back. docs/FORMAT.md gives the layout. */
#ifndef VX_MLP_H
#define VX_MLP_H

#include "decode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* File order -> packed, and back (vx_mlp_weight_count(layers) floats each). */
void vx_mlp_pack(int layers, const float *file_order, float *packed);
void vx_mlp_unpack(int layers, const float *packed, float *file_order);

/* Read PATH (1-D float32/float16 .npy of exactly vx_mlp_weight_count(layers) finite
 * values) into a malloc'd packed array. Errors name the file and what is wrong. */
int vx_mlp_load(const char *path, int layers, float **packed);
/* Write packed weights to PATH in file order (atomically, as every .npy voxray writes). */
int vx_mlp_save(const char *path, int layers, const float *packed);

/* Deterministic initial weights (PyTorch's nn.Linear default: uniform in +-1/sqrt(in) for
 * weights and biases), packed. */
void vx_mlp_init(int layers, unsigned seed, float *packed);

#ifdef __cplusplus
}
#endif

#endif
