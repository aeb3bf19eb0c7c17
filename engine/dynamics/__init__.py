"""What the contacts and joints do to the bodies: the soft-step contact solver and its kernels,
graph colouring and islands, integration, the joints (kinds and state, rows, chains, point-lock
kernels, springs, warm starts). Depends on ``core`` only: it sees bodies and constraints as flat
arrays, never shapes."""
