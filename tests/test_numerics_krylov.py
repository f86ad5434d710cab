"""Lanczos' largest singular value against the SVD (gelib.numerics.krylov)."""

import jax
import numpy as np
import pytest

from gelib.numerics import krylov as linalg


@pytest.mark.parametrize("shape", [(40, 30), (30, 40), (64, 64)])
def test_lanczos_top_ritz_value_is_the_squared_norm(shape):
    m = jax.random.normal(jax.random.key(1), shape)
    alpha, beta = linalg.lanczos(m, jax.random.normal(jax.random.key(2), shape[1:]), min(48, shape[1]))
    theta, resid = linalg.top_ritz(alpha, beta)
    np.testing.assert_allclose(np.sqrt(theta), np.linalg.norm(np.asarray(m), 2), rtol=1e-11)
    assert resid <= 1e-10 * theta  # converged: denominator_terms would keep it


def test_ritz_value_is_a_lower_bound_within_its_residual_of_an_eigenvalue():
    # Few steps, not converged: theta <= lambda_max (interlacing), and some eigenvalue of m^T m
    # lies within the residual bound of theta.
    m = jax.random.normal(jax.random.key(3), (80, 60))
    lams = np.linalg.svd(np.asarray(m), compute_uv=False) ** 2
    for steps in (2, 4, 8, 60):
        alpha, beta = linalg.lanczos(m, jax.random.normal(jax.random.key(4), (60,)), steps)
        theta, resid = linalg.top_ritz(alpha, beta)
        assert theta <= lams[0] * (1 + 1e-12)
        assert np.min(np.abs(lams - theta)) <= resid + 1e-10 * lams[0]
    assert resid <= 1e-8 * theta  # a full Krylov space: converged


def test_an_ungapped_top_is_flagged_by_its_residual():
    # A spectrum with no gap at the top: two steps cannot converge, and the residual says so
    # (denominator_terms then takes exact SVDs; tests/test_models_construction.py checks that fallback).
    u, _ = np.linalg.qr(np.asarray(jax.random.normal(jax.random.key(5), (50, 50))))
    m = (u * np.linspace(1.0, 0.999, 50)) @ u.T
    alpha, beta = linalg.lanczos(m, np.ones(50), 2)
    theta, resid = linalg.top_ritz(alpha, beta)
    assert resid > 1e-6 * theta


def test_an_invariant_start_vector_stops_without_nans():
    m = np.diag([3.0, 2.0, 1.0, 0.5])
    alpha, beta = linalg.lanczos(m, np.array([1.0, 0.0, 0.0, 0.0]), 4)
    theta, resid = linalg.top_ritz(alpha, beta)
    assert np.isfinite(theta) and resid == 0.0
    np.testing.assert_allclose(theta, 9.0)
