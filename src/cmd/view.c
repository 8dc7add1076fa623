/* cmd/view.c - `voxray view` in a build without the viewer: one line saying why and how to
 * get it. With the viewer (VX_HAVE_VIEWER) the command is src/view/view.c. main.c calls it. */
#ifndef VX_HAVE_VIEWER
#include <stdio.h>

#include "commands.h"

int vx_cmd_view(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "voxray view: this voxray was built without the viewer (GLFW or the glad2 generator was not "
                    "found at build time; `make deps` installs both, then rebuild)\n");
    return 1;
}
#else
typedef int vx__cmd_view_in_src_view; /* ISO C wants a declaration in every unit */
#endif
