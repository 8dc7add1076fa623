/* fuzz_transforms.c - libFuzzer target for NeRF transforms.json camera paths: each input
 * is loaded as a path and every frame (up to 64) becomes a camera, as `render --path`. */
#include "camera.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_write(data, size, "transforms.json");
    if (!p) return 0;
    vx_camera_path cp;
    if (vx_camera_path_load(p, &cp) != 0) { fuzz_check_error(); return 0; }
    for (int k = 0; k < cp.n && k < 64; k++) {
        vx_camera c;
        if (vx_camera_from_c2w(&c, cp.c2w[k], cp.camera_angle_x, 8, 8) != 0) fuzz_check_error();
    }
    vx_camera_path_free(&cp);
    return 0;
}
