"""Generic numerics under the rest of the library: nothing here knows attention.

* :mod:`~gelib.numerics.fits`: power-law rates, the slope of ``log y``
  against ``log n`` with its 95 % interval (:func:`fit_power_law`);
* :mod:`~gelib.numerics.krylov`: the largest singular value of a matrix by
  Lanczos, without a full SVD (:func:`lanczos`, :func:`top_ritz`);
* :mod:`~gelib.numerics.host_linalg`: float64 Gram matrices and eigenvalues in
  the host's BLAS and LAPACK (the CPU output stage of the fast path).
"""

from __future__ import annotations

from . import fits, host_linalg, krylov
from .fits import PowerFit, fit_power_law
from .krylov import lanczos, top_ritz

__all__ = ["PowerFit", "fit_power_law", "lanczos", "top_ritz", "fits", "host_linalg", "krylov"]
