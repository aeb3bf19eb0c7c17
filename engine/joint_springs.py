"""Spring rows of engine.joint_solver: a spring that keeps its energy, a damper that is exact.

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
"""
import numpy as np

EXPLICIT_UP_TO = 0.5   # h omega below which the stiffness is explicit (lossless)
IMPLICIT_FROM = 1.0    # h omega above which it is fully implicit (Box2D v3's soft spring)


def spring_beta(k, kdiag, h):
    """The stiffness's implicit fraction per row: 0 for h omega <= 0.5, 1 from h omega = 1."""
    homega = h * np.sqrt(np.maximum(k * kdiag, 0.0))
    return np.clip((homega - EXPLICIT_UP_TO) / (IMPLICIT_FROM - EXPLICIT_UP_TO), 0.0, 1.0)


def spring_coefficients(k, c, kdiag, eff, coord, h):
    """(gain, bias, leak, low, high, sign) of spring rows with stiffness k, damping c, inverse
    effective mass kdiag (eff = 1 / kdiag or 0), coordinate coord (the rest pose is 0)."""
    s = c + spring_beta(k, kdiag, h) * h * k
    a = h * kdiag * s
    scale = 1.0 / (1.0 + a)
    live = eff > 0.0
    gain = h * s * scale * live
    bias = h * k * coord * scale * live
    return gain, bias, scale, -np.inf, np.inf, 1.0
