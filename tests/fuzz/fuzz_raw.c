/* fuzz_raw.c - libFuzzer target for headerless raw: the first line of the input is the
 * --raw spec, the rest the file (tests/fuzz/run_fuzz.sh builds and runs it). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char spec[64];
    size_t n = 0;
    while (n < size && n < sizeof spec - 1 && data[n] != '\n') n++;
    memcpy(spec, data, n);
    spec[n] = 0;
    if (n < size) n++;
    return fuzz_volume(data + n, size - n, ".raw", spec);
}
