/* fuzz_npy.c - libFuzzer target for .npy: each input is a grid file opened as a scene
 * (header, payload, decoder from the channel count, value checks) and also parsed as an
 * in-memory array the way .npz members are. */
#include "fuzz_scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_write(data, size, "input.npy");
    if (p) fuzz_scene_render(p, 0);
    vx_npy_header h;
    float *out = NULL;
    if (vx_npy_load_buffer(data, size, "buffer", &h, &out) == 0) free(out);
    else fuzz_check_error();
    return 0;
}
