"""Lanczos' largest singular value against the SVD (gelib.linalg)."""

import jax
import numpy as np
import pytest

from gelib import linalg


@pytest.mark.parametrize("shape", [(40, 30), (30, 40), (64, 64)])
def test_top_singular_values_match_the_svd(shape):
    ms = jax.random.normal(jax.random.key(1), (3, *shape))
    got = linalg.top_singular_values(ms, jax.random.key(2))
    exact = [np.linalg.norm(np.asarray(m), 2) for m in ms]
    np.testing.assert_allclose(got, exact, rtol=1e-11)


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


def test_unconverged_matrices_fall_back_to_the_exact_svd():
    # A spectrum with no gap at the top: two steps cannot converge, the SVD answers.
    u, _ = np.linalg.qr(np.asarray(jax.random.normal(jax.random.key(5), (50, 50))))
    m = (u * np.linspace(1.0, 0.999, 50)) @ u.T
    got = linalg.top_singular_values(m[None], jax.random.key(6), steps=2)
    np.testing.assert_allclose(got, [1.0], rtol=1e-12)
    alpha, beta = linalg.lanczos(m, np.ones(50), 2)
    _, resid = linalg.top_ritz(alpha, beta)
    assert resid > 1e-6  # the fallback was needed


def test_an_invariant_start_vector_stops_without_nans():
    m = np.diag([3.0, 2.0, 1.0, 0.5])
    alpha, beta = linalg.lanczos(m, np.array([1.0, 0.0, 0.0, 0.0]), 4)
    theta, resid = linalg.top_ritz(alpha, beta)
    assert np.isfinite(theta) and resid == 0.0
    np.testing.assert_allclose(theta, 9.0)
