"""Who touches whom: the shape table the kernels read, the broadphase, the narrowphase (SAT and
clipping, GJK/EPA, curved shapes, compound parts, triangle meshes), the pair table that matches
contacts across steps for warm starting, time of impact, and the single-pair queries. Depends on
``core`` and ``shapes``."""
