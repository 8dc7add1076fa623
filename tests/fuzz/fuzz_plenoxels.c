/* fuzz_plenoxels.c - libFuzzer target for the plenoxels reader: each input is written as a
 * .npz file and opened with vx_format_load (tests/fuzz/run_fuzz.sh builds and runs it). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_volume(data, size, ".npz", NULL);
}
