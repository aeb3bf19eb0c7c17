"""What sits on top of rigid bodies: Blender's force fields, fracture, glue (breakable joints
between the pieces) and deforming meshes. Depends on ``core``, ``shapes`` and ``dynamics``."""
