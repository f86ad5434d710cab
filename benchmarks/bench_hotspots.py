"""Benchmark: the three hot spots of the paper-scale batch on one H200, old against new.

At the paper scale the denominator, centering and query-substitution
chapters were among the slowest of the book on one H200 (their sweep cells
took 349 s, 273 s and 154 s of the batch): every draw took a full SVD of
each head's ``n x n`` middle term (for its operator norm) and a full SVD of an
``n x d_o`` matrix (for its numerical rank), and the conditional covariances
of query substitution were summed on the host with ``np.einsum`` after copying
every copy's output there. This script times, in one process, on one draw at
the denominator chapter's paper proportions (``h = 12``, ``d_K = d_V = n/8``,
``d_O = 3n/2``):

* ``norms``: the old per-head ``jnp.linalg.svd`` of the middle term against
  :func:`gelib.models.denominator_terms` (Lanczos, :mod:`gelib.numerics.krylov`), and
  the largest relative difference of the norms;
* ``rank``: :func:`gelib.models.numerical_rank` without and with the sketch
  (``key``, ``at_most = h``), and both ranks;
* ``covariances``: the old host-side sum of ``Y^T Y`` over ``--copies`` copies
  of the two models of query substitution against
  :func:`gelib.models.conditional_covariances` (at query substitution's paper
  layer: ``n = 512``, BERT-base widths), and their largest relative difference.

It prints the medians and the ratio old / new.

    python benchmarks/bench_hotspots.py [--n 1024] [--copies 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from gelib import AttentionConfig, keys, models, sampling, sweeps


def median_time(fn, repeats):
    jax.block_until_ready(fn())  # compile
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--copies", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    cfg = sweeps.proportional(args.n, h=12, beta=1.0, d_k=1 / 8, d_v=1 / 8, d_o=3 / 2)
    draw = sampling.sample_fast(keys.stream(0, "bench"), cfg)
    print(cfg.describe(), f"on {jax.devices()[0].device_kind}")

    @jax.jit
    def svd_norms(draw):
        def one(q, k):
            _, mid = models._middle(draw, cfg, jnp.asarray(cfg.beta, q.dtype), q, k)
            return jnp.linalg.svd(mid, compute_uv=False)[0]

        return jax.lax.map(lambda r: one(draw.q[r], draw.k[r // cfg.group_size]), jnp.arange(cfg.h))

    old = median_time(lambda: svd_norms(draw), args.repeats)
    new = median_time(lambda: models.denominator_terms(draw, cfg)["op_norm"], args.repeats)
    diff = np.max(np.abs(models.denominator_terms(draw, cfg)["op_norm"] / np.asarray(svd_norms(draw)) - 1))
    print(f"norms: svd {old:8.3f} s   lanczos {new:8.3f} s   ratio {old / new:6.1f}   max rel. diff {diff:.1e}")

    low = models.denominator_terms(draw, cfg)["low_rank"]
    key = keys.stream(0, "rank")
    old = median_time(lambda: models.numerical_rank(low), args.repeats)
    new = median_time(lambda: models.numerical_rank(low, key=key, at_most=cfg.h), args.repeats)
    ranks = models.numerical_rank(low), models.numerical_rank(low, key=key, at_most=cfg.h)
    print(f"rank:  svd {old:8.3f} s   sketch {new:8.3f} s   ratio {old / new:6.1f}   ranks {ranks} (h = {cfg.h})")

    cfg = AttentionConfig(n=512, d=768, h=12, d_k=64, d_v=64, d_o=768)
    draw = sampling.sample_fast(keys.stream(0, "bench", "copies"), cfg)
    pair = ("yg_sigma_g", "yg")
    copy_keys = [
        (keys.stream(0, "copies", t, "queries"), keys.stream(0, "copies", t, "noise")) for t in range(args.copies)
    ]

    def host_sum():  # the old loop: each copy's outputs to the host, summed with np.einsum
        second = np.zeros((2, cfg.d_o, cfg.d_o))
        for qk, nk in copy_keys:
            q = jax.random.normal(qk, draw.q.shape, draw.q.dtype)
            y = np.asarray(models.build_all(pair, draw._replace(q=q), cfg, key=nk))
            second += np.einsum("mno,mnp->mop", y, y)
        return second / (args.copies * cfg.n)

    new_cov = lambda: models.conditional_covariances(pair, draw, cfg, copy_keys, [args.copies])[0]  # noqa: E731
    old = median_time(host_sum, args.repeats)
    new = median_time(new_cov, args.repeats)
    diff = np.max(np.abs(new_cov() - host_sum())) / np.max(np.abs(host_sum()))
    print(f"covariances ({args.copies} copies, n = 512): host einsum {old:8.3f} s   device {new:8.3f} s", end="   ")
    print(f"ratio {old / new:6.1f}   max rel. diff {diff:.1e}")


if __name__ == "__main__":
    main()
