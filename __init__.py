"""Hullabaloo: rigid-body physics for Blender, baked to keyframes.

This file is the extension's entry point (Blender 4.2+ loads the repository root as the
package ``bl_ext.<repo>.hullabaloo``). The physics engine lives in ``engine/`` (pure numpy,
no Blender imports); everything that touches Blender lives in ``addon/``.
"""


def register():
    from .addon import registration
    registration.register()


def unregister():
    from .addon import registration
    registration.unregister()
