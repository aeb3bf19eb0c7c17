"""The public ``World``: bodies, joints and settings, and the step's orchestration over the phases
(broadphase -> narrowphase -> pair table -> colouring -> solver substeps -> integration -> sleep),
its guard against non-finite states, what a step records for overlays, and the compiler warm-up.
Depends on every other package; nothing depends on it."""
