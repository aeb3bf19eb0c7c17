"""Blender side of Hullabaloo: everything that touches Blender.

This package's ``__init__`` imports nothing, so its Blender-free modules import in plain Python
(tests, tools) without ``bpy``: ``transforms`` (object <-> body poses, rotation channels),
``channels`` (keyframe channel values of baked poses) and ``overlay.geometry`` (what the
overlays draw) need only numpy and the engine; ``overrides`` and ``wedge_plan`` (the command
line's --set values and the wedge's variants) only the standard library. Everything else imports ``bpy``;
``registration`` adds and removes it all (the extension root calls it).

Modules: props (settings), collect (scene -> bodies), simulate (the bake), animation (keys in
bulk), cache (per-frame states and records), ops / ui (operators, panels), cli (headless
command; its --set, --seed and summary.json in overrides, jitter, summary; the wedge in
cli_wedge, wedge_plan, contact_sheet), overlay/ (viewport overlays).
"""
