"""One figure style for the whole book, and every figure it draws.

Most functions draw on the axes they are given and return them; the
``*_figure`` functions make a whole figure of a chapter (its panels, layout
and labels) and return it.

* :mod:`~gelib.plotting.style`: the colours and the style, small axis helpers;
* :mod:`~gelib.plotting.histograms`: spectra of two models side by side,
  their CDF differences;
* :mod:`~gelib.plotting.rate_plots`: control quantities and distances against
  ``n`` with their fitted rates;
* :mod:`~gelib.plotting.law_plots`: simulated spectra against the limit law,
  level by level;
* :mod:`~gelib.plotting.learning_plots`: the paper's Figures 2 and 3 (GE
  curves, MHA markers).

Everything public is re-exported here (``gelib.plotting.use_style``).
"""

from __future__ import annotations

from .histograms import (
    cdf_differences,
    distance_title,
    log_histograms,
    pair_and_heads,
    spectra_histograms,
    spectra_pair,
)
from .law_plots import at_atoms, chain_figure, density_curves, law_figure, law_histograms
from .learning_plots import (
    OWN_LABEL,
    OWN_STYLE,
    allocation_figure,
    budget_paths,
    error_map_figure,
    ge_and_mha,
    loss_figure,
    own_curve,
    paths_figure,
    ratio_figure,
    sharing_across_figure,
    sharing_within_figure,
    width_boundaries,
)
from .rate_plots import edge_rates_figure, plot_distance_rates, plot_moment_rates, rate_panels, rate_plot
from .style import COLORS, close, label_ns, log2_axis, tex_sci, use_style

__all__ = [
    "COLORS",
    "use_style",
    "label_ns",
    "close",
    "log2_axis",
    "tex_sci",
    "spectra_histograms",
    "log_histograms",
    "spectra_pair",
    "distance_title",
    "cdf_differences",
    "pair_and_heads",
    "rate_plot",
    "rate_panels",
    "edge_rates_figure",
    "plot_distance_rates",
    "plot_moment_rates",
    "at_atoms",
    "law_histograms",
    "density_curves",
    "chain_figure",
    "law_figure",
    "allocation_figure",
    "ge_and_mha",
    "OWN_STYLE",
    "OWN_LABEL",
    "own_curve",
    "sharing_across_figure",
    "sharing_within_figure",
    "loss_figure",
    "width_boundaries",
    "budget_paths",
    "error_map_figure",
    "paths_figure",
    "ratio_figure",
]
