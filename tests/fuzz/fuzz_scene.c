/* fuzz_scene.c - libFuzzer target for scene.json: each input is a manifest next to a
 * small valid grid.npy, loaded as a scene and, when it loads, rendered into a tiny frame
 * (placement, decoder, transfer function and camera fields all reach the march). */
#include "fuzz_scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_scene_grid();
    const char *p = fuzz_write(data, size, "scene.json");
    if (p) fuzz_scene_render(p, 1);
    return 0;
}
