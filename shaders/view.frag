// view.frag - shows the rendered frame (rows top to bottom) for `voxray view`. At full
// resolution each pixel fetches its own texel, so the screen holds the rendered bytes
// exactly; a reduced-resolution frame (camera moving) is stretched with bilinear filtering.
#version 330 core

uniform sampler2D u_image;
uniform ivec2 u_viewport;   // framebuffer size in pixels
out vec4 o_color;

void main() {
    ivec2 size = textureSize(u_image, 0);
    ivec2 px = ivec2(gl_FragCoord.xy);
    if (size == u_viewport) {
        o_color = vec4(texelFetch(u_image, ivec2(px.x, size.y - 1 - px.y), 0).rgb, 1.0);
    } else {
        vec2 uv = gl_FragCoord.xy / vec2(u_viewport);
        o_color = vec4(texture(u_image, vec2(uv.x, 1.0 - uv.y)).rgb, 1.0);
    }
}
