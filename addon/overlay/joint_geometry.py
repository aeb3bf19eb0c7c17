"""What the overlay draws for joints, as plain numpy (no bpy): anchors, the links from each
body to its anchor, the gap between the two copies of the joint point, the joint frame's
axes, hinge limit arcs and slider limit ranges, springs, reaction force arrows, and broken
joints in their own colour.

``joints`` (see source.joint_model) is a dict of arrays over the J joints:
``a``, ``b`` (J,) body rows of the frame's pos / rot (-1: the world), ``anchor_a``,
``anchor_b`` (J, 3) the joint point in each body's origin frame (world coordinates for -1),
``frame_a`` (J, 3, 3) the joint axes (columns) in A's origin frame, ``ang_limits`` and
``lin_limits`` (J, 2) the hinge (about Z) and slider (along X) ranges in the engine's
convention (B relative to A; NaN: none), ``spring`` (J,) bool, and optionally ``broken`` (J,)
bool and ``force`` (J, 3) from the frame's stored state.
"""
import numpy as np

from .geometry import arrows, lines, points

LIVE_COLOUR = (0.3, 0.9, 1.0, 1.0)
BROKEN_COLOUR = (1.0, 0.2, 0.7, 1.0)
GAP_COLOUR = (1.0, 0.2, 0.1, 1.0)
LIMIT_COLOUR = (1.0, 0.8, 0.2, 1.0)
SPRING_COLOUR = (0.7, 1.0, 0.3, 1.0)
FORCE_COLOUR = (1.0, 0.5, 0.1, 1.0)
AXIS_COLOURS = np.array([[1.0, 0.25, 0.25, 1.0], [0.3, 1.0, 0.3, 1.0], [0.3, 0.5, 1.0, 1.0]],
                        dtype=np.float32)


def _place(rows, local, pos, rot):
    """World points of local points (J, 3) in the bodies' origin frames (rows -1: world)."""
    out = np.asarray(local, dtype=np.float64).copy()
    on = rows >= 0
    if on.any():
        r = rows[on]
        out[on] = pos[r] + np.einsum("jik,jk->ji", rot[r], out[on])
    return out


def world_frames(joints, pos, rot):
    """(anchor on A, anchor on B, joint axes (J, 3, 3) carried by A) in world coordinates."""
    a = np.asarray(joints["a"], dtype=np.int64)
    b = np.asarray(joints["b"], dtype=np.int64)
    pa = _place(a, joints["anchor_a"], pos, rot)
    pb = _place(b, joints["anchor_b"], pos, rot)
    fa = np.asarray(joints["frame_a"], dtype=np.float64).copy()
    on = a >= 0
    if on.any():
        fa[on] = np.einsum("jik,jkl->jil", rot[a[on]], fa[on])
    return pa, pb, fa


def _arcs(centre, u, v, lo, hi, radius, segments=16):
    """Arc segments (J * segments, 2, 3) from angle lo to hi in the (u, v) planes, plus the
    two radii at the ends."""
    t = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, segments + 1)[None]
    pts = centre[:, None] + radius * (np.cos(t)[..., None] * u[:, None]
                                      + np.sin(t)[..., None] * v[:, None])
    arc = np.stack((pts[:, :-1], pts[:, 1:]), axis=2).reshape(-1, 2, 3)
    ends = np.stack((np.repeat(centre, 2, axis=0),
                     np.stack((pts[:, 0], pts[:, -1]), 1).reshape(-1, 3)), 1)
    return np.concatenate((arc, ends))


def joint_layers(joints, pos, rot, opts):
    """Layers of the joints of one frame (see the module docstring)."""
    n = len(joints["a"])
    if not n or not opts.get("show_joints", True):
        return []
    pos = np.asarray(pos, dtype=np.float64).reshape(-1, 3)
    pa, pb, fa = world_frames(joints, pos, rot)
    size = float(opts.get("joint_size", 0.2))
    width = opts.get("line_width", 2.0)
    broken = np.asarray(joints.get("broken", np.zeros(n, bool)), bool)
    col = np.where(broken[:, None], np.float32(BROKEN_COLOUR), np.float32(LIVE_COLOUR))
    out = []
    a, b = np.asarray(joints["a"]), np.asarray(joints["b"])
    seg, segcol = [], []
    for rows, p in ((a, pa), (b, pb)):
        on = rows >= 0
        seg.append(np.stack((pos[rows[on]], p[on]), 1))
        segcol.append(col[on])
    out.append(lines("joint_links", np.concatenate(seg), np.concatenate(segcol), 1.0))
    out.append(points("joint_anchors", np.concatenate((pa, pb)), np.concatenate((col, col)),
                      opts.get("contact_size", 8.0)))
    out.append(lines("joint_gap", np.stack((pa, pb), 1), GAP_COLOUR, width))
    live = ~broken
    if live.any():
        axes = np.stack((np.repeat(pa[live], 3, axis=0),
                         (pa[live][:, None] + size * np.swapaxes(fa[live], 1, 2)).reshape(-1, 3)),
                        1)
        out.append(lines("joint_axes", axes, np.tile(AXIS_COLOURS, (int(live.sum()), 1)),
                         width))
        ang = np.asarray(joints["ang_limits"], dtype=np.float64)
        hinge = live & np.isfinite(ang).all(axis=1)
        lim = []
        if hinge.any():
            lim.append(_arcs(pa[hinge], fa[hinge, :, 0], fa[hinge, :, 1], ang[hinge, 0],
                             ang[hinge, 1], 1.5 * size))
        lin = np.asarray(joints["lin_limits"], dtype=np.float64)
        slide = live & np.isfinite(lin).all(axis=1)
        if slide.any():
            x = fa[slide, :, 0]
            ends = pa[slide][:, None] + lin[slide][:, :, None] * x[:, None]
            lim.append(ends)
        if lim:
            out.append(lines("joint_limits", np.concatenate(lim), LIMIT_COLOUR, width))
        spring = live & np.asarray(joints["spring"], bool)
        if spring.any():
            out.append(lines("joint_springs", np.stack((pa[spring], pb[spring]), 1),
                             SPRING_COLOUR, 2 * width))
    force = joints.get("force")
    if force is not None and opts.get("show_joint_forces", True):
        f = np.asarray(force, dtype=np.float64)[live] * float(opts.get("joint_force_scale", 0.01))
        if len(f):
            out.append(lines("joint_forces", arrows(pb[live], f), FORCE_COLOUR, width))
    return [layer for layer in out if len(layer)]
