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
  curves, MHA markers);
* :mod:`~gelib.plotting.diagram`: the chain of Table 1 in one picture, with
  each step's measured distance.

Everything public is re-exported here (``gelib.plotting.use_style``).
"""

from __future__ import annotations

from . import diagram, histograms, law_plots, learning_plots, rate_plots, style
from .diagram import *  # noqa: F403
from .histograms import *  # noqa: F403
from .law_plots import *  # noqa: F403
from .learning_plots import *  # noqa: F403
from .rate_plots import *  # noqa: F403
from .style import *  # noqa: F403

# The public names are the submodules' own (each module's __all__), in this order.
__all__ = [
    *style.__all__,
    *histograms.__all__,
    *rate_plots.__all__,
    *law_plots.__all__,
    *learning_plots.__all__,
    *diagram.__all__,
]
