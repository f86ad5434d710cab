"""Generic numerics under the rest of the library: nothing here knows attention.

* :mod:`~gelib.numerics.fits`: power-law rates, the slope of ``log y``
  against ``log n`` with its 95 % interval (:func:`fit_power_law`);
* :mod:`~gelib.numerics.krylov`: the largest singular value of a matrix by
  Lanczos, without a full SVD (:func:`lanczos`, :func:`top_ritz`);
* :mod:`~gelib.numerics.checks`: a measured mean against an exact prediction, a two-sided
  Student-t test at a stated level with its tolerance in standard errors and its power
  (:func:`mean_test`);
* :mod:`~gelib.numerics.host_linalg`: float64 Gram matrices and eigenvalues in
  the host's BLAS and LAPACK (the CPU output stage of the fast path).
"""

from __future__ import annotations

from . import checks, fits, host_linalg, krylov
from .checks import CHECK_LEVEL, MeanTest, mean_test
from .fits import PowerFit, fit_power_law
from .krylov import lanczos, top_ritz

__all__ = [
    "CHECK_LEVEL",
    "MeanTest",
    "mean_test",
    "PowerFit",
    "fit_power_law",
    "lanczos",
    "top_ritz",
    "checks",
    "fits",
    "host_linalg",
    "krylov",
]
