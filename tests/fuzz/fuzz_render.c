/* fuzz_render.c - libFuzzer target for load-then-render: each input is a volume (.npy
 * when it starts with the NumPy magic, else NRRD) opened as a scene and rendered into a
 * 6x5 CPU frame, with and without empty-space skipping. */
#include "fuzz_scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int npy = size >= 6 && !memcmp(data, "\x93NUMPY", 6);
    const char *p = fuzz_write(data, size, npy ? "volume.npy" : "volume.nrrd");
    if (p) fuzz_scene_render(p, 1);
    return 0;
}
