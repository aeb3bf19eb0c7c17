"""GPU drawing of overlay layers (geometry.Layer) with Blender's builtin shaders.

Shaders are created lazily on the first draw, never at import or register time: in
``blender -b`` the gpu module refuses to work until a GPU context exists, and creating them
early would break background use.

Lines use POLYLINE_FLAT_COLOR (wide, anti-aliased lines on every backend; core-profile line
widths above 1 are not supported). Points use POINT_FLAT_COLOR (round, sized by a uniform)
where Blender has it (4.5+), else FLAT_COLOR with gpu.state.point_size_set (4.2 LTS).

Batches are built once per layer list (``Batches``) and drawn many times: the handler
rebuilds them only when the frame or the settings change, so thousands of contacts cost one
draw call per layer per redraw.
"""
import bpy
import gpu
from gpu_extras.batch import batch_for_shader

from .geometry import LINES

_SHADERS = {}


def has_point_shader():
    return bpy.app.version >= (4, 5, 0)


def shader(name):
    sh = _SHADERS.get(name)
    if sh is None:
        sh = _SHADERS[name] = gpu.shader.from_builtin(name)
    return sh


def _line_shader():
    return 'POLYLINE_FLAT_COLOR'


def _point_shader():
    return 'POINT_FLAT_COLOR' if has_point_shader() else 'FLAT_COLOR'


def forget_shaders():
    """Drop cached shaders and batches' shaders (unregister, or a GPU context reset)."""
    _SHADERS.clear()


class Batches:
    """GPU batches of a list of layers: (kind, shader name, batch, size) per non-empty layer."""

    def __init__(self, layers):
        self.items = []
        for layer in layers:
            if not len(layer):
                continue
            name = _line_shader() if layer.kind == LINES else _point_shader()
            prim = 'LINES' if layer.kind == LINES else 'POINTS'
            batch = batch_for_shader(shader(name), prim,
                                     {"pos": layer.coords, "color": layer.colours})
            self.items.append((layer.kind, name, batch, layer.size))

    def __len__(self):
        return len(self.items)


def _get_state():
    st = gpu.state
    return dict(blend=st.blend_get(), depth_test=st.depth_test_get(),
                depth_mask=st.depth_mask_get(), line_width=st.line_width_get(),
                point_size=getattr(st, "point_size_get", lambda: 1.0)())


def _set_state(s):
    st = gpu.state
    st.blend_set(s["blend"])
    st.depth_test_set(s["depth_test"])
    st.depth_mask_set(s["depth_mask"])
    st.line_width_set(s["line_width"])
    st.point_size_set(s["point_size"])


def draw_batches(batches, viewport_size, in_front=True):
    """Draw prepared batches with the current view and projection matrices, then put the GPU
    state (blending, depth test and mask, line width, point size) back as it was."""
    if batches is None or not len(batches):
        return
    saved = _get_state()
    # The POINT_ shaders size their sprites in the vertex shader (gl_PointSize).
    pps = getattr(gpu.state, "program_point_size_set", None)
    try:
        if pps is not None and has_point_shader():
            pps(True)
        gpu.state.blend_set('ALPHA')
        gpu.state.depth_mask_set(False)
        gpu.state.depth_test_set('NONE' if in_front else 'LESS_EQUAL')
        w, h = float(viewport_size[0]), float(viewport_size[1])
        for kind, name, batch, size in batches.items:
            sh = shader(name)
            sh.bind()
            if kind == LINES:
                sh.uniform_float("viewportSize", (w, h))
                sh.uniform_float("lineWidth", size)
            elif name.startswith("POINT_"):
                sh.uniform_float("size", size)
            else:
                gpu.state.point_size_set(size)
            batch.draw(sh)
    finally:
        if pps is not None and has_point_shader():
            pps(False)
        _set_state(saved)


def draw_layers(layers, viewport_size, in_front=True):
    """Build and draw in one go (the render operator; the viewport keeps its Batches)."""
    draw_batches(Batches(layers), viewport_size, in_front)
