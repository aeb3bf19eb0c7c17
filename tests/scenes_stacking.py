"""Stacking scenes shared by tests/test_world_stacking.py (which asserts on them) and
bench/quality_figures.py (which prints their figures before and after a change), so both run
the very same bodies.

The engine's ``Box`` is passed in rather than imported here: quality_figures.py --root runs an
older checkout's engine on these scenes, and this module must not pull in this checkout's.
Each builder adds bodies to a world the caller made (``World(sleeping=False)`` in both users).
"""


def ground(w, Box, restitution=0.0):
    """A static 80 x 80 x 1 m slab whose top face is z = 0; returns its id."""
    return w.add_body(Box([40.0, 40.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static",
                      restitution=restitution)


def run(w, dt, seconds):
    for _ in range(round(seconds / dt)):
        w.step(dt)


def tower(w, Box, n=10):
    """n unit boxes stacked on z = 0 (one shape shared by all); returns their ids."""
    cube = Box([0.5, 0.5, 0.5])
    return [w.add_body(cube, position=(0, 0, 0.5 + k)) for k in range(n)]


def pyramid(w, Box, rows=20):
    """A 2D pyramid of unit boxes on z = 0, 5 cm apart in a row: rows + ... + 1 boxes (210 for
    20 rows), bottom row first; returns their ids."""
    cube = Box([0.5, 0.5, 0.5])
    ids = []
    for row in range(rows):
        n = rows - row
        for i in range(n):
            ids.append(w.add_body(cube, position=((i - (n - 1) / 2) * 1.05, 0, 0.5 + row)))
    return ids


def heavy_on_light(w, Box):
    """A 100 kg unit box resting on a 1 kg one on z = 0; returns (light, heavy)."""
    light = w.add_body(Box([0.5, 0.5, 0.5]), position=(0, 0, 0.5), mass=1.0)
    heavy = w.add_body(Box([0.5, 0.5, 0.5]), position=(0, 0, 1.5), mass=100.0)
    return light, heavy
