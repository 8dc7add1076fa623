/* fd_check.h - finite-difference checks of analytic gradients, shared by the fit tests:
 * central and one-sided slopes of a double reference, and a check that tells a kink (a
 * ReLU, a clamp) lying within the step from a wrong gradient. */
#ifndef VX_FD_CHECK_H
#define VX_FD_CHECK_H

#include <math.h>
#include "vx_test.h"

/* A slope by differences at steps +-h: central, and one-sided either side. */
typedef struct {
    double central, fwd, bwd;
} vx_fd;

/* from the reference at v + h, v and v - h */
static inline vx_fd vx_fd_of(double lp, double l0, double lm, double h) {
    return (vx_fd){(lp - lm) / (2 * h), (lp - l0) / h, (l0 - lm) / h};
}

/* of a function linear in the entry, whose difference quotient is exact */
static inline vx_fd vx_fd_linear(double slope) { return (vx_fd){slope, slope, slope}; }

/* |analytic - central| <= tol_rel * scale + tol_abs for every entry, scale the largest
 * |central|. Where a kink lies within the step (the one-sided slopes differ by more than
 * the tolerance), the analytic slope must match one of the one-sided ones instead, and
 * such entries must stay a quarter of the check at most, so that it keeps measuring.
 * Returns the scale, for callers to insist that the check measured something. */
static inline double vx_fd_check(const double *an, const vx_fd *fd, int n, double tol_rel, double tol_abs,
                                 const char *what) {
    double scale = 0.0;
    int kinks = 0;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(fd[i].central));
    double tol = tol_rel * scale + tol_abs;
    for (int i = 0; i < n; i++) {
        if (fabs(an[i] - fd[i].central) <= tol) continue;
        if (fabs(fd[i].fwd - fd[i].bwd) > tol && (fabs(an[i] - fd[i].fwd) <= tol || fabs(an[i] - fd[i].bwd) <= tol)) {
            kinks++;
            continue;
        }
        fprintf(stderr, "%s: entry %d analytic %.9g finite difference %.9g (one-sided %.9g, %.9g; scale %.3g)\n", what,
                i, an[i], fd[i].central, fd[i].fwd, fd[i].bwd, scale);
        fail();
    }
    if (kinks) fprintf(stderr, "%s: %d of %d entries within the step of a kink: one-sided slopes used\n", what, kinks, n);
    assert_true(4 * kinks <= n);
    return scale;
}

#endif
