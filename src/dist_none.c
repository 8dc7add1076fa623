/* dist_none.c - dist.h for a build without MPI: voxray always runs as one process, and
 * refuses to start as one of several (mpirun / srun would have every process render and
 * write the same frames). `make MPI=1` builds src/mpi/dist_mpi.c instead. */
#include <stdio.h>
#include <stdlib.h>

#include "dist.h"
#include "vx_common.h"

/* Processes in the job when a launcher started this one (Open MPI's mpirun, PMI-2 / MPICH,
 * srun --mpi=pmi2; a PMIx launch that sets neither is not seen). */
static int vx__launch_size(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1) return atoi(v);
    }
    return 1;
}

int vx_dist_begin(vx_dist **d) {
    *d = NULL;
    int n = vx__launch_size();
    if (n > 1)
        return vx_error("started as one of %d processes (mpirun or srun), but this voxray was built without MPI; "
                        "build it with `make MPI=1`", n);
    return 0;
}

int vx_dist_end(vx_dist *d) { (void)d; return 0; }
int vx_dist_rank(const vx_dist *d) { (void)d; return 0; }
int vx_dist_size(const vx_dist *d) { (void)d; return 1; }
void vx_dist_fail(vx_dist *d, const char *msg) { (void)d; (void)msg; }
void vx_dist_fault_point(vx_dist *d) { (void)d; }
int vx_dist_pick_device(vx_dist *d, vx_backend_kind want) { (void)d; (void)want; return 0; }
int vx_dist_frame_mine(const vx_dist *d, int k) { (void)d; (void)k; return 1; }
int vx_dist_frame_done(vx_dist *d, int k, long long samples, double ms) { (void)d; (void)k; (void)samples; (void)ms; return 0; }
int vx_dist_frame_next(vx_dist *d, int wait, int *k, long long *samples, double *ms) {
    (void)d; (void)wait; (void)k; (void)samples; (void)ms;
    return 0;
}
int vx_dist_piece_setup(vx_dist *d, vx_piece_req *req, vx_scene *s, vx_render_opts *o, float bg[3]) {
    (void)d;
    return vx_dist_piece_make(req, s, o, bg);
}
int vx_dist_composite(vx_dist *d, const float w2i[12], const vx_camera *cam, vx_frame *f) {
    (void)d; (void)w2i; (void)cam; (void)f;
    return 0;
}
