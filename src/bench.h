/* bench.h - the benchmark bodies under `voxray bench` (cmd/bench.c dispatches; it times
 * `bench render` itself): kernel tables and the copy-bandwidth yardstick
 * (bench_kernels.c), the fit steps (bench_fit.c), NanoVDB's HDDA against voxray
 * (bench_hdda.c). */
#ifndef VX_BENCH_H
#define VX_BENCH_H

/* `voxray bench kernels [--quick] [--no-torch]`; returns the exit code. */
int vx_bench_kernels(int argc, char **argv);

/* `voxray bench fit SCENE DATASET [...]` (bench_fit.c); returns the exit code. */
int vx_bench_fit(int argc, char **argv);

/* `voxray bench hdda SCENE... [...]` (bench_hdda.c): NanoVDB's HDDA march against voxray's
 * sparse renderer on the same volume; returns the exit code. */
int vx_bench_hdda(int argc, char **argv);

/* Device-to-device copy bandwidth in GB/s, bytes read plus bytes written (CUDA builds). */
int vx_bench_copy_bandwidth(double *gbs);

#endif
