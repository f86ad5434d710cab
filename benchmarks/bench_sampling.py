"""Benchmark: time per seed of gelib's fast path against a plain NumPy literal path.

For each preset, one "seed" means: sample one layer, build the original
multi-head output (MHA) and its Gaussian equivalent Y^G from the same draw,
and compute both spectra (eigenvalues of Y Y^T / n) - what
``python -m gelib compare`` does per seed.

* baseline: plain NumPy, the literal path (X with X X^T / d = I from a QR,
  W^Q, W^K, W^V, W^O, Q = X W^Q ...), softmax with exp / sum, eigvalsh;
* gelib: the fast path (Q, K, V sampled directly), jitted JAX, heads one at a
  time, Y^G's noise and product in O(n d_k d_v) per head
  (``models._yg_reduced``), and the Gram matrices from the law of
  ``W^O W^O^T`` (``spectra.output_route``: without ``W^O`` where ``n`` is small
  against ``h d_v``, GPT-3, with ``R`` from the Cholesky factor of ``U U^T``;
  by Bartlett's triangular factor where ``d_o >= h d_v`` in a big layer);
  LAPACK eigensolver; timed after compilation, as ``model_spectra`` runs it
  (the next seed's Gram matrices formed while the eigensolver works).  Both
  reductions are exact in law.

Timing: gelib and the baseline alternate seed by seed in one process (one
BLAS thread, as ``make`` runs gelib, beside XLA's pool), so both see the same
machine; the baseline is also run alone in its own process with one BLAS
thread and with every core, and the better of those is the second reference.
Peak resident memory: each variant alone in a child process.
Also measured in the same session: this machine's float64 matmul rate and
eigensolver time, and from them the floor of a seed: its flops
(``gelib.spectra.seed_flops``, attention and output stage) at the machine's
matmul rate plus two eigensolves; the benchmark prints gelib's time over that
floor.

    python benchmarks/bench_sampling.py [--presets bert-base,gpt3-175b] [--repeats 3] [--no-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

BASELINE_DEFS = r"""
import json, math, sys, time
import numpy as np
import scipy.linalg
cfg = json.loads(sys.argv[1]); repeats = int(sys.argv[2])
n, d, h, hkv, dk, dv, do, beta = (cfg[k] for k in ("n", "d", "h", "h_kv", "d_k", "d_v", "d_o", "beta"))
rng = np.random.default_rng(0)
alpha = math.sqrt(math.expm1(beta**2) - beta**2)

def one_seed():
    g = rng.standard_normal((d, n))
    qm, r = np.linalg.qr(g)
    x = math.sqrt(d) * (qm * np.sign(np.diag(r))).T
    wq = rng.standard_normal((h, d, dk)) / math.sqrt(d)
    wk = rng.standard_normal((hkv, d, dk)) / math.sqrt(d)
    wv = rng.standard_normal((hkv, d, dv)) / math.sqrt(d)
    wo = rng.standard_normal((h * dv, do)) / math.sqrt(h * dv)
    k = [x @ wk[g] for g in range(hkv)]
    v = [x @ wv[g] for g in range(hkv)]
    u_mha = np.empty((n, h * dv)); u_ge = np.empty((n, h * dv))
    for rr in range(h):
        g = rr * hkv // h
        s = (x @ wq[rr]) @ k[g].T / math.sqrt(dk)
        e = np.exp(beta * (s - s.max(axis=1, keepdims=True)))
        a = e / e.sum(axis=1, keepdims=True)
        u_mha[:, rr * dv:(rr + 1) * dv] = math.sqrt(n) * (a - 1.0 / n) @ v[g]
        z = rng.standard_normal((n, n))
        u_ge[:, rr * dv:(rr + 1) * dv] = (beta * s + alpha * z) @ v[g] / math.sqrt(n)
    out = []
    for u in (u_mha, u_ge):
        y = u @ wo
        out.append(scipy.linalg.eigvalsh(y @ y.T / n, check_finite=False))
    return out

"""

BASELINE = (
    BASELINE_DEFS
    + r"""
times = []
for _ in range(repeats):
    t = time.perf_counter(); one_seed(); times.append(time.perf_counter() - t)
import resource
print(json.dumps({"times": times, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
)

FAST = (
    BASELINE_DEFS
    + r"""
import resource
import jax
import gelib
from gelib import AttentionConfig, spectra
cfg = AttentionConfig(**cfg); mode = sys.argv[3]  # "1": alternate with the baseline, "2": gelib alone, "0": parts only
key = jax.random.key(0)
models = ("mha", "yg")
from gelib.numerics import host_linalg as hostblas
route = spectra._host_route(cfg, models, "fast", 1)
base, beta_t, alpha2_t = spectra._beta_args(cfg, models)

def device_part(k):
    if route is None:
        return jax.block_until_ready(spectra._grams(k, cfg, models, "fast"))
    return jax.block_until_ready(spectra._output_parts_at(k, base, models, route, beta_t, alpha2_t))

t = time.perf_counter()
device_part(key)
compile_s = time.perf_counter() - t
gram_t, host_t, eig_t = [], [], []
for s in range(repeats):   # the parts, one after the other
    t0 = time.perf_counter()
    c = device_part(jax.random.fold_in(key, s + 1))
    t1 = time.perf_counter()
    c = list(c) if route is None else hostblas.grams_from_parts(route, *c, len(models), cfg.n)
    t2 = time.perf_counter()
    [spectra.eigvals(g) for g in c]
    gram_t.append(t1 - t0); host_t.append(t2 - t1); eig_t.append(time.perf_counter() - t2)
times, base_times = [], []
for s in range(repeats if mode != "0" else 0):
    # what users run: model_spectra (the next seed's Gram matrices formed while
    # the eigensolver works on this one), alternating with the NumPy baseline
    # in this same process, so that both see the same machine
    t0 = time.perf_counter()
    spectra.model_spectra(jax.random.key(s + 1), cfg, models, seeds=4, progress=False)
    times.append((time.perf_counter() - t0) / 4)
    if mode == "1":
        t0 = time.perf_counter(); one_seed(); base_times.append(time.perf_counter() - t0)
print(json.dumps({"times": times, "base_times": base_times, "gram": gram_t, "host": host_t, "eig": eig_t,
                  "route": route,
                  "first_call": compile_s, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
)

MACHINE = r"""
import json, sys, time
import numpy as np, scipy.linalg
n = int(sys.argv[1])
a = np.random.default_rng(0).standard_normal((2048, 2048))
a @ a
t = time.perf_counter(); [a @ a for _ in range(3)]; mm = (time.perf_counter() - t) / 3
c = np.random.default_rng(1).standard_normal((n, n)); c = c @ c.T
# the best eigensolver the host's LAPACK has (the two-stage reduction from
# gelib.numerics.host_linalg.TWO_STAGE_MIN_N on, where it exists), as gelib calls it
from gelib.spectra import eigvals
eigvals(c)
t = time.perf_counter(); [eigvals(c) for _ in range(3)]
print(json.dumps({"gflops": 2 * 2048**3 / mm / 1e9, "eig_s": (time.perf_counter() - t) / 3}))
"""


def child(code: str, *args, threads: int = 1) -> tuple[dict, float]:
    """Run ``code`` in a fresh interpreter with ``threads`` BLAS threads; its
    JSON output and its own peak RSS (MiB)."""
    env = dict(
        os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads)
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=True, env=env
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return res, res.get("rss", float("nan"))


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def flops(cfg) -> dict:
    """Floating-point operations per seed of the fast path (MHA and Y^G), by part."""
    from gelib import AttentionConfig
    from gelib.spectra import output_route, seed_flops

    c = AttentionConfig(**cfg)
    return {**seed_flops(c), "route": output_route(c, 2)}


def main() -> None:
    from gelib import preset_config

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="bert-base,gpt3-175b")
    ap.add_argument("--repeats", type=int, default=3, help="seeds timed per variant (median reported)")
    ap.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the NumPy literal path (slow for the big rows): gelib and the floor only",
    )
    args = ap.parse_args()

    print(f"machine: {os.cpu_count()} cores; NumPy/LAPACK rates measured in the same session")
    for name in args.presets.split(","):
        cfg = preset_config(name).as_dict()
        cores = os.cpu_count()
        mach, _ = child(MACHINE, cfg["n"], threads=cores)
        print(
            f"\n{name}: n={cfg['n']} d={cfg['d']} h={cfg['h']} d_k={cfg['d_k']} d_o={cfg['d_o']}, "
            f"median of {args.repeats} seeds"
        )
        print(
            f"  machine: matmul {mach['gflops']:.1f} GFLOP/s (float64, {cores} BLAS threads), "
            f"eigvalsh {cfg['n']}x{cfg['n']} {mach['eig_s']:.3f} s"
        )
        fast, _ = child(FAST, json.dumps(cfg), args.repeats, "2" if args.no_baseline else "1", threads=1)
        _, fast_mem = child(FAST, json.dumps(cfg), 1, "0", threads=1)  # gelib alone: its peak RSS
        tf = median(fast["times"])
        if not args.no_baseline:
            # the baseline at its better BLAS thread count (more threads are not
            # always faster at these sizes: the eigensolver and small products lose)
            runs = {t: child(BASELINE, json.dumps(cfg), args.repeats, threads=t) for t in sorted({1, cores})}
            best = min(runs, key=lambda t: median(runs[t][0]["times"]))
            base, base_mem = runs[best]
            tb, ts = median(base["times"]), median(fast["base_times"])
            print(f"  numpy literal path : {ts:8.3f} s/seed   in gelib's process, alternating with it (1 BLAS thread)")
            print(
                f"                       {tb:8.3f} s/seed   alone, at its best BLAS thread count ("
                + ", ".join(f"{t}: {median(r[0]['times']):.3f} s" for t, r in runs.items())
                + f"), peak RSS {base_mem:.0f} MiB"
            )
        print(
            f"  gelib fast path    : {tf:8.3f} s/seed   peak RSS {fast_mem:7.0f} MiB   "
            f"(first call, with compilation: {fast['first_call']:.1f} s)"
        )
        if not args.no_baseline:
            print(
                f"  speed-up           : {ts / tf:8.2f} x against the baseline in the same process, "
                f"{tb / tf:.2f} x against the best baseline alone"
            )
        fl = flops(cfg)
        work = fl["attention"] + fl["output"]
        floor = work / (mach["gflops"] * 1e9) + 2 * mach["eig_s"]
        device, host, eig = median(fast["gram"]), median(fast["host"]), median(fast["eig"])
        where = "the host's BLAS (gelib.numerics.host_linalg)" if fast["route"] else "XLA"
        print(
            f"  fast path parts    : device {device:.3f} s, output stage in {where} {host:.3f} s "
            f"({work / 1e9:.1f} GFLOP in all, route {fl['route']!r}: {work / (device + host) / 1e9:.1f} GFLOP/s, "
            f"{100 * work / (device + host) / 1e9 / mach['gflops']:.0f} % of the machine's matmul rate), "
            f"eigensolver {eig:.3f} s for two spectra ({eig / (2 * mach['eig_s']):.2f} x the machine's eigvalsh)"
        )
        print(
            f"  floor              : {floor:8.3f} s/seed   (the flops at the machine's matmul rate + two eigvalsh); "
            f"gelib / floor = {tf / floor:.2f}"
        )


if __name__ == "__main__":
    main()
