"""The builders: laws from closed forms, compressions and affine or polynomial maps.

:func:`.dirac` and :func:`.marchenko_pastur` give the closed-form laws;
:func:`.compress`, :func:`.affine`, :func:`.scale` and :func:`.polynomial` build
new laws from old ones.  Every builder returns the law through a module-level
cache of weak references, so that equal laws still alive are one object and
share their cached support and distribution function (e.g.
``output_law(cfg)`` and ``chain(cfg).output`` of :mod:`gelib.attention_law`).
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np
from numpy.polynomial import polynomial as npoly
from numpy.typing import ArrayLike

from .closed_forms import ClosedForm
from .law import Law

__all__ = ["dirac", "marchenko_pastur", "compress", "affine", "scale", "polynomial"]

_LAWS: weakref.WeakValueDictionary[Law, Law] = weakref.WeakValueDictionary()


def _law(base: ClosedForm, steps: tuple[tuple[float, float, float], ...] = ()) -> Law:
    """The law (base, steps), shared with any equal law still alive, so that
    e.g. ``output_law(cfg)`` and ``chain(cfg).output`` share their caches."""
    law = Law(base, steps)
    return _LAWS.setdefault(law, law)


def dirac(c: float = 1.0) -> Law:
    """The point mass at ``c`` (the law of ``c I``)."""
    return _law(ClosedForm("dirac", float(c)))


def marchenko_pastur(ratio: float, scale: float = 1.0) -> Law:
    """Marchenko-Pastur law of ``scale * X X^T / N`` (``X`` is ``p x N`` i.i.d.
    N(0, 1), ``ratio = p / N``, both dimensions to infinity): mean ``scale``,
    support ``scale * (1 -+ sqrt(ratio))^2`` and an atom ``1 - 1/ratio`` at 0
    when ``ratio > 1``."""
    if not ratio > 0 or not scale > 0:
        raise ValueError(f"Marchenko-Pastur needs ratio > 0 and scale > 0, got {ratio}, {scale}")
    return _law(ClosedForm("mp", float(ratio), (0.0, float(scale))))


def compress(law: Law, lam: float) -> Law:
    """Law of ``G^T A G / m`` for ``A`` (``p x p``) with law ``law`` and ``G``
    (``p x m``) i.i.d. N(0, 1), ``lam = p / m``: ``psi_B(z) = lam psi_A(z (1 + psi_B(z)))``.
    Written in the ``m x m`` frame: a step with ``lam < 1`` creates an atom at 0.

    A closed-form ``law`` narrower than ``NARROW = 1e-12`` of its location
    (``beta^2 W + alpha^2 I`` at ``beta >~ 6``) is compressed as the point mass at its
    mean: the same law to ``1e-12`` relative, which the solver can resolve."""
    if not lam > 0:
        raise ValueError(f"compression needs lam > 0, got {lam}")
    if not law.steps and _narrow(law.base):
        law = dirac(law.base.moments(1)[0])
    return _law(law.base, law.steps + ((float(lam), 1.0, 0.0),))


NARROW = 1e-12
"""Relative width below which :func:`compress` treats a closed-form law as the point mass at its mean."""


def _narrow(base: ClosedForm) -> bool:
    """Whether the support of a closed-form law (components and atoms) lies within
    ``NARROW`` times its distance from 0: then the law of ``G^T A G / m`` differs
    from that of ``G^T (mean A) G / m`` by less than ``NARROW`` relative (every
    moment and the Stieltjes transform move by that much), below the solver's
    tolerance, while the solver itself, working in absolute terms, cannot resolve
    such a law (``beta^2 W + alpha^2 I`` at large ``beta``: ``alpha^2 = e^{beta^2}``
    against a spread ``beta^2 (1 + sqrt(n/d_K))^2``)."""
    if base.kind == "dirac":
        return False
    comps, atoms = base.support()
    pts = [v for c in comps for v in c] + [loc for loc, _ in atoms]
    return max(pts) - min(pts) <= NARROW * min(abs(v) for v in pts)


def affine(law: Law, a: float, b: float = 0.0) -> Law:
    """Law of ``a X + b`` (``a > 0``): ``g_{aX+b}(z) = g_X((z - b)/a) / a``."""
    if not a > 0:
        raise ValueError(f"affine maps need a > 0, got {a}")
    if not law.steps:
        poly = (a * law.base.poly[0] + b, *(a * p for p in law.base.poly[1:]))
        return _law(dataclasses.replace(law.base, poly=tuple(map(float, poly))))
    lam, a0, b0 = law.steps[-1]
    return _law(law.base, law.steps[:-1] + ((lam, float(a * a0), float(a * b0 + b)),))


def scale(law: Law, c: float) -> Law:
    """Law of ``c X``: ``psi_{cX}(z) = psi_X(c z)``."""
    return affine(law, c, 0.0)


def polynomial(law: Law, coeffs: ArrayLike) -> Law:
    """Law of ``p(X)``, ``p(x) = sum_i coeffs[i] x^i`` (``coeffs`` of shape ``(k,)``; push-forward), for a
    closed-form ``law`` (no compression yet) and a composite degree <= 2; used
    for K=V tying, ``beta^2 (n/d_K) W'^2 + alpha^2 W'``.  ``g_{p(X)}(z)`` sums
    ``g_X(r) / p'(r)`` over the roots of ``p(r) = z``."""
    if law.steps:
        raise NotImplementedError("polynomial push-forward of a compressed law")
    comp = npoly.polyzero
    for c in np.asarray(coeffs, dtype=float)[::-1]:  # Horner: q(p(x))
        comp = npoly.polyadd(npoly.polymul(comp, law.base.poly), [c])
    comp = np.trim_zeros(np.asarray(comp, dtype=float), "b")
    if not 2 <= comp.size <= 3:
        raise NotImplementedError(f"push-forward of composite degree {comp.size - 1}")
    return _law(dataclasses.replace(law.base, poly=tuple(float(c) for c in comp)))
