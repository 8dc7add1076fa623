/* png_compare.c - pixel-by-pixel comparison of two PNGs for tests/test_view.sh: both are
 * read as RGB (grey expands to grey RGB); exit 0 when every channel differs by at most
 * --tol (default 1, i.e. 1/255), or with --differ when some channel differs by more. */
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *a = NULL, *b = NULL;
    int tol = 1, differ = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tol") && i + 1 < argc) tol = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--differ")) differ = 1;
        else if (!a) a = argv[i];
        else if (!b) b = argv[i];
        else { fprintf(stderr, "png_compare: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!a || !b) {
        fprintf(stderr, "usage: png_compare A.png B.png [--tol N] [--differ]\n");
        return 2;
    }
    int wa, ha, wb, hb, ca, cb;
    unsigned char *pa = stbi_load(a, &wa, &ha, &ca, 3), *pb = stbi_load(b, &wb, &hb, &cb, 3);
    if (!pa || !pb) {
        fprintf(stderr, "png_compare: cannot read %s: %s\n", !pa ? a : b, stbi_failure_reason());
        return 2;
    }
    if (wa != wb || ha != hb) {
        fprintf(stderr, "png_compare: %s is %dx%d, %s is %dx%d\n", a, wa, ha, b, wb, hb);
        return 1;
    }
    size_t n = (size_t)wa * ha * 3, over = 0, first = (size_t)-1;
    int maxd = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)pa[i] - (int)pb[i]);
        if (d > maxd) maxd = d;
        if (d > tol) { over++; if (first == (size_t)-1) first = i; }
    }
    int ok = differ ? over > 0 : over == 0;
    printf("png_compare: %s vs %s: %dx%d, max diff %d/255, %zu channel values over %d", a, b, wa, ha,
           maxd, over, tol);
    if (first != (size_t)-1)
        printf(" (first at x=%zu y=%zu: %d vs %d)", (first / 3) % wa, first / 3 / wa, pa[first], pb[first]);
    printf(" -> %s\n", ok ? "ok" : "MISMATCH");
    stbi_image_free(pa);
    stbi_image_free(pb);
    return ok ? 0 : 1;
}
