"""The output stage of the fast path in the host's BLAS (CPU, float64).

On the CPU backend XLA multiplies float64 matrices with its own kernels, at
about half the rate of the OpenBLAS that NumPy and SciPy ship (about 40
against 75-95 GFLOP/s a core on the machines the book is built on; see
``benchmarks/bench_sampling.py``). The output stage (``Y_i = U_i W^O`` and
``Y_i Y_i^T / n``) is most of a big layer's flops, so on the CPU it runs
here, from the factors that :func:`gelib.spectra.model_spectra` has the
device form, and with the structure that BLAS can use:

* a Gram matrix ``Y Y^T / n`` by a symmetric rank-k update (``dsyrk``: the
  lower triangle only, half the flops of a product);
* a product with a triangular factor (Bartlett's ``L``, the ``R`` of a QR) by
  ``dtrmm`` (half the flops);
* the ``R`` of a QR as the Cholesky factor of a Gram matrix
  (:func:`triangular_factor`: a third of Householder's flops, all in BLAS 3).

The eigenvalues of a large Gram matrix come from LAPACK's two-stage
tridiagonal reduction (:func:`eigvalsh_two_stage`, from ``n`` =
:data:`TWO_STAGE_MIN_N` on), where the host's LAPACK has it: its first stage
is a product of blocks (BLAS 3), where ``dsyevd`` spends half its flops in
matrix-vector products.

Only the lower triangle of each Gram matrix is filled: LAPACK's symmetric
eigensolvers (and :func:`gelib.spectra.eigvals`) read no other. The result
is the same matrix as the device path's up to rounding (tested in
``tests/test_numerics_host_linalg.py``); the laws are those of
:func:`gelib.spectra.reduced_output_grams`.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import scipy.linalg
from scipy.linalg import blas, lapack

__all__ = ["available", "grams_from_parts", "triangular_factor", "eigvalsh_two_stage", "TWO_STAGE_MIN_N"]

#: From this size on, :func:`gelib.spectra.eigvals` uses the two-stage tridiagonal
#: reduction where the host's LAPACK has it (at 4096 it took 11 s against 20 s for
#: ``dsyevd``, one thread; at 2048 both took the same).
TWO_STAGE_MIN_N = 3072


def available() -> bool:
    """Whether the output stage runs here: JAX on its CPU backend with float64 enabled."""
    # jax.config's options are attributes set at run time, which its stub does not list
    return jax.default_backend() == "cpu" and bool(jax.config.jax_enable_x64)  # type: ignore[attr-defined]


def triangular_factor(u: np.ndarray) -> np.ndarray:
    """The ``R`` of ``u^T = Q R`` with a nonnegative diagonal (``(N, N)``, upper triangular, Fortran
    order) for ``u`` of shape ``(N, p)``, ``N <= p``: the Cholesky factor of the Gram matrix
    ``u u^T = R^T R``.

    The Gram matrix is a symmetric rank-k update (``p N^2`` flops) and its
    Cholesky factorisation ``N^3 / 3``, where Householder's QR takes
    ``2 p N^2 - 2 N^3 / 3`` in panels that are half matrix-vector products (at
    GPT-3's dimensions, ``N = 4096``, ``p = 12288``: 0.6 s against 26 s for
    XLA's QR and 43 s for LAPACK's on a 2-core CPU). Squaring the condition
    number costs nothing that matters here: ``R^T R = u u^T + E`` with
    ``||E|| <= c eps ||u||^2`` (backward stability), so the Gram matrices made
    from ``R`` carry the rounding of a product, as the direct route's do.
    Where the Gram matrix is singular to working precision (a model with
    rank-deficient rows, e.g. ``beta = 0``), Cholesky fails and the factor
    comes from LAPACK's QR, its rows' signs made those of the Cholesky factor's
    (a nonnegative diagonal), the same ``R``."""
    big = u.shape[0]
    c = blas.dsyrk(1.0, u.T, trans=1, lower=0)  # u.T: a Fortran view of u^T; upper triangle of u u^T
    r, info = lapack.dpotrf(c, lower=0, clean=1, overwrite_a=1)
    if info == 0:
        return r
    r = scipy.linalg.qr(u.T, mode="r", check_finite=False)[0][:big]
    sign = np.where(np.diag(r) < 0, -1.0, 1.0)
    return np.asfortranarray(sign[:, None] * r)


def _syrk(y_t: np.ndarray, n: int) -> np.ndarray:
    """``Y Y^T / n`` (lower triangle, ``(n, n)``, Fortran order) from ``y_t = Y^T`` (``(k, n)``)."""
    return blas.dsyrk(1.0 / n, np.asfortranarray(y_t), trans=1, lower=1)


def grams_from_parts(route: str, a: np.ndarray, b: np.ndarray, m: int, n: int) -> list[np.ndarray]:
    """The ``m`` Gram matrices ``Y_i Y_i^T / n`` (lower triangles, each ``(n, n)``) from the device's factors.

    * ``"direct"``: ``a`` stacks the ``U_i`` (``(m, n, p)``), ``b`` is ``W^O`` (``(p, d_o)``);
    * ``"bartlett"``: ``a`` as above, ``b`` the lower-triangular factor ``L / sqrt(p)`` (``(p, p)``);
    * ``"qr"``: ``a`` stacks the ``U_i`` as above; ``R`` is the upper-triangular factor of
      ``[U_1; ...; U_m]^T = Q R`` (``(m n, m n)``, :func:`triangular_factor`), ``b`` is
      ``G / sqrt(p)``: Bartlett's lower-triangular factor (``(m n, m n)``) when
      ``d_o >= m n``, else a Gaussian ``(m n, d_o)`` matrix; then ``Y = R^T G``.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if route == "direct":
        return [_syrk((a[i] @ b).T, n) for i in range(m)]
    if route == "bartlett":
        # Y_i^T = L^T U_i^T: b.T is L^T (upper triangular, a Fortran-order view)
        return [_syrk(blas.dtrmm(1.0, b.T, a[i].T, side=0, lower=0), n) for i in range(m)]
    if route == "qr":
        r = triangular_factor(a.reshape(m * n, a.shape[-1]))
        if b.shape[0] == b.shape[1]:
            # Y^T = G^T R, a product of upper-triangular matrices, so upper triangular
            # itself: column block i (Y_i^T) is zero below row (i + 1) n
            y_t = blas.dtrmm(1.0, b.T, r, side=0, lower=0, overwrite_b=1)
            return [_syrk(y_t[: (i + 1) * n, i * n : (i + 1) * n], n) for i in range(m)]
        y_t = (r.T @ b).T  # (d_o, m n)
        return [_syrk(y_t[:, i * n : (i + 1) * n], n) for i in range(m)]
    raise ValueError(f"unknown output route {route!r}")


@functools.lru_cache(maxsize=1)
def _two_stage():
    """LAPACKE's ``dsyevd_2stage`` from the OpenBLAS that SciPy's wheels bundle, or ``None``.

    SciPy does not wrap LAPACK's two-stage eigensolvers; its Linux wheels ship
    them, with a ``scipy_`` prefix, in ``scipy.libs``. Elsewhere (another
    platform, a SciPy built on a system LAPACK) this returns ``None`` and
    :func:`gelib.spectra.eigvals` keeps ``dsyevd``."""
    import ctypes
    import glob
    import os

    import scipy

    pattern = os.path.join(os.path.dirname(scipy.__file__), os.pardir, "scipy.libs", "*openblas*")
    for path in sorted(glob.glob(pattern)):
        try:
            fn = ctypes.CDLL(path).scipy_LAPACKE_dsyevd_2stage
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, ctypes.c_char, ctypes.c_char, ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
        fn.argtypes += [ctypes.c_void_p]
        return fn
    return None


def eigvalsh_two_stage(c: np.ndarray) -> np.ndarray | None:
    """Ascending eigenvalues of the symmetric ``c`` (``(n, n)``, its lower triangle is read) by LAPACK's
    two-stage reduction (``dsyevd_2stage``, eigenvalues only), or ``None`` where the host's LAPACK lacks it."""
    fn = _two_stage()
    if fn is None:
        return None
    a = np.array(c, dtype=np.float64, order="F", copy=True)
    n = a.shape[0]
    w = np.empty(n)
    info = fn(102, b"N", b"L", n, a.ctypes.data, n, w.ctypes.data)  # 102: column-major
    if info != 0:
        raise np.linalg.LinAlgError(f"dsyevd_2stage failed (info = {info})")
    return w
