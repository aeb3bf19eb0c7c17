"""``StepRecord``: what one ``World.step`` saw and did, for overlays, caches and tests.

``World.step(dt, record=True)`` (or ``World.record = True``) leaves one in ``World.last_record``.
It describes the *last collision pass* of the step (a 1/24 s step runs two passes; the record is
of the one that ends at the new poses). K is the number of contact points, M of manifolds, N of
bodies. Arrays are copies: the record stays valid after later steps.

The GJK simplices and EPA polytopes of a pair are not kept per step (they cost memory on every
pair every step); the overlay re-runs ``engine.collision.queries`` for the pairs it shows.
"""
import dataclasses
from dataclasses import dataclass, field

import numpy as np


def _arr(shape, dtype, doc):
    return field(default_factory=lambda: np.zeros(shape, dtype=dtype), metadata={"doc": doc})


@dataclass
class StepRecord:
    """One step's contacts, impulses, pairs, boxes and sleep state (see module docstring)."""

    positions: np.ndarray = _arr((0, 3), np.float64,
                                 "(K, 3) contact points, world, on body B's surface (m)")
    normals: np.ndarray = _arr((0, 3), np.float64,
                               "(K, 3) unit contact normal of each point, from body A to body B")
    separations: np.ndarray = _arr((0,), np.float64,
                                   "(K,) signed distance at the start of the pass (m): > 0 apart "
                                   "(a speculative point), < 0 penetration depth")
    normal_impulses: np.ndarray = _arr((0,), np.float64,
                                       "(K,) normal impulse of the pass's last substep (N s), "
                                       "the value warm-starting the next step")
    friction_impulses: np.ndarray = _arr((0, 2), np.float64,
                                         "(K, 2) friction impulse along the manifold's two "
                                         "tangents (N s), last substep")
    pairs: np.ndarray = _arr((0, 2), np.int64, "(K, 2) body indices (A, B) of each point")
    manifold_pairs: np.ndarray = _arr((0, 2), np.int64,
                                      "(M, 2) body indices (A, B) of each manifold with points")
    manifold_sub: np.ndarray = _arr((0,), np.int64,
                                    "(M,) which manifold of the body pair (compound part pair or "
                                    "triangle-mesh normal cluster; 0 for convex pairs)")
    axis_kind: np.ndarray = _arr((0,), np.int8,
                                 "(M,) how the normal was found: SAT 0 face of A, 1 face of B, "
                                 "2 edge pair; 3 closest points of round cores (GJK); 4 round "
                                 "core on a face; 5 capsule on an edge; -1 other "
                                 "(engine.collision.narrowphase)")
    axis_index: np.ndarray = _arr((0, 2), np.int64,
                                  "(M, 2) the feature indices of the axis (face or edge of A, of "
                                  "B; -1 where none)")
    aabbs: np.ndarray = _arr((0, 2, 3), np.float64,
                             "(N, 2, 3) each body's broadphase box (lo, hi): swept by its motion "
                             "over the pass and grown by the AABB margin (m)")
    sleeping: np.ndarray = _arr((0,), bool, "(N,) which bodies are asleep after the step")

    @property
    def contact_count(self):
        return len(self.positions)

    @classmethod
    def names(cls):
        return tuple(f.name for f in dataclasses.fields(cls))

    def as_dict(self):
        """{field name: array}, e.g. for np.savez."""
        return {name: getattr(self, name) for name in self.names()}

    @classmethod
    def from_dict(cls, data):
        """A record from as_dict()'s output (missing fields stay empty; unknown keys are ignored,
        so caches written by older versions still load)."""
        known = set(cls.names())
        return cls(**{k: np.asarray(v) for k, v in data.items() if k in known})

    def compact(self):
        """A copy with floats as float32 and integers as int32 where they fit: what a bake keeps
        per frame (about a quarter of the memory)."""
        out = {}
        for name, value in self.as_dict().items():
            a = np.asarray(value)
            if a.dtype.kind == "f":
                a = a.astype(np.float32)
            elif a.dtype.kind in "iu" and (a.size == 0 or np.abs(a).max() < 2 ** 31):
                a = a.astype(np.int32)
            out[name] = a
        return StepRecord(**out)
