/* fit_backend.c - picks the fit step table for a backend kind that backend.c's
 * vx_backend_resolve already chose; the only build switch on the training path. */
#include "fit_backend.h"

#include "vx_common.h"

const vx_fit_backend_ops *vx_fit_backend_for(vx_backend_kind kind) {
    if (kind == VX_BACKEND_CPU) return &vx_fit_backend_cpu;
#ifdef VX_HAVE_CUDA
    if (kind == VX_BACKEND_CUDA) return &vx_fit_backend_cuda;
#endif
    if (kind == VX_BACKEND_CUDA) {
        vx_error("fit: this voxray was built without CUDA");
        return NULL;
    }
    vx_error("fit: the backend must be resolved (cpu or cuda) before training");
    return NULL;
}
