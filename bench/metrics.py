"""Quality figures from pose trajectories, the same code for every engine.

Input: a bench scene and the per-frame poses of its dynamic bodies (positions (F, D, 3),
quaternions (F, D, 4) w-first; frame 0 is t = 0). Static bodies keep their scene pose.

- Penetration depths and gaps are measured on the true shapes (the scene's boxes, hulls,
  spheres) at the engines' poses by python-fcl, an independent library (FCL's box-box test,
  libccd GJK/EPA for hulls), over every pair (its dynamic AABB tree). Our own narrowphase
  measures the same frames as a cross-check; the report lists where the two disagree, which
  is how a narrowphase bug would show (and did: see the report's notes).
- Velocities, where needed, come from fourth-order central differences of the poses (no
  engine exposes the same velocities, Blender none at all); the T-handle report gives the
  floor of that estimator, measured by running it on a reference solution (Euler's equations
  integrated by scipy to 1e-12).
"""
import numpy as np

from engine.collision.broadphase import find_pairs
from engine.collision.narrowphase import collide
from engine.collision.shape_table import ShapeTable
from engine.core import quat

GAP_MARGIN = 0.05
FALLEN_DEG = 45.0
MOVING_SPEED = 0.05  # m/s
DISAGREE_MM = 1.0    # narrowphase vs FCL differences above this are listed


class Measurer:
    """Contact queries on a scene's true shapes at arbitrary poses: FCL for depths and
    distances, our narrowphase for contact normals and the cross-check."""

    def __init__(self, scene):
        import fcl
        self.fcl = fcl
        self.scene = scene
        self.shapes = [sp.engine_shape() for sp in scene.shapes]
        self.table = ShapeTable(self.shapes)  # shape ids = scene shape indices
        self.sid = scene.shape_id
        self.static = scene.kind != 0
        if self.static.sum() > 1:
            raise ValueError("the FCL manager would also report static-static pairs")
        geoms = [self._geometry(k) for k in range(len(scene.shapes))]
        self.objs = [fcl.CollisionObject(geoms[k], fcl.Transform()) for k in self.sid]
        self.manager = fcl.DynamicAABBTreeCollisionManager()
        self.manager.registerObjects(self.objs)
        self.manager.setup()

    def _geometry(self, k):
        fcl = self.fcl
        spec = self.scene.shapes[k]
        if spec.kind == "box":
            return fcl.Box(*(2.0 * spec.half_extents))
        if spec.kind == "sphere":
            return fcl.Sphere(spec.radius)
        hull = self.shapes[k]
        tris = [(f[0], f[j], f[j + 1]) for f in hull.faces for j in range(1, len(f) - 1)]
        faces = np.hstack([np.full((len(tris), 1), 3), np.array(tris)]).ravel()
        return fcl.Convex(hull.vertices, len(tris), faces)

    def full(self, pos_d, q_d):
        s = self.scene
        pos, q = s.pos.copy(), s.quat.copy()
        pos[s.dynamic], q[s.dynamic] = pos_d, q_d
        return pos, q

    def _place(self, pos, q, bodies=None):
        rot = quat.to_matrix(q)
        for i in (range(len(pos)) if bodies is None else bodies):
            self.objs[i].setTransform(self.fcl.Transform(rot[i], pos[i]))

    def depth(self, pos, q):
        """Deepest penetration (m, >= 0) over all pairs at these poses (FCL)."""
        fcl = self.fcl
        self._place(pos, q)
        self.manager.update()
        req = fcl.CollisionRequest(num_max_contacts=10**7, enable_contact=True)
        data = fcl.CollisionData(request=req)
        self.manager.collide(data, fcl.defaultCollisionCallback)
        return max([c.penetration_depth for c in data.result.contacts], default=0.0)

    def signed_distance(self, pos, q, a, b):
        """Distance between bodies a and b (m): > 0 apart, < 0 penetration depth (FCL)."""
        fcl = self.fcl
        self._place(pos, q, (a, b))
        oa, ob = self.objs[a], self.objs[b]
        res = fcl.CollisionResult()
        if fcl.collide(oa, ob, fcl.CollisionRequest(num_max_contacts=16, enable_contact=True),
                       res):
            return -max(c.penetration_depth for c in res.contacts)
        return float(fcl.distance(oa, ob, fcl.DistanceRequest(), fcl.DistanceResult()))

    def contacts(self, pos, q, margin):
        """Pair indices and manifolds (our narrowphase) of every pair within `margin`."""
        t = self.table
        rot = quat.to_matrix(q)
        pts = np.einsum("nij,nvj->nvi", rot, t.points[self.sid]) + pos[:, None, :]
        r = t.radius[self.sid][:, None]
        lo = pts.min(axis=1) - r - margin
        hi = pts.max(axis=1) + r + margin
        ia, ib = find_pairs(lo, hi, static=self.static)
        man = collide(t, self.sid[ia], pos[ia], q[ia], self.sid[ib], pos[ib], q[ib],
                      margin=margin)
        return ia, ib, man

    def np_depth(self, pos, q):
        """Deepest penetration by our narrowphase (the cross-check)."""
        _, _, man = self.contacts(pos, q, 0.0)
        sep = man.separation[man.count > 0]
        return float(max(0.0, -sep.min())) if sep.size else 0.0


def frames_to_measure(n_frames, n_bodies, budget=150_000):
    """Every frame for small scenes; evenly spaced frames (plus the last) so that frames x
    bodies stays within the budget for large ones."""
    step = max(1, int(np.ceil(n_frames * n_bodies / budget)))
    f = np.arange(0, n_frames, step)
    return np.unique(np.r_[f, n_frames - 1])


def max_penetration(m, pos, q):
    """Deepest penetration over the measured frames (FCL), the number of frames measured,
    and the deepest by our narrowphase on the same frames with the frames where the two
    disagree by more than DISAGREE_MM."""
    frames = frames_to_measure(len(pos), len(pos[0]))
    fc, nph, bad = [], [], []
    for f in frames:
        P, Q = m.full(pos[f], q[f])
        a, b = m.depth(P, Q), m.np_depth(P, Q)
        fc.append(a)
        nph.append(b)
        if abs(a - b) > 1e-3 * DISAGREE_MM:
            bad.append(int(f))
    return max(fc), len(frames), max(nph), bad


def resting_gap(m, pos, q, ground_only=False):
    """Mean signed distance (FCL) of the supporting pairs at the last frame (m): > 0 the
    bodies hover above their supports, < 0 they sink in. Supporting pairs: within 5 cm with
    a contact normal within 45 degrees of vertical (side neighbours are not supports); with
    ground_only, only pairs with the static body (in a loose pile, two bodies 3 cm apart are
    neighbours, not a gap)."""
    P, Q = m.full(pos[-1], q[-1])
    ia, ib, man = m.contacts(P, Q, GAP_MARGIN)
    keep = (man.count > 0) & (np.abs(man.normal[:, 2]) > np.sqrt(0.5))
    if ground_only:
        keep &= m.static[ia] | m.static[ib]
    d = [m.signed_distance(P, Q, a, b) for a, b in zip(ia[keep], ib[keep])]
    return float(np.mean(d)) if d else float("nan")


def rotation_angle(qa, qb):
    """Angle (rad) of the rotation between unit quaternions (..., 4)."""
    d = np.abs(np.sum(qa * qb, axis=-1))
    return 2.0 * np.arccos(np.clip(d, 0.0, 1.0))


def drift(pos, q, frame=-1):
    """Largest displacement (m) and rotation (rad) of any dynamic body from t = 0."""
    dp = np.linalg.norm(pos[frame] - pos[0], axis=1).max()
    da = rotation_angle(q[frame], q[0]).max()
    return float(dp), float(da)


def moving_at_end(s, pos):
    v = np.linalg.norm(pos[-1] - pos[-2], axis=1) * s.fps
    return int(np.count_nonzero(v > MOVING_SPEED))


def tilt_from_upright(q):
    """Angle (rad) between each body's local Z axis and the world Z axis."""
    z = quat.rotate(q, np.array([0.0, 0.0, 1.0]))
    return np.arccos(np.clip(z[..., 2], -1.0, 1.0))


# -- rigid-body kinematics from poses -------------------------------------------------------

def rotation_log(q):
    """Rotation vectors (axis * angle, angle in [0, pi]) of unit quaternions (..., 4)."""
    q = np.where(q[..., :1] < 0, -q, q)
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    return q[..., 1:] / np.where(s > 0, s, 1.0) * angle


def fd_velocities(pos, q, fps):
    """Linear and angular (world) velocities at frames 2..F-3 by the fourth-order central
    difference (f(-2) - 8 f(-1) + 8 f(1) - f(2)) / 12 dt. For the rotation, f(j) is the
    rotation vector of q[k + j] q[k]^-1: it is a smooth function of time that is 0 at frame
    k with derivative the world angular velocity there, so the stencil applies to it as is."""
    dt = 1.0 / fps
    c = {-2: 1.0, -1: -8.0, 1: 8.0, 2: -1.0}
    n = len(pos)
    k = np.arange(2, n - 2)
    v = sum(cj * pos[k + j] for j, cj in c.items()) / (12 * dt)
    qc = quat.conjugate(q[k])
    w = sum(cj * rotation_log(quat.multiply(q[k + j], qc)) for j, cj in c.items()) / (12 * dt)
    return v, w


def energy_momentum(pos, q, fps, mass, inertia_body):
    """Kinetic energy (F-4,) and angular momentum about the origin (F-4, 3) of one body."""
    v, w = fd_velocities(pos, q, fps)
    R = quat.to_matrix(q[2:-2])
    Iw = R @ inertia_body @ np.swapaxes(R, -1, -2)
    Lw = np.einsum("fij,fj->fi", Iw, w)
    e = 0.5 * mass * np.sum(v * v, axis=-1) + 0.5 * np.sum(w * Lw, axis=-1)
    L = Lw + mass * np.cross(pos[2:-2], v)
    return e, L


def relative_drift(e, L):
    """Largest |E - E0| / E0 and |L - L0| / |L0| over the run (reference: the first estimate)."""
    de = np.abs(e - e[0]).max() / e[0]
    dl = np.linalg.norm(L - L[0], axis=-1).max() / np.linalg.norm(L[0])
    return float(de), float(dl)


def free_body_reference(q0, w0_world, inertia_body, fps, frames):
    """Poses of a torque-free rigid body (Euler's equations + quaternion kinematics, scipy
    DOP853 at rtol 1e-12) at the frame times: the truth for the T-handle."""
    from scipy.integrate import solve_ivp
    I = np.asarray(inertia_body, dtype=float)  # principal moments (3,)
    R0 = quat.to_matrix(q0)
    wb0 = R0.T @ w0_world

    def rhs(_, y):
        qq, wb = y[:4], y[4:]
        dq = 0.5 * quat.multiply(qq, np.r_[0.0, wb])
        dw = np.cross(I * wb, wb) / I
        return np.r_[dq, dw]

    t = np.arange(frames) / fps
    sol = solve_ivp(rhs, (0.0, t[-1]), np.r_[q0, wb0], method="DOP853", t_eval=t,
                    rtol=1e-12, atol=1e-12)
    return quat.normalize(sol.y[:4].T)


# -- per scene -------------------------------------------------------------------------------

def scene_metrics(s, pos, q):
    """A dict of the quality figures that apply to scene s (SI units, angles in degrees)."""
    m = Measurer(s)
    out = {}
    name = s.name
    if name != "t_handle":
        depth, nf, np_depth, bad = max_penetration(m, pos, q)
        out["max_penetration_mm"] = 1e3 * depth
        out["penetration_frames"] = nf
        out["max_penetration_np_mm"] = 1e3 * np_depth
        out["np_disagree_frames"] = bad
        out["final_penetration_mm"] = 1e3 * m.depth(*m.full(pos[-1], q[-1]))
    if name in ("falling_cubes", "cubes_long", "hull_pile"):
        out["resting_gap_mm"] = 1e3 * resting_gap(m, pos, q, ground_only=True)
    if name in ("resting_box", "tower", "pyramid", "heavy_on_light"):
        out["resting_gap_mm"] = 1e3 * resting_gap(m, pos, q)
    if name in ("resting_box", "tower", "pyramid", "heavy_on_light"):
        dp, da = drift(pos, q)
        out["drift_mm"] = 1e3 * dp
        out["drift_deg"] = np.degrees(da)
        out["after_s"] = (len(pos) - 1) / s.fps
    if name in ("falling_cubes", "cubes_long", "hull_pile", "pyramid", "tower"):
        out["moving_at_end"] = moving_at_end(s, pos)
    if name in ("pyramid", "tower"):
        top = int(np.searchsorted(s.dynamic, s.info["top"]))
        out["top_drop_mm"] = 1e3 * float(pos[0, top, 2] - pos[-1, top, 2])
    if name == "dominoes":
        tilt = np.degrees(tilt_from_upright(q[-1]))
        out["dominoes_fallen"] = int(np.count_nonzero(tilt > FALLEN_DEG))
        out["dominoes_total"] = len(tilt)
    if name == "fast_sphere":
        k = int(np.searchsorted(s.dynamic, s.info["sphere"]))
        wall = s.shapes[s.shape_id[s.info["wall"]]]
        far = s.pos[s.info["wall"], 0] + wall.half_extents[0]
        r = s.shapes[s.shape_id[s.info["sphere"]]].radius
        x = pos[:, k, 0]
        out["tunneled"] = bool(np.any(x > far + r))
        out["sphere_final_x_m"] = float(x[-1])
    if name == "t_handle":
        k = 0
        spec = s.shapes[s.shape_id[s.info["body"]]]
        h = spec.half_extents
        mass = float(s.mass[s.info["body"]])
        ib = np.diag(mass / 3.0 * np.array([h[1]**2 + h[2]**2, h[0]**2 + h[2]**2,
                                            h[0]**2 + h[1]**2]))
        e, L = energy_momentum(pos[:, k], q[:, k], s.fps, mass, ib)
        out["energy_drift"], out["momentum_drift"] = relative_drift(e, L)
        qref = free_body_reference(s.quat[s.info["body"]], s.ang_vel[s.info["body"]],
                                   np.diag(ib), s.fps, len(pos))
        er, Lr = energy_momentum(np.zeros((len(pos), 3)), qref, s.fps, mass, ib)
        out["energy_floor"], out["momentum_floor"] = relative_drift(er, Lr)
        out["orientation_error_deg_1s"] = float(np.degrees(
            rotation_angle(q[min(s.fps, len(pos) - 1), k], qref[min(s.fps, len(pos) - 1)])))
        out["orientation_error_deg_end"] = float(np.degrees(rotation_angle(q[-1, k], qref[-1])))
        # Series for the plot (frames 2..F-3): E / E0, |L - L0| / |L0|, error vs the truth.
        out["series_t"] = (np.arange(2, len(pos) - 2) / s.fps).tolist()
        out["series_energy"] = (e / e[0]).tolist()
        out["series_momentum"] = (np.linalg.norm(L - L[0], axis=1) /
                                  np.linalg.norm(L[0])).tolist()
        out["series_orientation_deg"] = np.degrees(
            rotation_angle(q[2:-2, k], qref[2:-2])).tolist()
    return out


# -- self-checks of the measuring tools (reported with the results) ---------------------------

def self_checks():
    """The measurements on configurations with analytic answers: list of (what, expected,
    FCL, our narrowphase). Run by the report so a broken measuring tool shows in the report
    itself."""
    from scenes import STATIC, Scene, ShapeSpec
    out = []

    def two(shape_a, pos_a, q_a, shape_b, pos_b, q_b):
        s = Scene("check", "check", 2)
        a = s.shape(shape_a)
        b = s.shape(shape_b)
        s.add(a, pos_a, q_a, kind=STATIC)
        s.add(b, pos_b, q_b)
        s.finish()
        m = Measurer(s)
        return m.depth(s.pos, s.quat), m.np_depth(s.pos, s.quat)

    box = ShapeSpec("box", (0.5, 0.5, 0.5))
    ground = ShapeSpec("box", (5.0, 5.0, 0.5))
    ident = (1.0, 0.0, 0.0, 0.0)
    out.append(("cube 10 mm into a cube (face-face)", 0.010,
                *two(box, (0, 0, 0), ident, box, (0.1, 0.2, 0.99), ident)))
    q45 = tuple(quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), np.pi / 4))
    out.append(("cube on an edge, 5 mm into the ground (edge-face)", 0.005,
                *two(ground, (0, 0, -0.5), ident, box, (0, 0, np.sqrt(0.5) - 0.005), q45)))
    qv = tuple(quat.from_matrix(_vertex_down()))
    out.append(("cube on a corner, 2 mm into the ground (vertex-face)", 0.002,
                *two(ground, (0, 0, -0.5), ident, box, (0, 0, np.sqrt(0.75) - 0.002), qv)))
    tetra = ShapeSpec("hull", points=[(0, 0, -0.3), (0.3, 0, 0.1), (-0.15, 0.26, 0.1),
                                      (-0.15, -0.26, 0.1)])
    out.append(("hull (tetrahedron) on a vertex, 4 mm into the ground", 0.004,
                *two(ground, (0, 0, -0.5), ident, tetra, (0.2, -0.1, 0.3 - 0.004), ident)))
    ball = ShapeSpec("sphere", radius=0.05)
    wall = ShapeSpec("box", (0.025, 1.0, 1.0))
    out.append(("0.1 m sphere 3 mm into a 5 cm wall", 0.003,
                *two(wall, (0, 0, 0), ident, ball, (-0.025 - 0.05 + 0.003, 0.3, 0.2), ident)))
    out.append(("cubes 1 mm apart (no contact)", 0.0,
                *two(box, (0, 0, 0), ident, box, (0.0, 0.0, 1.001), ident)))
    # Angular velocity estimator on an exact constant-spin rotation and on a free tumble.
    fps = 24
    w = np.array([0.3, -2.0, 1.1])
    t = np.arange(12) / fps
    q = quat.exp_map(w[None] * t[:, None], 1.0)
    _, west = fd_velocities(np.zeros((12, 3)), q, fps)
    err = float(np.abs(west - w).max())
    out.append(("angular velocity error from 24 fps poses, constant spin (rad/s)", 0.0, err,
                err))
    return out


def _vertex_down():
    """Rotation taking the cube's (1, 1, 1) diagonal to -Z (a corner pointing down)."""
    d = np.array([1.0, 1.0, 1.0]) / np.sqrt(3.0)
    z = np.array([0.0, 0.0, -1.0])
    v = np.cross(d, z)
    s, c = np.linalg.norm(v), d @ z
    k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]) / s
    ang = np.arctan2(s, c)
    return np.eye(3) + np.sin(ang) * k + (1 - np.cos(ang)) * k @ k
