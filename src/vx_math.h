/* vx_math.h - small vector helpers compiled both as host C and as CUDA device code.
 * VX_HD marks functions that the CPU renderer and the CUDA kernels share, so the two
 * backends evaluate the same arithmetic sample for sample. */
#ifndef VX_MATH_H
#define VX_MATH_H

#include <math.h>
#include <stddef.h>

#ifdef __CUDACC__
#define VX_HD static __host__ __device__ __forceinline__
#define VX_HDI VX_HD
#else
#define VX_HD static inline
/* VX_HD that gcc must inline too: a function with a second caller that it would otherwise
 * call out of line, in a hot loop that inlined it while it had one */
#define VX_HDI static inline __attribute__((always_inline))
#endif

typedef struct { float x, y, z; } vx_vec3;

VX_HD vx_vec3 vx_v3(float x, float y, float z) { vx_vec3 v = {x, y, z}; return v; }
VX_HD vx_vec3 vx_add(vx_vec3 a, vx_vec3 b) { return vx_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
VX_HD vx_vec3 vx_sub(vx_vec3 a, vx_vec3 b) { return vx_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
VX_HD vx_vec3 vx_scale(vx_vec3 a, float s) { return vx_v3(a.x * s, a.y * s, a.z * s); }
VX_HD float vx_dot(vx_vec3 a, vx_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
VX_HD vx_vec3 vx_cross(vx_vec3 a, vx_vec3 b) {
    return vx_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
VX_HD float vx_len(vx_vec3 a) { return sqrtf(vx_dot(a, a)); }
VX_HD vx_vec3 vx_norm(vx_vec3 a) { float l = vx_len(a); return l > 0 ? vx_scale(a, 1.0f / l) : a; }
VX_HD float vx_minf(float a, float b) { return a < b ? a : b; }
VX_HD float vx_maxf(float a, float b) { return a > b ? a : b; }
/* NaN-safe: only a v that compares greater than lo survives, so NaN maps to lo (a NaN
 * sample point must never become an index). */
VX_HD float vx_clampf(float v, float lo, float hi) { return v > lo ? (v < hi ? v : hi) : lo; }

/* splitmix64's output function: the stateful generator (vx_splitmix64) and the stateless
 * per-element hashes both backends draw from (vx_fit_hash) share it. */
VX_HD unsigned long long vx_mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
VX_HD int vx_mini(int a, int b) { return a < b ? a : b; }
VX_HD int vx_maxi(int a, int b) { return a > b ? a : b; }

/* Row-major 3x4 affine: p' = M[0..2]·p + M[3], etc. */
VX_HD vx_vec3 vx_affine_point(const float *m, vx_vec3 p) {
    return vx_v3(m[0] * p.x + m[1] * p.y + m[2] * p.z + m[3],
                 m[4] * p.x + m[5] * p.y + m[6] * p.z + m[7],
                 m[8] * p.x + m[9] * p.y + m[10] * p.z + m[11]);
}
VX_HD vx_vec3 vx_affine_dir(const float *m, vx_vec3 d) {
    return vx_v3(m[0] * d.x + m[1] * d.y + m[2] * d.z,
                 m[4] * d.x + m[5] * d.y + m[6] * d.z,
                 m[8] * d.x + m[9] * d.y + m[10] * d.z);
}

#endif
