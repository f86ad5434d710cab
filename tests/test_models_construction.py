"""The six models of Table 1 against independent references."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gelib.models.controls
from gelib import AttentionConfig, ConfigError
from gelib import models as M
from gelib.models.construction import _psd_sqrt
from gelib.sampling import Draw, sample_fast

# Sizes all different so that a swapped axis fails.
CFG = AttentionConfig(n=13, d=31, h=6, h_kv=3, d_k=5, d_v=7, d_o=11, beta=0.9)


def numpy_mha(draw: Draw, cfg: AttentionConfig) -> np.ndarray:
    """The centred multi-head output written out plainly, head by head."""
    q, k, v, w_o = (np.asarray(a) for a in draw)
    n = cfg.n
    y = np.zeros((n, cfg.d_o))
    for r in range(cfg.h):
        g = r * cfg.h_kv // cfg.h
        s = q[r] @ k[g].T / math.sqrt(cfg.d_k)
        e = np.exp(cfg.beta * s)
        a = e / e.sum(axis=1, keepdims=True)
        y += math.sqrt(n) * (a - 1.0 / n) @ v[g] @ w_o[r]
    return y


@pytest.mark.parametrize("h_kv, tie", [(6, False), (3, False), (1, False), (3, True)])
def test_mha_matches_a_plain_numpy_implementation(h_kv, tie):
    cfg = CFG.replace(h_kv=h_kv, tie_kv=tie, d_v=5 if tie else 7)
    draw = sample_fast(jax.random.key(0), cfg)
    np.testing.assert_allclose(M.build("mha", draw, cfg), numpy_mha(draw, cfg), rtol=1e-11, atol=1e-12)


def test_softmax_is_stable_at_large_beta():
    s = jnp.array([[3.0, 1.0, -2.0], [0.5, 0.7, 0.6]])
    a = M.attention(s, 300.0)  # exp(900) overflows without the max shift
    assert np.all(np.isfinite(a))
    np.testing.assert_allclose(a.sum(axis=1), 1.0)
    np.testing.assert_allclose(a, np.eye(3)[[0, 1]], atol=1e-12)  # the argmax limit
    cfg = CFG.replace(beta=20.0)
    y = M.build("mha", sample_fast(jax.random.key(1), cfg), cfg)
    assert np.all(np.isfinite(y))


def test_denominator_decomposition_is_exact():
    draw = sample_fast(jax.random.key(2), CFG)
    t = M.denominator_terms(draw, CFG)
    np.testing.assert_allclose(
        M.build("mha", draw, CFG), M.build("yf", draw, CFG) + t["middle"] + t["low_rank"], atol=1e-11
    )
    # C_r - I is diagonal, so ||(C - I) f / sqrt(n)|| <= max|C_ii - 1| ||f / sqrt(n)||
    fnorm = [np.linalg.norm(M.f(M.scores(draw.q[r], draw.k[r // 2]), CFG.beta), 2) for r in range(CFG.h)]
    assert np.all(np.asarray(t["op_norm"]) <= np.asarray(t["c_dev"]) * np.array(fnorm) / math.sqrt(CFG.n) + 1e-12)


def test_low_rank_parts_have_rank_at_most_h():
    cfg = AttentionConfig(n=37, d=50, h=3, d_k=4, d_v=6, d_o=29)
    draw = sample_fast(jax.random.key(3), cfg)
    low = M.denominator_terms(draw, cfg)["low_rank"]
    terms = M.centering_terms(draw, cfg)
    assert M.numerical_rank(low) == cfg.h  # generic: exactly h
    assert M.numerical_rank(terms["subtracted"]) == 1  # centering: rank one in total
    assert M.numerical_rank(terms["per_query"]) == cfg.h  # the per-query reading: rank h
    centred = M.build("yf", draw, cfg) - M.build("yf_ring", draw, cfg)
    np.testing.assert_allclose(centred, terms["subtracted"], atol=1e-11)
    assert float(terms["mean_norm"]) == pytest.approx(np.linalg.norm(np.asarray(terms["mean"])), rel=1e-12)
    # a random n x d_o matrix has full rank: the rank count is not vacuous
    assert M.numerical_rank(M.build("mha", draw, cfg)) == min(cfg.n, cfg.h * cfg.d_v, cfg.d_o)


def test_conditional_row_mean_against_monte_carlo_over_keys():
    beta, d_k, samples = 0.8, 7, 400_000
    q = jax.random.normal(jax.random.key(4), (3, d_k)) * jnp.array([[0.6], [1.0], [1.4]])
    k = jax.random.normal(jax.random.key(5), (samples, d_k))
    vals = M.f(q @ k.T / math.sqrt(d_k), beta)  # (3, samples)
    mc, se = vals.mean(axis=1), vals.std(axis=1) / math.sqrt(samples)
    assert np.all(np.abs(mc - M.row_mean(q, beta)) < 5 * se)


def test_kernel_mean_and_kernel_f_against_monte_carlo_over_queries():
    # mu = E_q f(K q / sqrt d_k) and Cov_q, keys fixed; also at beta^2 / d_k = 0.56, where the
    # per-query reading's second moment E M(q)^2 would be infinite
    for beta, n, d_k in ((0.7, 5, 7), (1.5, 4, 4)):
        samples = 400_000
        k = jax.random.normal(jax.random.key(6), (n, d_k))
        q = jax.random.normal(jax.random.key(7), (samples, d_k))
        vals = np.asarray(M.f(q @ k.T / math.sqrt(d_k), beta))  # (samples, n)
        mean_se = vals.std(axis=0) / math.sqrt(samples)
        assert np.all(np.abs(vals.mean(axis=0) - np.asarray(M.kernel_mean(k, beta))) < 5 * mean_se)
        fr = vals - np.asarray(M.kernel_mean(k, beta))[None, :]
        prod = fr[:, :, None] * fr[:, None, :]
        mc, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(samples)
        assert np.all(np.abs(mc - np.asarray(M.kernel_f(k, beta))) < 5 * se)
        # a covariance: the sample covariance (mean removed) estimates the same matrix
        np.testing.assert_allclose(np.cov(vals.T), M.kernel_f(k, beta), atol=float(6 * se.max()))


def _row_covariance_bound(sigma, rows):
    # For i.i.d. N(0, Sigma) rows, E||S - Sigma||_F^2 = ((tr Sigma)^2 + ||Sigma||_F^2) / rows.
    return math.sqrt((np.trace(sigma) ** 2 + np.linalg.norm(sigma) ** 2) / rows)


def _sigma(kernel, draw, cfg):
    out = 0.0
    for r in range(cfg.h):
        g = r // cfg.group_size
        b = draw.v[g] @ draw.w_o[r]
        out = out + b.T @ kernel(draw.k[g], cfg.beta) @ b / cfg.n
    return np.asarray(out)


def _new_queries(model, draw, cfg, reps, key):
    """``reps`` outputs with fresh queries (and noise), K, V, W^O fixed; rows stacked."""

    def one(kk):
        kq, kn = jax.random.split(kk)
        return M.build(model, draw._replace(q=jax.random.normal(kq, draw.q.shape)), cfg, key=kn)

    return jax.vmap(one)(jax.random.split(key, reps)).reshape(-1, cfg.d_o)


@pytest.mark.parametrize("model, kernel", [("yg", M.kernel_g), ("yg_sigma_g", M.kernel_g), ("yg_sigma_f", M.kernel_f)])
def test_gaussian_rows_have_the_stated_covariance(model, kernel):
    # Given K, V, W^O the rows of these models are i.i.d. with covariance Sigma.
    cfg = CFG.replace(h_kv=2, d_o=4)
    draw = sample_fast(jax.random.key(8), cfg)
    ys = _new_queries(model, draw, cfg, 3000, jax.random.key(9))
    sigma = _sigma(kernel, draw, cfg)
    cov = np.asarray(ys.T @ ys / ys.shape[0])
    assert np.linalg.norm(cov - sigma) < 4 * _row_covariance_bound(sigma, ys.shape[0])


def test_centred_rows_have_mean_zero_and_covariance_sigma_f():
    # Y-ring^f with fresh queries (K, V, W^O fixed), end to end against the
    # closed forms: the rows have mean exactly zero and covariance Sigma_f
    # (heads have independent queries: no cross-head terms); Y^f's rows have
    # the common mean m = output_row_mean. The rows are not Gaussian: the
    # standard errors come from the spread between independent repetitions.
    cfg = CFG.replace(h_kv=2, d_o=4, d_k=3, beta=0.75)
    draw = sample_fast(jax.random.key(10), cfg)
    reps = 2000
    ys = _new_queries("yf_ring", draw, cfg, reps, jax.random.key(11)).reshape(reps, cfg.n, cfg.d_o)
    per_rep = np.asarray(jnp.einsum("tni,tnj->tij", ys, ys)) / cfg.n
    empirical = per_rep.mean(axis=0)
    se = math.sqrt(per_rep.var(axis=0, ddof=1).sum() / reps)
    sigma_f = _sigma(M.kernel_f, draw, cfg)
    assert np.linalg.norm(empirical - sigma_f) < 4 * se
    means = np.asarray(ys.mean(axis=1))  # (reps, d_o): each repetition's mean row
    z = means.mean(axis=0) / (means.std(axis=0, ddof=1) / math.sqrt(reps))
    assert np.max(np.abs(z)) < 3.5  # four z-scores, mean zero
    yf = np.asarray(_new_queries("yf", draw, cfg, 200, jax.random.key(11))).reshape(200, cfg.n, cfg.d_o)
    m = np.asarray(M.output_row_mean(draw, cfg))
    # the same queries: Y^f - Y-ring^f = 1 m^T
    np.testing.assert_allclose(yf - ys[:200], np.broadcast_to(m, yf.shape), atol=1e-10)
    assert np.linalg.norm(m) > 10 * np.linalg.norm(means.mean(axis=0))  # and m is not small


def test_hermite_split_of_f():
    # Linear coefficient beta and remaining variance alpha^2, by Gauss-Hermite quadrature.
    beta = 1.3
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    fx = np.asarray(M.f(x, beta))
    assert abs(np.sum(w * fx)) < 1e-12
    assert np.sum(w * fx * x) == pytest.approx(beta, rel=1e-12)
    cfg = AttentionConfig(n=3, d=3, h=1, d_k=2, beta=beta)
    assert np.sum(w * fx**2) - beta**2 == pytest.approx(cfg.alpha2, rel=1e-10)


def test_kernel_error_shrinks_with_n():
    # ||kernel_f - kernel_G||_F / sqrt(n) = O(sqrt(log n / n)) at fixed d_k / n.
    # At small d_k a 1/d_k bias on the diagonal dominates (it decays faster),
    # so the ratio may beat the rate; it must not be slower.
    errs = []
    for n in (128, 512):
        cfg = AttentionConfig(n=n, d=n, h=1, d_k=n // 4)
        errs.append(np.mean([float(M.kernel_error(sample_fast(jax.random.key(s), cfg), cfg)[0]) for s in range(3)]))
    ratio = errs[1] / errs[0]
    predicted = math.sqrt(math.log(512) / 512) / math.sqrt(math.log(128) / 128)
    assert ratio < 1.15 * predicted, (ratio, predicted)


def test_noise_models_need_a_key_and_unknown_models_fail():
    draw = sample_fast(jax.random.key(0), CFG)
    with pytest.raises(ValueError, match="noise key"):
        M.build("yg", draw, CFG)
    with pytest.raises(ConfigError, match="unknown model"):
        M.build("ygg", draw, CFG, key=jax.random.key(1))


def test_the_sigma_models_share_their_gaussian_rows():
    # Y^G[Sigma_f] and Y^G[Sigma_G] differ by the covariance alone: the same
    # G_r = U_r M_r^{-1/2} is recovered from both.
    draw = sample_fast(jax.random.key(12), CFG)
    key = jax.random.key(13)

    def rows(model, kernel):
        u = M.head_outputs(model, draw, CFG, key=key)
        return np.stack(
            [
                np.asarray(u[r])
                @ np.linalg.inv(
                    np.asarray(_psd_sqrt(draw.v[r // 2].T @ kernel(draw.k[r // 2], CFG.beta) @ draw.v[r // 2] / CFG.n))
                )
                for r in range(CFG.h)
            ]
        )

    np.testing.assert_allclose(rows("yg_sigma_f", M.kernel_f), rows("yg_sigma_g", M.kernel_g), atol=1e-8)


@pytest.mark.parametrize("form", ["reduced", "literal"])
def test_yg_given_the_draw_is_signal_plus_gaussian_noise(form):
    # Given Q, K, V: U_r = beta S_r V_g / sqrt(n) + noise whose rows are i.i.d.
    # N(0, alpha^2 V_g^T V_g / n).  build("yg") uses the reduced form
    # (Q (K^T V), G (V^T V)^{1/2}); yg_literal draws the n x n noise Z_r itself.
    cfg = CFG.replace(d_k=3)
    draw = sample_fast(jax.random.key(14), cfg)
    q, k, v = (np.asarray(a) for a in draw[:3])
    reps = 2000

    def heads(key):
        if form == "literal":
            return M.yg_literal(key, draw, cfg)
        return M.head_outputs("yg", draw, cfg, key=key)

    u = np.asarray(jax.jit(jax.vmap(heads))(jax.random.split(jax.random.key(15), reps)))
    for r in range(cfg.h):
        g = r // cfg.group_size
        signal = cfg.beta * (q[r] @ k[g].T / math.sqrt(cfg.d_k)) @ v[g] / math.sqrt(cfg.n)
        noise = (u[:, r] - signal).reshape(-1, cfg.d_v)
        sigma = cfg.alpha2 * v[g].T @ v[g] / cfg.n
        assert np.linalg.norm(noise.mean(axis=0)) < 5 * math.sqrt(np.trace(sigma) / noise.shape[0])
        cov = noise.T @ noise / noise.shape[0]
        assert np.linalg.norm(cov - sigma) < 4 * _row_covariance_bound(sigma, noise.shape[0])


# --- what each step of Table 1 controls ---------------------------------------


def _numpy_denominator_head(q, k, beta):
    """The middle term (C - I) f(S) / sqrt(n) of one head written out in NumPy, and C."""
    n, d_k = q.shape
    s = q @ k.T / math.sqrt(d_k)
    e = np.exp(beta * s)
    c = n * math.exp(beta**2 / 2) / e.sum(axis=1)  # n e^{beta^2/2} / row sums
    return (c - 1)[:, None] * (e * math.exp(-(beta**2) / 2) - 1) / math.sqrt(n), c


@pytest.mark.parametrize("beta", [0.5, 1.5, 3.0])
def test_denominator_terms_per_head_against_numpy(beta):
    # beta is traced: one compilation serves all three values, and each must be right.
    cfg = CFG.replace(beta=beta)
    draw = sample_fast(jax.random.key(20), cfg)
    t = M.denominator_terms(draw, cfg)
    q, k = np.asarray(draw.q), np.asarray(draw.k)
    for r in range(cfg.h):
        mid, c = _numpy_denominator_head(q[r], k[r // cfg.group_size], beta)
        np.testing.assert_allclose(t["op_norm"][r], np.linalg.norm(mid, 2), rtol=1e-10)
        np.testing.assert_allclose(t["max_entry"][r], np.abs(mid).max(), rtol=1e-10)
        np.testing.assert_allclose(t["c_dev"][r], np.abs(c - 1).max(), rtol=1e-10)
        assert t["max_entry"][r] <= t["op_norm"][r] * (1 + 1e-12)  # an entry never exceeds the norm


def test_centering_norm2_against_monte_carlo_over_queries():
    # |m_r|_2^2 = sum_i row_mean(q_i)^2 with q_i ~ N(0, I_{d_k}) i.i.d.: its mean is n E[m_i^2].
    n, samples = 50, 400_000
    for d_k, beta in ((8, 1.0), (32, 1.3), (5, 0.6)):
        m2 = np.asarray(M.row_mean(jax.random.normal(jax.random.key(21 + d_k), (samples, d_k)), beta)) ** 2
        mc, se = n * m2.mean(), n * m2.std() / math.sqrt(samples)
        assert abs(M.centering_norm2(n, d_k, beta) - mc) < 5 * se, (d_k, beta, mc, M.centering_norm2(n, d_k, beta))
    # about n beta^4 / (2 d_k) for wide keys, and infinite once beta^2 >= d_k / 2
    assert M.centering_norm2(100, 10_000, 1.0) == pytest.approx(100 / 20_000, rel=1e-3)
    assert M.centering_norm2(10, 8, 2.0) == math.inf


def test_sketched_rank_decides_rank_at_most():
    # rank-r matrices 60 x 80: the sketch with at_most + 8 columns returns r when r <= at_most + 8,
    # and a number above at_most whenever r > at_most
    for r, at_most, expect in [(3, 5, 3), (5, 5, 5), (6, 5, 6), (12, 5, 12), (30, 5, 13)]:
        a = jax.random.normal(jax.random.key(r), (60, r)) @ jax.random.normal(jax.random.key(100 + r), (r, 80))
        assert M.numerical_rank(a) == r
        assert M.numerical_rank(a, key=jax.random.key(7), at_most=at_most) == expect
    with pytest.raises(ValueError, match="both key and at_most"):
        M.numerical_rank(a, at_most=5)


def test_denominator_norms_fall_back_to_the_svd_when_lanczos_has_not_converged(monkeypatch):
    cfg = AttentionConfig(n=41, d=50, h=2, d_k=5, d_v=6, d_o=30)  # a shape no other test compiles
    draw = sample_fast(jax.random.key(8), cfg)
    monkeypatch.setattr(gelib.models.controls, "_LANCZOS_STEPS", 2)
    t = M.denominator_terms(draw, cfg)
    for r in range(cfg.h):
        mid, _ = _numpy_denominator_head(np.asarray(draw.q[r]), np.asarray(draw.k[r]), cfg.beta)
        np.testing.assert_allclose(t["op_norm"][r], np.linalg.norm(mid, 2), rtol=1e-12)


def _brute_form_moments(k, beta):
    """``E[f_j f_l f_m f_p]`` and ``E[f_j f_l]`` for ``f = e - E e``: inclusion-exclusion, a Gaussian integral each."""
    import itertools

    n, d = k.shape
    u = beta * k / math.sqrt(d)

    def moment(idx):  # E[prod_i e_{idx_i}] = E exp(c.q) e^{-r beta^2 / 2} = exp(|c|^2 / 2 - r beta^2 / 2)
        c = u[list(idx)].sum(0) if idx else np.zeros(d)
        return math.exp(-len(idx) * beta**2 / 2 + c @ c / 2)

    def centred(js):  # E prod_i (e_{j_i} - E e_{j_i}): the subset s of factors replaced by their means
        subsets = (s for r in range(len(js) + 1) for s in itertools.combinations(range(len(js)), r))
        return sum(
            (-1) ** len(s) * math.prod(moment([js[i]]) for i in s) * moment([j for i, j in enumerate(js) if i not in s])
            for s in subsets
        )

    t4 = np.array([centred(js) for js in itertools.product(range(n), repeat=4)]).reshape((n,) * 4)
    t2 = np.array([centred(js) for js in itertools.product(range(n), repeat=2)]).reshape(n, n)
    return t4, t2


def _test_matrices(v, z=0.7):
    """``V V^T / d_v`` and the resolvent ``(V V^T / d_v + z I)^{-1}``."""
    b = v @ v.T / v.shape[1]
    return {"vvt": b, "resolvent": np.linalg.inv(b + z * np.eye(len(b)))}


def test_form_variance_against_the_brute_force_sum():
    n, d_k, d_v, beta = 6, 3, 4, 1.2  # beta^2 / d_k = 0.48: the per-query reading's fourth moments would be infinite
    k = np.asarray(jax.random.normal(jax.random.key(31), (n, d_k)))
    v = np.asarray(jax.random.normal(jax.random.key(32), (n, d_v)))
    t4, t2 = _brute_form_moments(k, beta)
    np.testing.assert_allclose(t2, M.kernel_f(jnp.asarray(k), beta), rtol=1e-12)
    for name, b in _test_matrices(v).items():
        mean = np.sum(b * t2) / n
        var = np.einsum("jl,mp,jlmp->", b, b, t4) / n**2 - mean**2
        for chunk in (1, 4, 8):  # padding of the last chunk
            got = M.form_variance(jnp.asarray(k), jnp.asarray(b), beta, chunk=chunk)
            np.testing.assert_allclose(got, (mean, var), rtol=1e-10, err_msg=name)
    # the average over V: E[B_jl B_mp] = d_jl d_mp + (d_jm d_lp + d_jp d_lm) / d_v
    eye = np.eye(n)
    pair = lambda spec: np.einsum(spec, eye, eye)  # noqa: E731
    ebb = pair("jl,mp->jlmp") + (pair("jm,lp->jlmp") + pair("jp,lm->jlmp")) / d_v
    want = (np.sum(ebb * t4) - np.einsum("jl,mp,jlmp->", t2, t2, ebb)) / n**2
    np.testing.assert_allclose(M.form_variance_wishart(jnp.asarray(k), beta, d_v), want, rtol=1e-10)


def test_form_variance_against_monte_carlo_over_queries():
    # beta^2 / d_k = 1/20: the eighth moments (the variance of the squared deviations) are finite and small
    n, d_k, d_v, beta, samples = 7, 5, 3, 0.5, 400_000
    k = jax.random.normal(jax.random.key(41), (n, d_k))
    v = np.asarray(jax.random.normal(jax.random.key(42), (n, d_v)))
    q = jax.random.normal(jax.random.key(43), (samples, d_k))
    rows = np.asarray(M.f(q @ k.T / math.sqrt(d_k), beta) - M.kernel_mean(k, beta)[None, :])
    for name, b in _test_matrices(v).items():
        mean, var = (float(x) for x in M.form_variance(k, jnp.asarray(b), beta))
        sq = (np.einsum("sj,jl,sl->s", rows, b, rows) / n - mean) ** 2  # E sq = var, with the exact mean
        se = sq.std() / math.sqrt(samples)
        assert abs(sq.mean() - var) < 5 * se, (name, sq.mean(), var, se)
