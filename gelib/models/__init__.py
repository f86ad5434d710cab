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

from .construction import (
    LABELS,
    MODELS,
    attention,
    build,
    build_all,
    check_models,
    f,
    gaussian_heads,
    gaussian_row_outputs,
    head_outputs,
    kernel_f,
    kernel_g,
    kernel_mean,
    output,
    psd_roots,
    row_mean,
    scores,
    sigma,
    value_second_moments,
    yg_literal,
)
from .controls import (
    centering_norm2,
    centering_terms,
    conditional_covariances,
    denominator_terms,
    form_deviation,
    kernel_error,
    kernel_f_estimate,
    kernel_f_zscores,
    numerical_rank,
    output_row_mean,
    quadratic_forms,
    row_mean_effect,
    row_mean_norms,
)
from .predictions import (
    form_variance,
    form_variance_wishart,
    hermite_coefficients,
    kernel_error_exact,
    kernel_error_first_order,
    kernel_f_diagonal_mean,
    kernel_mean_variance,
    sigma_mean_ratio,
)
from .shifts import (
    STEPS,
    centering_log_norm,
    centering_shift_exact,
    denominator_shift,
    denominator_shift_exact,
    mha_shift_exact,
    step_shifts,
)

__all__ = [
    "MODELS",
    "check_models",
    "LABELS",
    "f",
    "scores",
    "attention",
    "row_mean",
    "kernel_f",
    "kernel_g",
    "kernel_mean",
    "head_outputs",
    "yg_literal",
    "output",
    "build",
    "build_all",
    "value_second_moments",
    "psd_roots",
    "gaussian_heads",
    "gaussian_row_outputs",
    "sigma",
    "denominator_terms",
    "centering_terms",
    "centering_norm2",
    "kernel_error",
    "numerical_rank",
    "quadratic_forms",
    "output_row_mean",
    "kernel_f_estimate",
    "form_deviation",
    "conditional_covariances",
    "kernel_f_zscores",
    "row_mean_effect",
    "row_mean_norms",
    "kernel_f_diagonal_mean",
    "kernel_error_first_order",
    "sigma_mean_ratio",
    "kernel_mean_variance",
    "hermite_coefficients",
    "form_variance",
    "form_variance_wishart",
    "kernel_error_exact",
    "STEPS",
    "denominator_shift",
    "step_shifts",
    "denominator_shift_exact",
    "mha_shift_exact",
    "centering_shift_exact",
    "centering_log_norm",
]
