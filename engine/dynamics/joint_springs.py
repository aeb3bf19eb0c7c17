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
(spring_block_coefficients): with anchors off the centres of mass the rows share the bodies'
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
spring_block_coefficients: engine.dynamics.joint_solver's _limit_folds decides which), solved exactly
with the spring.
"""
import numpy as np

from .joint_math import inv3

EXPLICIT_UP_TO = 0.5   # h omega below which the stiffness is explicit (lossless)
IMPLICIT_FROM = 1.0    # h omega above which it is fully implicit (Box2D v3's soft spring)


def spring_beta(k, kdiag, h):
    """The stiffness's implicit fraction per row: 0 for h omega <= 0.5, 1 from h omega = 1."""
    homega = h * np.sqrt(np.maximum(k * kdiag, 0.0))
    return np.clip((homega - EXPLICIT_UP_TO) / (IMPLICIT_FROM - EXPLICIT_UP_TO), 0.0, 1.0)


def limit_as_spring(eff, omega, zeta, h):
    """(stiffness, s) of the implicit spring a soft-step limit row is (Box2D v3's soft step
    with frequency omega and damping ratio zeta on the row's effective mass eff): its impulse
    new = -mscale eff (u + bias_rate C) is -h (k C + s u') with k = eff omega^2 and
    s = eff (2 zeta omega + h omega^2), the form of the spring rows' beta = 1."""
    return eff * omega * omega, eff * (2.0 * zeta * omega + h * omega * omega)


def spring_block_coefficients(k, c, kdiag, kblk, coord, h, on, fold=None):
    """(gain (m, 3, 3), bias (m, 3), leak (m, 3, 3)) of one block of three spring rows per
    joint: stiffness k, damping c, coordinates coord (m, 3), kdiag (m, 3) the rows' own
    inverse effective masses (they set each row's implicit fraction, as spring_beta), kblk
    (m, 3, 3) the block's K = J M^-1 J^T, on (m, 3) the rows that are live springs. The
    update is new = lam - leak lam - gain u - bias, with A = I + h S K: leak = A^-1,
    gain = A^-1 h S, bias = A^-1 h k C. Rows that are not springs get new = 0 (A's row is
    the identity's, so is A^-1's). fold (kl, sl, bound) (m, 3) each: limits folded into the
    block (engine.dynamics.joint_solver's _limit_folds), extra implicit springs pulling the coordinate
    to bound, with zero kl and sl on the rows without one."""
    s = np.where(on, c + spring_beta(k, kdiag, h) * h * k, 0.0)
    force = np.where(on, k * coord, 0.0)
    if fold is not None:
        kl, sl, bound = fold
        s = s + sl
        force = force + kl * (coord - bound)
    a = h * s[:, :, None] * kblk
    a += np.eye(3)
    leak = inv3(a)   # det A >= 1: S K has the eigenvalues of S^1/2 K S^1/2 >= 0
    gain = leak * (h * s)[:, None, :]
    bias = np.einsum("mrs,ms->mr", leak, h * force)
    return gain, bias, leak
