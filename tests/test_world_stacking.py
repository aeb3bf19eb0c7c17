"""Stacking: towers, a 210-box pyramid, heavy-on-light, and a line of dominoes. (The first three
scenes are built by tests/scenes_stacking.py: bench/quality_figures.py prints their figures.)"""
import numpy as np
import pytest
from scenes_stacking import ground, heavy_on_light, pyramid, run, tower

from engine.core import quat
from engine.shapes.primitives import Box
from engine.world.world import World


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_ten_box_tower_stands(dt):
    w = World(sleeping=False)
    ground(w, Box)
    ids = tower(w, Box)
    start = w.positions[ids].copy()
    run(w, dt, 10.0)
    drift = np.linalg.norm(w.positions[ids] - start, axis=1)
    assert drift.max() < 0.01, drift
    assert np.abs(w.linear_velocities[ids]).max() < 0.01


def test_pyramid_of_210_boxes_stands():
    w = World(sleeping=False)
    ground(w, Box)
    ids = pyramid(w, Box)
    assert len(ids) == 210
    start = w.positions[ids].copy()
    run(w, 1 / 24, 10.0)
    drift = np.linalg.norm(w.positions[ids] - start, axis=1)
    assert drift.max() < 0.01, drift.max()


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_heavy_box_on_light_box_does_not_sink(dt):
    w = World(sleeping=False)
    ground(w, Box)
    light, heavy = heavy_on_light(w, Box)
    run(w, dt, 5.0)
    gap = (w.positions[heavy, 2] - 0.5) - (w.positions[light, 2] + 0.5)
    assert gap > -0.01, gap  # less than 1 cm inside
    assert w.positions[light, 2] - 0.5 > -0.01
    assert np.linalg.norm(w.positions[heavy, :2]) < 0.01


def test_domino_line_falls_completely():
    """20 dominoes 0.1 x 0.5 x 1 m, 0.5 m apart; the first is tipped. (The 100-domino line
    runs in bench/bench_world_quick.py --dominoes.)"""
    w = World()
    ground(w, Box)
    d = Box([0.05, 0.25, 0.5])
    ids = [w.add_body(d, position=(0.5 * i, 0, 0.5), friction=0.6) for i in range(20)]
    w.set_velocity(ids[0], angular=(0, 1.5, 0))
    run(w, 1 / 24, 12.0)
    up = quat.rotate(w.orientations[ids], np.array([0, 0, 1.0]))
    tilt = np.degrees(np.arccos(np.clip(up[:, 2], -1, 1)))
    assert tilt.min() > 45, tilt  # every domino fell (leaning on the next or flat)
