/* outputs.h - the output set of one command: checked against its inputs and against each
 * other, directories validated and then created, all before any work; files staged as
 * temporaries and renamed together at the end. Used by render, convert and make-scene. */
#ifndef VX_OUTPUTS_H
#define VX_OUTPUTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Check outputs outs[0..n) (flags[k] names each in messages) before any work: no output
 * may be an input (same file after symlinks) or equal another output, each must not be a
 * directory, and the first existing ancestor of each directory must be a directory. Then
 * the directories are created and, with clean, stale temporaries of ours (NAME.tmp.PID
 * of a dead PID) are removed. Returns 0, or -1 with vx_error set. */
int vx_outputs_prepare(const char *const *outs, const char *const *flags, int n,
                       const char *const *ins, int nin, int clean);

/* Stage atomic writes: between begin and end, vx_commit_temp() keeps each finished
 * temporary instead of renaming it; end(1) renames them all, end(0) removes them all.
 * SIGINT/SIGTERM/SIGHUP remove every temporary still pending. */
void vx_outputs_stage_begin(void);
int vx_outputs_stage_end(int ok);

/* Internal to vx_common.c: remember a temporary (for signals) / defer its rename.
 * vx_outputs_defer returns 1 when it took the temporary. */
void vx_outputs_track(const char *tmp);
void vx_outputs_untrack(const char *tmp);
int vx_outputs_defer(const char *tmp, const char *path);

#ifdef __cplusplus
}
#endif

#endif
