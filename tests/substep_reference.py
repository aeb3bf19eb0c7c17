"""The substeps of a collision pass as a loop of calls to the solvers' own methods: what
World._solve ran before engine.dynamics.substeps' compiled loop took every pass, kept as the
reference the compiled loop must equal bit for bit (tests/test_substeps.py), and as a way to
watch each substep's joint calls from Python (tests/test_joint_warm.py)."""
from engine.dynamics.integrate import integrate_positions, integrate_velocities


def reference_substeps(self, solver, joints, refresh, struck, again, man, nsub, h, act,
                       movers, lin_f, ang_f, gyro, inertia_g, dpose, inv_i):
    """The substeps of a pass as a loop of calls (what World._solve ran before the compiled
    loop took every pass): the reference. Returns the substeps run."""
    x, q, vel = self._v("x"), self._v("q"), self._v("vel")
    done = nsub
    for s in range(nsub):
        self._field_kick(vel, act, h)
        integrate_velocities(vel, act, self.gravity, lin_f, ang_f, h,
                             gyro_index=gyro, q=q, inertia_body=inertia_g)
        solver.warm_start(vel)
        if joints:
            joints.warm_start(vel, x, q)
        for _ in range(self.settings.iterations * (joints.biased_sweeps() if joints else 1)):
            solver.solve(vel, dpose, True)
            if joints:
                joints.solve(vel, x, q, True)
        integrate_positions(x, q, vel, movers, h)
        dpose[movers] += h * vel[movers]
        refresh.update(solver, q, dpose, vel)
        if joints and len(joints.shared_bodies):
            refresh.follow(solver, joints.shared_bodies, q, dpose)
        relax = self.settings.relax_iterations
        for r in range(relax):
            solver.solve(vel, dpose, False)
            if joints and (joints.relax_every or r == relax - 1):
                joints.solve(vel, x, q, False)
        if joints:
            joints.end_substep()
        if s < nsub - 1 and struck is not None and struck.struck(vel, (nsub - 1 - s) * h):
            done = s + 1
            break
        if again is not None and s < nsub - 1:
            again.update(solver, refresh, man, vel, dpose, h, (nsub - 1 - s) * h, inv_i)
    return done
