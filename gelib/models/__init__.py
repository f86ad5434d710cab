"""The six equivalent random-matrix models of the paper's Table 1, what each step controls, and the exact predictions.

* :mod:`~gelib.models.construction`: the models themselves, from one shared draw
  (``mha``, ``yf``, ``yf_ring``, ``yg_sigma_f``, ``yg_sigma_g``, ``yg``);
* :mod:`~gelib.models.controls`: the quantity each step of Table 1 controls,
  measured on a draw (norms, ranks, kernel errors, quadratic forms);
* :mod:`~gelib.models.predictions`: closed forms for those controls (Hermite
  coefficients, exact variances and kernel errors over the keys);
* :mod:`~gelib.models.shifts`: the exact finite-size shift of the mean
  eigenvalue that each step causes.

Everything public is re-exported here: ``gelib.models.build``,
``gelib.models.denominator_terms``, ``gelib.models.mha_shift_exact``.
"""

from __future__ import annotations

from . import construction, controls, predictions, shifts
from .construction import *  # noqa: F403
from .controls import *  # noqa: F403
from .predictions import *  # noqa: F403
from .shifts import *  # noqa: F403

# The public names are the submodules' own (each module's __all__), in this order.
__all__ = [*construction.__all__, *controls.__all__, *predictions.__all__, *shifts.__all__]
