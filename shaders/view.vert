// view.vert - full-screen triangle for `voxray view` (src/view/view_gl.c loads it at run
// time). No vertex buffers: the three corners come from gl_VertexID and cover the screen.
#version 330 core

void main() {
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
