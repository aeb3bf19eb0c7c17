"""Building shapes, offline and in numpy: primitives (Box, Sphere, Capsule), exact convex hulls,
curved shapes (Cylinder, Cone), compounds, triangle meshes with their BVH, mass properties and
approximate convex decomposition. Depends on ``core`` only."""
