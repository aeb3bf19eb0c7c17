"""Spring rows of engine.dynamics.joint_solver: a spring that keeps its energy, a damper that is exact.

The world's substep is symplectic Euler: velocities first (gravity, then the rows), then
positions x' = x + h v'. A spring row applies, once per substep in the biased pass, the impulse

    lam = -h (k C + (c + beta h k) u')        u' = u + K lam  (the row's velocity after it)

with C the row's coordinate at the substep's start and K = J M^-1 J^T its inverse effective
mass (the row's own oscillator has omega^2 = k K, gamma = c K). On that oscillator the substep
map (x, v) -> (x', v') has determinant 1 / D with D = 1 + h gamma + beta (h omega)^2:

- beta = 0 (stiffness explicit, damper implicit) is symplectic Euler: with c = 0 the determinant
  is 1, so no amplitude is lost over any number of periods (the orbit is a fixed ellipse whose
  x extent is the true one to (h omega)^2 / 8), the period is 2 pi / omega to (h omega)^2 / 24,
  the static sag (lam = -h k C against the weight) is m g / k exactly, and the damper's decay
  rate ln(1 + h gamma) / 2h is gamma / 2 = c / 2m to h gamma / 4. It is stable while
  h omega < 2 (trace of the map in (-2, 2)).
- beta = 1 is Box2D v3's soft spring (implicit Euler: bias rate k / (c + h k), mass scale
  a / (1 + a), impulse scale 1 / (1 + a), a = h K (c + h k)), stable for any stiffness but
  losing a fraction (h omega)^2 / 2 of the energy per substep (at 1/360 s a 20 rad/s spring
  lost 40 % of its amplitude per second).

So beta ramps from 0 at h omega <= 0.5 to 1 at h omega >= 1: ordinary springs are exact and
lossless, stiff ones (whose period is a few substeps, too fast to see at the frame rate) stay
stable. The 0.5 keeps a margin under explicit's limit of 2 for bodies held by several springs
(a long mass-spring chain's fastest mode has twice one link's omega).

Solved by Gauss-Seidel as new = lam - gain u - bias - leak lam, where u already carries the
row's current impulse lam: new = (h s K lam - h s u - h k C) / (1 + h s K), s = c + beta h k.

A joint's three linear (or three angular) spring rows are solved together, as one block
(spring_blocks): with anchors off the centres of mass the rows share the bodies'
turning and their K = J M^-1 J^T is far from diagonal, and one Gauss-Seidel sweep of rows
each implicit on its own treats that coupling explicitly. A stiff spring (h omega >> 1) then
gained energy every substep: a 2 kg box hung by a generic_spring with a 5 m arm on a 1000 kg
ball at 25 m/s went from 3.1e5 J to 1.8e12 J in two seconds (the jointed fuzzer's seeds 2
and 4, issue 11). The block's update is the scalar one with K the 3 x 3 block and S = diag(s):
(I + h S K) new = h S K lam - h S u - h k C, exact (backward Euler for beta = 1) whatever the
coupling; with uncoupled rows it is the scalar update.

A limit on a spring's axis, once violated, is a second row with the same Jacobian, and
Gauss-Seidel between the two converges like hsK / (1 + hsK) per sweep: too slowly for a stiff
spring, whose unconverged pair left large opposite impulses at the anchor. The limit's soft step
is itself an implicit spring (limit_as_spring), so it is folded into the block (the `fold` of
spring_blocks: engine.dynamics.joint_row_kernels.limit_folds decides which), solved exactly
with the spring.
"""
import numpy as np

from ..core.jit import kernel

_LOWER, _UPPER, _SPRING = 1, 2, 3   # engine.dynamics.joints' row types, as plain ints

EXPLICIT_UP_TO = 0.5   # h omega below which the stiffness is explicit (lossless)
IMPLICIT_FROM = 1.0    # h omega above which it is fully implicit (Box2D v3's soft spring)


@kernel
def spring_beta(k, kdiag, h):
    """The stiffness's implicit fraction of one row: 0 for h omega <= 0.5, 1 from h omega = 1
    (omega^2 = k kdiag, kdiag the row's inverse effective mass)."""
    homega = h * np.sqrt(max(k * kdiag, 0.0))
    return min(max((homega - EXPLICIT_UP_TO) / (IMPLICIT_FROM - EXPLICIT_UP_TO), 0.0), 1.0)


@kernel
def limit_as_spring(eff, omega, zeta, h):
    """(stiffness, s) of the implicit spring a soft-step limit row is (Box2D v3's soft step
    with frequency omega and damping ratio zeta on the row's effective mass eff): its impulse
    new = -mscale eff (u + bias_rate C) is -h (k C + s u') with k = eff omega^2 and
    s = eff (2 zeta omega + h omega^2), the form of the spring rows' beta = 1."""
    return eff * omega * omega, eff * (2.0 * zeta * omega + h * omega * omega)


@kernel
def spring_blocks(jac, mj, eff, kdiag, coord, spring, stiffness, damping, lower, upper,
                  broken, fold, imp, blocks, h, omega, zeta, max_push, gain, bias, leak, a):
    """The spring blocks' coefficients of every joint (biased pass): for each block e on in
    blocks (2,) (linear, angular) gain, leak (m, 2, 3, 3) and bias (m, 2, 3) with the update
    new = lam - leak lam - gain u - bias, A = I + h S K (K the block's J M^-1 J^T):
    leak = A^-1 (the adjugate, zero where det A is not positive and finite), gain = A^-1 h S,
    bias = A^-1 h k C. Rows that are not live springs get s = 0 (new = 0 unless a limit is
    folded in). Limits in fold (m, 6) (joint_row_kernels.limit_folds) join as the implicit
    springs limit_as_spring pulling to their bound (moved closer so that the pull stays
    under max_push), and their carried impulses move to the spring slot of imp.
    a (3, 3) scratch."""
    for j in range(jac.shape[0]):
        for e in range(2):
            if not blocks[e]:
                continue
            r0 = 3 * e
            s0, s1, s2 = 0.0, 0.0, 0.0
            f0, f1, f2 = 0.0, 0.0, 0.0
            for r in range(3):
                i = r0 + r
                c = coord[j, i]
                s = 0.0
                force = 0.0
                if spring[j, i] and not broken[j] and eff[j, i] > 0.0:
                    k = stiffness[j, i]
                    s = damping[j, i] + spring_beta(k, kdiag[j, i], h) * h * k
                    force = k * c
                low = c < lower[j, i]
                bound = lower[j, i] if low else upper[j, i]
                if fold[j, i]:
                    imp[j, _SPRING, i] += imp[j, _LOWER, i] if low else -imp[j, _UPPER, i]
                    imp[j, _LOWER, i] = 0.0
                    imp[j, _UPPER, i] = 0.0
                    kl, sl = limit_as_spring(eff[j, i], omega, zeta, h)
                    # The limit pulls to its bound by kl (C - bound), i.e. at the bias
                    # velocity kl / sl (C - bound) (the scalar row's bias_rate sep), capped at
                    # max_push as the scalar row is: the bound moves closer instead.
                    reach = max_push * sl / kl
                    bound = c - min(max(c - bound, -reach), reach)
                    s += sl
                    force += kl * (c - bound)
                if r == 0:
                    s0, f0 = s, force
                elif r == 1:
                    s1, f1 = s, force
                else:
                    s2, f2 = s, force
            for r in range(3):
                sr = s0 if r == 0 else (s1 if r == 1 else s2)
                for t in range(3):
                    kk = 0.0
                    for c in range(12):
                        kk += jac[j, r0 + r, c] * mj[j, r0 + t, c]
                    a[r, t] = h * sr * kk + (1.0 if r == t else 0.0)
            # leak = A^-1 by the adjugate (det A >= 1: S K has the eigenvalues of
            # S^1/2 K S^1/2 >= 0); cofactor row i = A[i + 1] x A[i + 2], stored transposed
            for i in range(3):
                i1, i2 = (i + 1) % 3, (i + 2) % 3
                for c in range(3):
                    c1, c2 = (c + 1) % 3, (c + 2) % 3
                    leak[j, e, c, i] = a[i1, c1] * a[i2, c2] - a[i1, c2] * a[i2, c1]
            det = a[0, 0] * leak[j, e, 0, 0] + a[0, 1] * leak[j, e, 1, 0] \
                + a[0, 2] * leak[j, e, 2, 0]
            inv = 1.0 / det if det > 0.0 and np.isfinite(det) else 0.0
            for r in range(3):
                for t in range(3):
                    leak[j, e, r, t] *= inv
                gain[j, e, r, 0] = leak[j, e, r, 0] * (h * s0)
                gain[j, e, r, 1] = leak[j, e, r, 1] * (h * s1)
                gain[j, e, r, 2] = leak[j, e, r, 2] * (h * s2)
                bias[j, e, r] = (leak[j, e, r, 0] * (h * f0) + leak[j, e, r, 1] * (h * f1)
                                 + leak[j, e, r, 2] * (h * f2))
