/* bench.h - the two halves of `voxray bench`: kernel tables (bench_kernels.c) and
 * render timings (bench.c), plus the copy-bandwidth yardstick both print. */
#ifndef VX_BENCH_H
#define VX_BENCH_H

/* `voxray bench kernels [--quick] [--no-torch]`; returns the exit code. */
int vx_bench_kernels(int argc, char **argv);

/* `voxray bench fit SCENE DATASET [...]` (bench_fit.c); returns the exit code. */
int vx_bench_fit(int argc, char **argv);

/* Median of n timings (sorts t in place). */
double vx_bench_median(double *t, int n);

/* Device-to-device copy bandwidth in GB/s, bytes read plus bytes written (CUDA builds). */
int vx_bench_copy_bandwidth(double *gbs);

#endif
