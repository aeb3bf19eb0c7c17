"""Issue 11 in the real Blender: engine messages name objects, the engine guard and absurd
speeds are reported by object name (the bake is not called a success), and a fuzz of broken
meshes goes through import + bake without a crash, a NaN key or a lost object."""
import math

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy


def _scene():
    scene = hb.empty_scene(frame_end=16)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    calm = hb.add_box("Calm", location=(-4, 0, 3))
    wild = hb.add_box("Wild", location=(4, 0, 3))
    scene.frame_set(1)
    return scene, calm, wild




def _messages():
    return [str(p) for p in hb.pkg().addon.ops.LAST["problems"]]


def test_engine_messages_name_the_object_not_a_body_index(monkeypatch):
    scene, calm, wild = _scene()
    World = type(hb.engine_world(scene))
    real_step = World.step
    EngineError = hb.engine().EngineError


    def step(self, dt, record=None):
        if self.time > 0.2:
            raise EngineError("broadphase got 1 invalid boxes (NaN or lo > hi), first at "
                              "body 2; check that body's pose")
        return real_step(self, dt, record)

    monkeypatch.setattr(World, "step", step)
    with pytest.raises(RuntimeError) as err:
        bpy.ops.hullabaloo.bake()
    msg = str(err.value)
    assert "body 2" not in msg

    assert any(f'object "{n}"' in msg for n in ("Calm", "Ground", "Wild")), msg


def test_guard_firing_is_reported_by_name_and_the_bake_goes_on(monkeypatch):
    """Fault injection: one body's velocity turns NaN inside a step (a solver blow-up). The
    bake finishes, every key is finite, the report names that object (once), and the
    other dynamic object falls as usual."""
    scene, calm, wild = _scene()
    wmod = __import__(hb.MODULE + ".engine.world", fromlist=["integrate_velocities"])
    real = wmod.integrate_velocities
    state = {"n": 0, "body": None}

    def integrate(vel, *args, **kw):
        real(vel, *args, **kw)
        state["n"] += 1
        if state["n"] == 40:
            vel[state["body"], 2] = math.nan

    World = type(hb.engine_world(scene))
    real_add = World.add_body

    def add_body(self, *a, **kw):
        i = real_add(self, *a, **kw)
        if kw.get("kind", "dynamic") == "dynamic" and self.positions[i][0] > 0:
            state["body"] = i     # Wild is the dynamic body at x > 0
        return i

    monkeypatch.setattr(World, "add_body", add_body)
    monkeypatch.setattr(wmod, "integrate_velocities", integrate)
    last = hb.bake()
    summary = last["summary"]
    assert list(summary["guarded"]) == ["Wild"], summary
    hits = [m for m in _messages() if m.startswith("Wild:") and "failed at frame" in m]
    assert len(hits) == 1, _messages()
    for o in (calm, wild):
        for ch, attrs in hb.keys_of(o).items():
            assert np.all(np.isfinite(attrs["co"])), (o.name, ch)
    scene.frame_set(16)
    assert calm.matrix_world.translation.z < 2.0   # landed: the rest of the scene went on


def test_absurd_speed_is_reported_by_name_not_as_success(monkeypatch):
    """A body leaving at 1e6 m/s in a scene that starts at rest (an injected blow-up) is
    named in the problems and in the summary's ``unstable``; a calm bake has none."""
    scene, calm, wild = _scene()
    last = hb.bake()
    assert last["summary"]["unstable"] == {} and last["summary"]["guarded"] == {}
    scene, calm, wild = _scene()
    World = type(hb.engine_world(scene))
    real_step = World.step

    def step(self, dt, record=None):
        real_step(self, dt, record)
        if 0.2 < self.time < 0.2 + 1.5 * dt:
            right = np.flatnonzero((self.kinds == 0) & (self.positions[:, 0] > 0))
            self.set_velocity(int(right[0]), linear=(1.0e6, 0.0, 0.0))

    monkeypatch.setattr(World, "step", step)
    last = hb.bake()
    assert list(last["summary"]["unstable"]) == ["Wild"], last["summary"]
    frame, speed = last["summary"]["unstable"]["Wild"]
    assert speed > 1e5 and 5 <= frame <= 8
    assert any(m.startswith("Wild:") and "m/s" in m for m in _messages())
