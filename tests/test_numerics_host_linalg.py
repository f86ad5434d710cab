"""The output stage in the host's BLAS against the device's (gelib.numerics.host_linalg)."""

import jax
import numpy as np
import pytest

from gelib import AttentionConfig
from gelib import spectra as S
from gelib.numerics import host_linalg

ROUTES = {
    "direct": AttentionConfig(n=24, d=40, h=3, d_k=8, d_o=20),
    "qr": AttentionConfig(n=8, d=96, h=8, d_k=4, d_v=8, d_o=48),
    "bartlett": AttentionConfig(n=24, d=40, h=2, d_k=8, d_o=32),
}


def test_the_host_route_applies_on_the_cpu_in_float64():
    assert host_linalg.available()  # the tests run JAX on the CPU with x64 (conftest)


@pytest.mark.parametrize("name", ROUTES)
def test_host_gram_matrices_are_the_device_ones(name):
    # Same key: the host's lower triangles equal the device's Gram matrices to
    # rounding, for every output route.
    cfg, models = ROUTES[name], ("mha", "yg")
    route = S.output_route(cfg, len(models))
    assert route == name
    key = jax.random.key(7)
    base, beta, alpha2 = S._beta_args(cfg, models)
    parts = S._output_parts_at(key, base, models, route, beta, alpha2)
    host = host_linalg.grams_from_parts(route, *parts, len(models), cfg.n)
    device = np.asarray(S._grams(key, cfg, models, "fast"))
    for i in range(len(models)):
        lower = np.tril(np.ones((cfg.n, cfg.n), bool))
        scale = np.abs(device[i]).max()
        np.testing.assert_allclose(host[i][lower], device[i][lower], rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("name", ["direct", "qr", "bartlett"])
def test_model_spectra_on_the_host_match_the_device_path(name):
    cfg, models = ROUTES[name], ("mha", "yg")
    key = jax.random.key(3)
    got = S.model_spectra(key, cfg, models, seeds=3, progress=False)
    for s in range(3):
        want = S.eigvals(S._grams(S.seed_key(key, s), cfg, models, "fast"))
        for i, m in enumerate(models):
            np.testing.assert_allclose(got[m][s], want[i], rtol=1e-10, atol=1e-12 * want[i].max())


def _signed_r(u):
    """The R of u^T = Q R with a nonnegative diagonal, from NumPy's Householder QR."""
    r = np.linalg.qr(u.T, mode="r")
    return np.where(np.diag(r) < 0, -1.0, 1.0)[:, None] * r


def test_qr_route_with_a_rectangular_factor():
    # d_o < m n: G is a Gaussian (m n, d_o) matrix and Y = R^T G (output_route
    # never picks this case, reduced_output_grams has it)
    rng = np.random.default_rng(0)
    m, n, p, d_o = 2, 5, 16, 7
    u, g = rng.standard_normal((m, n, p)), rng.standard_normal((m * n, d_o))
    y = (_signed_r(u.reshape(m * n, p)).T @ g).reshape(m, n, d_o)
    for i, got in enumerate(host_linalg.grams_from_parts("qr", u, g, m, n)):
        want = y[i] @ y[i].T / n
        np.testing.assert_allclose(np.tril(got), np.tril(want), atol=1e-13)


def test_triangular_factor_is_the_r_of_householder_qr():
    # Cholesky of the Gram matrix against NumPy's Householder QR (a second
    # method), on rows far from orthogonal (condition number about 1e3)
    rng = np.random.default_rng(2)
    u = rng.standard_normal((40, 120)) * np.logspace(0, -3, 40)[:, None]
    want = _signed_r(u)
    got = host_linalg.triangular_factor(u)
    assert np.all(np.tril(got, -1) == 0) and np.all(np.diag(got) > 0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-11 * np.abs(want).max())


def test_triangular_factor_of_rank_deficient_rows_falls_back_to_qr():
    # beta = 0 makes the MHA rows zero: the Gram matrix is singular, Cholesky
    # fails, and the factor still satisfies R^T R = u u^T
    rng = np.random.default_rng(3)
    u = np.vstack([np.zeros((5, 30)), rng.standard_normal((5, 30))])
    got = host_linalg.triangular_factor(u)
    assert np.all(np.tril(got, -1) == 0) and np.all(np.diag(got) >= 0)
    np.testing.assert_allclose(got.T @ got, u @ u.T, atol=1e-12)


def test_unknown_route():
    with pytest.raises(ValueError, match="route"):
        host_linalg.grams_from_parts("diagonal", np.zeros((1, 2, 2)), np.zeros((2, 2)), 1, 2)


def test_two_stage_eigensolver_agrees_with_dsyevd():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 200))
    c = x @ x.T / 200  # rank 200: an atom of 100 zeros, as when d_o < n
    got = host_linalg.eigvalsh_two_stage(np.tril(c))  # only the lower triangle is read
    if got is None:
        pytest.skip("this SciPy's LAPACK has no dsyevd_2stage")
    want = np.linalg.eigvalsh(c)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * want.max())
    assert np.all(np.diff(got) >= 0)


def test_eigvals_uses_the_two_stage_reduction_from_its_threshold(monkeypatch):
    calls = []
    monkeypatch.setattr(host_linalg, "TWO_STAGE_MIN_N", 50)
    real = host_linalg.eigvalsh_two_stage
    monkeypatch.setattr(host_linalg, "eigvalsh_two_stage", lambda c: calls.append(c.shape) or real(c))
    x = np.random.default_rng(2).standard_normal((60, 80))
    c = x @ x.T / 80
    np.testing.assert_allclose(S.eigvals(c), np.linalg.eigvalsh(c), rtol=1e-12)
    S.eigvals(c[:40, :40])
    assert calls == [(60, 60)]
