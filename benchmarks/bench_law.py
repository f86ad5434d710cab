"""Benchmark: the limit law's density on a 2,000-point grid (GPT-3 175B preset).

Times (median of several runs, wall clock and process CPU time, after
compilation):

* ``density``: ``law.density(x)`` on 2,000 points of ``law.grid(2000)``
  (inside the support, clustered at the edges, so every point needs the
  solver; points outside the support cost nothing);
* ``fresh law``: a new law object of the same shape, so support detection
  (edge scan, bisection, midpoint checks) is included;
* ``cdf``: building the distribution function (adaptive panels) once.

Accuracy, against references that do not share the quantity measured:

* the same densities with a finer continuation (Im z shrinking by 0.7 per
  Newton step instead of 0.3, twice the steps) - the largest relative change;
* moments 1-4 by quadrature of the density (plus atoms) against the exact
  power-series moments, and the total mass;
* moments by contour integrals of the Stieltjes transform (off the axis);
* the edges: density just inside (> 0) and just outside (= 0) each edge.

    python benchmarks/bench_law.py [--preset gpt3-175b] [--points 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gelib import preset_config
from gelib.attention_law import output_law


def timed(fn, repeats):
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="gpt3-175b")
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    cfg = preset_config(args.preset)
    print(f"layer: {cfg.describe()}")

    t0 = time.perf_counter()
    law = output_law(cfg)
    x = law.grid(args.points)
    law.density(x)
    print(f"first call (compilation + support detection + density): {time.perf_counter() - t0:.2f} s")

    wall, cpu = timed(lambda: law.density(x), args.repeats)
    print(f"density, {x.size} points:        median {wall * 1e3:7.1f} ms wall, {cpu * 1e3:7.1f} ms CPU")
    fresh = iter(range(1, 100))  # a new beta each time: a new law, nothing cached
    wall, cpu = timed(lambda: output_law(cfg.replace(beta=cfg.beta * (1 + next(fresh) * 1e-9))).density(x), 3)
    print(f"fresh law (edges + density):  median {wall * 1e3:7.1f} ms wall, {cpu * 1e3:7.1f} ms CPU")
    wall, cpu = timed(lambda: output_law(cfg.replace(beta=cfg.beta * (1 - next(fresh) * 1e-9)))._components, 3)
    print(f"distribution function (cdf):  median {wall * 1e3:7.1f} ms wall, {cpu * 1e3:7.1f} ms CPU")

    dens = law.density(x)
    fine = law._g(x, steps=(0.7,)).imag / np.pi
    print(f"\nsupport {law.edges()}, atoms {law.atoms()}")
    change = np.abs(dens / fine - 1)
    lo, hi = law.edges()[0][0], law.edges()[-1][1]
    at = x[np.argmax(change)]
    print(
        f"density vs finer continuation: rel. change median {np.median(change):.1e}, "
        f"max {change.max():.1e} (at {min(at - lo, hi - at) / (hi - lo):.1e} of the width "
        f"from an edge, density {dens[np.argmax(change)]:.1e})"
    )

    comps = law._components
    mass = sum(c.mass for c in comps) + sum(m for _, m in law.atoms())
    exact = law.moments(4)
    quad = np.zeros(4)
    for c in comps:
        nodes = c.points[len(c.breaks) :].reshape(-1, 16)
        w = np.polynomial.legendre.leggauss(16)[1] * c.half[:, None]
        quad += [np.sum(w * law.density(nodes) * nodes**k) for k in range(1, 5)]
    quad += [sum(m * a**k for a, m in law.atoms()) for k in range(1, 5)]
    contour = law.integrate(lambda z: z[None] ** np.arange(1, 5)[:, None], method="contour")
    print(f"total mass - 1: {mass - 1:.1e}")
    print("moments (exact):                " + "  ".join(f"{m:.10g}" for m in exact))
    for label, got in (("quadrature of density", quad), ("contour integral", contour)):
        print(f"{label + ' / exact - 1:':36s}" + "  ".join(f"{g / m - 1:+.1e}" for g, m in zip(got, exact)))
    for lo, hi in law.edges():
        d = law.density(
            np.array([lo * (1 - 1e-9) - 1e-300, lo + 1e-9 * (hi - lo), hi - 1e-9 * (hi - lo), hi * (1 + 1e-9)])
        )
        print(
            f"edge [{lo:.15g}, {hi:.15g}]: density just outside {d[0]:.1e} / {d[3]:.1e}, "
            f"1e-9 inside {d[1]:.2e} / {d[2]:.2e}"
        )


if __name__ == "__main__":
    main()
