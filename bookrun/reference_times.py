"""Measured chapter times of the batch, the basis of ``python -m gelib batch --estimate``.

Each entry is one batch run as it was measured (no number here is computed or
extrapolated): the machine, the scale, how many chapters ran at once, the
commit, and per chapter its seconds in the run's ``record.json``. A chapter that
was still running when the run was stopped has a lower bound, written as
``(">", seconds)``: the time its cells had taken when it was stopped. A run on
the reader's own machine (``_build/runs/*/record.json``) always takes
precedence over these.
"""

from __future__ import annotations

__all__ = ["REFERENCE_RUNS"]

#: The measured batch runs, each with ``machine``, ``accelerator``, ``scale``, ``jobs``, ``commit``,
#: ``date`` and ``chapters``.
REFERENCE_RUNS: tuple[dict, ...] = (
    {
        # gelib batch --scale paper --jobs 4 --no-render, XLA_PYTHON_CLIENT_MEM_FRACTION=0.22, stopped after
        # 402 s (the device lease); limit_law and spectral_shapes ran in a second call, 2 at a time.
        # Before the Lanczos norms and the sketched ranks (denominator_replacement, centering).
        "machine": "1 x NVIDIA H200 (16 CPU cores)",
        "accelerator": True,
        "scale": "paper",
        "jobs": 4,
        "commit": "ca9d1f5",
        "date": "2026-12-04",
        "chapters": {
            "model": 38.9,
            "denominator_replacement": (">", 353.6),
            "centering": (">", 281.2),
            "gaussian_rows": 38.2,
            "covariance_approximation": 31.6,
            "query_substitution": (">", 157.7),
            "limit_law": 97.5,
            "spectral_shapes": 66.5,
            "finite_size_table": 112.0,
            "readout_learning": (">", 393.7),
            "parameter_sharing": 162.6,
        },
    },
    {
        # gelib batch --scale paper --chapters 'finite_size*' on the CI machine's kind, with another job
        # running beside it on its 2 cores (so more than it takes alone); the table matched the paper
        # (largest |z| 0.56 for W1, 0.55 for KS, z then in combined 95 % half-widths, not standard errors).
        # The matmul rate was not recorded, so it is not scaled.
        "machine": "2-core x86-64 CPU, no GPU (the CI machine's kind)",
        "accelerator": False,
        "scale": "paper",
        "jobs": 1,
        "commit": "93ff5e4",
        "date": "2026-12-04",
        "chapters": {"finite_size_table": 3024.0},
    },
    {
        # make book on a fresh clone, 2 chapters at a time, uncontended: 597 s in all, of which the
        # install took 88 s, the chapters 477 s of wall time and the render 29 s. The matmul rate is
        # gelib.spectra.machine_rates() with OPENBLAS_NUM_THREADS=1, as make book runs.
        "machine": "2-core x86-64 CPU, no GPU (the CI machine's kind)",
        "accelerator": False,
        "scale": "default",
        "jobs": 2,
        "commit": "fecee46",
        "date": "2026-12-05",
        "matmul_gflops": 38.5,
        "chapters": {
            "model": 37.1,
            "denominator_replacement": 42.6,
            "centering": 31.5,
            "gaussian_rows": 45.8,
            "covariance_approximation": 28.9,
            "query_substitution": 63.1,
            "limit_law": 56.9,
            "spectral_shapes": 66.8,
            "finite_size_table": 281.5,
            "readout_learning": 170.7,
            "parameter_sharing": 89.5,
        },
    },
    {
        # make book on a fresh clone, 2 chapters at a time, uncontended (555 s including the install).
        "machine": "2-core x86-64 CPU, no GPU (the CI machine's kind)",
        "accelerator": False,
        "scale": "default",
        "jobs": 2,
        "commit": "d1c0abc",
        "date": "2026-12-03",
        "chapters": {
            "model": 39.3,
            "denominator_replacement": 34.8,
            "centering": 45.4,
            "gaussian_rows": 37.3,
            "covariance_approximation": 65.3,
            "query_substitution": 66.1,
            "limit_law": 52.2,
            "spectral_shapes": 41.8,
            "finite_size_table": 325.7,
            "readout_learning": 121.2,
            "parameter_sharing": 68.8,
        },
    },
)
