"""WorldSettings, ShapeKind / BodyKind and StepRecord: the engine's public foundations."""
import dataclasses
import inspect

import numpy as np
import pytest

import engine
from engine import BodyKind, EngineError, ShapeKind, StepRecord, World, WorldSettings
from engine.dynamics.solver import ContactSolver


# -- WorldSettings --------------------------------------------------------------------------
def test_every_setting_has_a_unit_and_a_meaning():
    for f in dataclasses.fields(WorldSettings):
        assert f.metadata.get("unit") and len(f.metadata.get("doc", "")) > 15, f.name
    text = WorldSettings.describe()
    assert all(name in text for name in WorldSettings.names())


def test_settings_are_frozen_and_replace_validates():
    s = WorldSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.ccd = False  # type: ignore[misc]
    assert s.replace(ccd=False).ccd is False and s.ccd is True
    with pytest.raises(EngineError, match=r"unknown world setting.*contact_herz"):
        s.replace(contact_herz=60)


@pytest.mark.parametrize("kwargs, words", [
    (dict(iterations=0), "iterations"),
    (dict(substeps=2.5), "substeps"),
    (dict(gravity=(0, 0, np.nan)), "gravity"),
    (dict(gravity=(0, 9.81)), "gravity"),
    (dict(contact_hertz=-1.0), "contact_hertz"),
    (dict(max_substep=0.0), "max_substep"),
    (dict(time_to_sleep="soon"), "time_to_sleep"),
])
def test_bad_settings_name_the_setting(kwargs, words):
    with pytest.raises(EngineError, match=words):
        WorldSettings(**kwargs)
    with pytest.raises(EngineError, match=words):
        World(**kwargs)


def test_world_overrides_are_a_shorthand_for_settings():
    s = WorldSettings(contact_hertz=60.0, sleeping=False)
    assert World(contact_hertz=60.0, sleeping=False).settings == s
    assert World(settings=s).settings == s
    assert World(settings=WorldSettings(sleeping=False), contact_hertz=60.0).settings == s
    assert World().settings == WorldSettings()
    with pytest.raises(EngineError, match="WorldSettings"):
        World(settings={"ccd": False})


def _drop(world):
    world.add_body(engine.Box([2.0, 2.0, 0.5]), position=(0, 0, -0.5), kind="static")
    world.add_body(engine.Box([0.5, 0.5, 0.5]), position=(0, 0, 0.7),
                   angular_velocity=(1.0, 2.0, 0.5))
    for _ in range(30):
        world.step(1 / 24)
    return np.concatenate((world.positions.ravel(), world.orientations.ravel()))


def test_settings_route_and_shorthand_give_the_same_bits():
    s = WorldSettings(contact_hertz=60.0, relax_iterations=1)
    np.testing.assert_array_equal(_drop(World(settings=s)),
                                  _drop(World(contact_hertz=60.0, relax_iterations=1)))


def test_changing_settings_between_steps_takes_effect():
    w = World()
    w.add_body(engine.Sphere(0.5))
    w.step(0.1)
    np.testing.assert_allclose(w.linear_velocities[0], [0, 0, -0.981], rtol=1e-12)
    w.settings = w.settings.replace(gravity=(1.0, 0.0, 0.0))
    w.step(0.1)
    np.testing.assert_allclose(w.linear_velocities[0], [0.1, 0, -0.981], rtol=1e-12)


def test_the_solver_has_no_numbers_of_its_own():
    params = inspect.signature(ContactSolver).parameters
    assert params["settings"].default is inspect.Parameter.empty
    assert not {"contact_hertz", "damping_ratio", "max_push"} & set(params)


# -- kinds ----------------------------------------------------------------------------------
def test_body_kind_accepts_the_enum_or_its_lower_case_name():
    assert BodyKind.parse("kinematic") is BodyKind.KINEMATIC
    assert BodyKind.parse(BodyKind.STATIC) is BodyKind.STATIC
    for bad in ("Dynamic", "floppy", 3, None):
        with pytest.raises(EngineError, match="unknown body kind"):
            BodyKind.parse(bad)
    w = World()
    a = w.add_body(engine.Box(0.5), kind=BodyKind.STATIC)
    b = w.add_body(engine.Box(0.5), kind="static", position=(3, 0, 0))
    c = w.add_body(engine.Box(0.5), position=(6, 0, 0))
    assert w.kinds[a] == w.kinds[b] == BodyKind.STATIC and w.kinds[c] == BodyKind.DYNAMIC


def test_shape_kinds_of_every_shape():
    pts = np.random.default_rng(0).normal(size=(20, 3))
    hull = engine.ConvexHull(pts)
    mesh = engine.TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    cases = [(engine.Box(0.5), ShapeKind.POLYTOPE), (hull, ShapeKind.POLYTOPE),
             (engine.Sphere(1.0), ShapeKind.SPHERE), (engine.Capsule(0.2, 0.5), ShapeKind.CAPSULE),
             (engine.Compound([(engine.Box(0.5), (0, 0, 0), (1, 0, 0, 0))]), ShapeKind.COMPOUND),
             (mesh, ShapeKind.TRIANGLE_MESH)]
    table = engine.ShapeTable([s for s, _ in cases])
    for (shape, kind), code in zip(cases, table.kind):
        assert shape.kind is kind and code == kind


# -- StepRecord -----------------------------------------------------------------------------
def test_step_record_of_a_resting_box_and_its_round_trips():
    w = World(sleeping=False)
    w.add_body(engine.Box([2.0, 2.0, 0.5]), position=(0, 0, -0.5), kind="static")
    w.add_body(engine.Box([0.5, 0.5, 0.5]), position=(0, 0, 0.5))
    for _ in range(24):
        w.step(1 / 24, record=True)
    r = w.last_record
    assert isinstance(r, StepRecord) and r.contact_count == 4
    # Weight carried by the four corners over the last substep: m g h.
    h = (1 / 24) / w.substeps_for(1 / 24)
    np.testing.assert_allclose(r.normal_impulses.sum(), 1.0 * 9.81 * h, rtol=1e-3)
    assert r.aabbs.shape == (2, 2, 3) and r.sleeping.shape == (2,)
    back = StepRecord.from_dict({**r.as_dict(), "from_the_future": np.zeros(3)})
    for name in StepRecord.names():
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name))
    small = r.compact()
    assert small.positions.dtype == np.float32 and small.pairs.dtype == np.int32
    np.testing.assert_allclose(small.positions, r.positions, rtol=1e-6)
    for f in dataclasses.fields(StepRecord):
        assert f.metadata["doc"], f.name
