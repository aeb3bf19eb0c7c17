"""Viewport overlays that show what the simulation sees.

geometry.py      pure numpy: a frame's data -> draw primitives (imports without Blender)
joint_geometry.py  pure numpy: the joints' primitives (anchors, frames, limits, forces)
source.py        a frame's data: bake cache, Debug Frame re-simulation, or the live scene
draw.py          gpu batches and drawing (shaders created lazily, state restored)
handler.py       the SpaceView3D POST_VIEW draw handler (batches rebuilt only on change)
props.py         settings: Scene.hullabaloo_overlay
ui.py            the Overlays popover section
render.py        Render Debug Frame / Debug Frame operators and the headless command
registration.py  register() / unregister() of all of the above

This ``__init__`` imports nothing, so ``geometry`` imports in plain Python.
"""
