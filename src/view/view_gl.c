/* view_gl.c - the viewer's OpenGL 3.3 core display: shaders loaded from shaders/ at run
 * time (compile and link logs reported), one texture drawn by a full-screen triangle,
 * a pixel buffer for CUDA interop, and the framebuffer read-back for screenshots. */
#include <glad/gl.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "view.h"
#include "vx_common.h"

int vx_view_find_shader(const char *name, char *out, size_t cap) {
    char exe[PATH_MAX], dir[PATH_MAX], share[PATH_MAX], cand[PATH_MAX], tried[4 * PATH_MAX] = "";
    const char *env = getenv("VOXRAY_SHADERS");
    const char *dirs[4];
    int n = 0;
    if (env && *env) dirs[n++] = env; /* an explicit setting wins */
    dirs[n++] = "shaders";
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        vx_dirname(exe, dir, sizeof dir);
        size_t dl = strlen(dir);
        /* `make install`: PREFIX/bin/voxray finds PREFIX/share/voxray/shaders */
        if (dl + 26 < sizeof share) {
            memcpy(share, dir, dl);
            memcpy(share + dl, "/../share/voxray/shaders", 25); /* with its NUL */
            dirs[n++] = share;
        }
        if (dl + 12 < sizeof dir) { memcpy(dir + dl, "/../shaders", 12); dirs[n++] = dir; }
    }
    for (int i = 0; i < n; i++) {
        vx_path_join(dirs[i], name, cand, sizeof cand);
        if (access(cand, R_OK) == 0) {
            snprintf(out, cap, "%s", cand);
            return 0;
        }
        size_t tl = strlen(tried);
        snprintf(tried + tl, sizeof tried - tl, "%s%s", i ? ", " : "", dirs[i]);
    }
    return vx_error("shader %s: not found (looked in %s; set VOXRAY_SHADERS to the shaders folder)",
                    name, tried);
}

/* GL info log as one line (newlines become "; "). */
static void gl_log_line(char *log) {
    size_t n = strlen(log);
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ')) log[--n] = 0;
    for (char *p = log; *p; p++)
        if (*p == '\n') *p = ';';
}

static int gl_compile(GLenum kind, const char *name, GLuint *out) {
    char path[PATH_MAX];
    unsigned char *src;
    size_t len;
    if (vx_view_find_shader(name, path, sizeof path) || vx_read_file(path, 1 << 20, &src, &len))
        return -1;
    GLuint sh = glCreateShader(kind);
    const char *text = (const char *)src;
    GLint ok = 0;
    glShaderSource(sh, 1, &text, NULL);
    glCompileShader(sh);
    glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
    free(src);
    if (!ok) {
        char log[2048] = "";
        glGetShaderInfoLog(sh, sizeof log, NULL, log);
        gl_log_line(log);
        glDeleteShader(sh);
        return vx_error("shader %s: compile failed: %s", path, log);
    }
    *out = sh;
    return 0;
}

int vx_view_gl_init(vx_view_gl *g) {
    GLuint vs, fs;
    GLint ok = 0;
    memset(g, 0, sizeof *g);
    if (gl_compile(GL_VERTEX_SHADER, "view.vert", &vs)) return -1;
    if (gl_compile(GL_FRAGMENT_SHADER, "view.frag", &fs)) { glDeleteShader(vs); return -1; }
    g->prog = glCreateProgram();
    glAttachShader(g->prog, vs);
    glAttachShader(g->prog, fs);
    glLinkProgram(g->prog);
    glDeleteShader(vs);
    glDeleteShader(fs);
    glGetProgramiv(g->prog, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[2048] = "";
        glGetProgramInfoLog(g->prog, sizeof log, NULL, log);
        gl_log_line(log);
        glDeleteProgram(g->prog);
        g->prog = 0;
        return vx_error("shaders view.vert + view.frag: link failed: %s", log);
    }
    g->loc_image = glGetUniformLocation(g->prog, "u_image");
    g->loc_viewport = glGetUniformLocation(g->prog, "u_viewport");
    glGenVertexArrays(1, &g->vao); /* core profile needs one bound, even with no attributes */
    glGenTextures(1, &g->tex);
    glBindTexture(GL_TEXTURE_2D, g->tex);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    GLenum e = glGetError();
    if (e != GL_NO_ERROR) return vx_error("OpenGL error 0x%04x while creating the display", e);
    return 0;
}

/* (Re)allocate the texture storage when the frame size changes. */
static void gl_tex_size(vx_view_gl *g, int w, int h) {
    glBindTexture(GL_TEXTURE_2D, g->tex);
    if (g->tex_w == w && g->tex_h == h) return;
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
    g->tex_w = w;
    g->tex_h = h;
}

int vx_view_gl_upload_rgb(vx_view_gl *g, const unsigned char *rgb, int w, int h) {
    gl_tex_size(g, w, h);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, rgb);
    GLenum e = glGetError();
    if (e != GL_NO_ERROR) return vx_error("OpenGL error 0x%04x uploading a %dx%d frame", e, w, h);
    return 0;
}

int vx_view_gl_pbo_size(vx_view_gl *g, int w, int h) {
    int bytes = w * h * 4;
    if (g->pbo && g->pbo_bytes == bytes) return 0;
    if (!g->pbo) glGenBuffers(1, &g->pbo);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, g->pbo);
    glBufferData(GL_PIXEL_UNPACK_BUFFER, bytes, NULL, GL_STREAM_DRAW);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    g->pbo_bytes = bytes;
    return 1;
}

int vx_view_gl_upload_pbo(vx_view_gl *g, int w, int h) {
    gl_tex_size(g, w, h);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, g->pbo);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    GLenum e = glGetError();
    if (e != GL_NO_ERROR) return vx_error("OpenGL error 0x%04x copying the pixel buffer", e);
    return 0;
}

void vx_view_gl_draw(vx_view_gl *g, int fb_w, int fb_h) {
    glViewport(0, 0, fb_w, fb_h);
    glClearColor(0, 0, 0, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    if (!g->tex_w) return;
    glUseProgram(g->prog);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, g->tex);
    glUniform1i(g->loc_image, 0);
    glUniform2i(g->loc_viewport, fb_w, fb_h);
    glBindVertexArray(g->vao);
    glDrawArrays(GL_TRIANGLES, 0, 3);
}

int vx_view_gl_read(int fb_w, int fb_h, unsigned char *rgb) {
    size_t row = (size_t)fb_w * 3;
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, fb_w, fb_h, GL_RGB, GL_UNSIGNED_BYTE, rgb);
    GLenum e = glGetError();
    if (e != GL_NO_ERROR) return vx_error("OpenGL error 0x%04x reading the framebuffer", e);
    for (int i = 0; i < fb_h / 2; i++) { /* GL rows run bottom to top */
        unsigned char *a = rgb + (size_t)i * row, *b = rgb + (size_t)(fb_h - 1 - i) * row;
        for (size_t k = 0; k < row; k++) { unsigned char t = a[k]; a[k] = b[k]; b[k] = t; }
    }
    return 0;
}

void vx_view_gl_destroy(vx_view_gl *g) {
    if (g->pbo) glDeleteBuffers(1, &g->pbo);
    if (g->tex) glDeleteTextures(1, &g->tex);
    if (g->vao) glDeleteVertexArrays(1, &g->vao);
    if (g->prog) glDeleteProgram(g->prog);
    memset(g, 0, sizeof *g);
}
