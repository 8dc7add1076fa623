/* commands.h - one entry point per `voxray COMMAND`; main.c dispatches here.
 * Each returns the process exit code: 0 ok, 1 bad input or failure, 2 usage error. */
#ifndef VX_COMMANDS_H
#define VX_COMMANDS_H

int vx_cmd_render(int argc, char **argv);     /* cmd/render.c (argv[0] = "render") */
int vx_cmd_info(int argc, char **argv);       /* cmd/info.c */
int vx_cmd_make_scene(int argc, char **argv); /* cmd/make_scene.c */
int vx_cmd_convert(int argc, char **argv);    /* cmd/convert.c */
int vx_cmd_bench(int argc, char **argv);      /* cmd/bench.c */
int vx_cmd_view(int argc, char **argv);       /* view/view.c; cmd/view.c when built without */
int vx_cmd_fit(int argc, char **argv);        /* cmd/fit.c */
int vx_cmd_eval(int argc, char **argv);       /* cmd/eval.c */

#endif
