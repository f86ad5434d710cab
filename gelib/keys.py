"""Named key streams: independent JAX keys derived from a seed and a path of names.

A chapter draws several independent streams from one seed: the sweep, the
noise, the Monte Carlo check, the explorer, one stream per panel and per
layer. Building them by integer arithmetic on ``fold_in`` tags (``100 + i``,
``300 + h``, ...) is fragile: at other sizes two "independent" tags can
coincide. Here a stream is named by a path::

    key = gelib.keys.stream(seed, "sweep", n, s)   # seed s of the sweep at length n

Each element of the path is folded into the key in turn
(``jax.random.fold_in``). Integers in ``[0, 2^31)`` are folded as they are;
a string is folded as a 31-bit hash of its UTF-8 bytes (BLAKE2b) with the top
bit set, so strings and integers never share a tag. For a fixed parent key
``fold_in`` is injective in its tag (it encrypts the tag with the Threefry
block cipher under the parent key), so two different paths from one seed give
keys that differ at the first element where the paths differ; keys of
different parents coincide only by a 64-bit accident.

The same seed and path always give the same key, on every machine and in
every process (the hash does not depend on ``PYTHONHASHSEED``).
"""

from __future__ import annotations

import hashlib

import jax

__all__ = ["stream", "tag"]

_INT_LIMIT = 2**31


def tag(name: str | int) -> int:
    """The 32-bit ``fold_in`` tag of one path element.

    Integers in ``[0, 2^31)`` are their own tag; strings map to
    ``[2^31, 2^32)`` by a stable hash.

    >>> tag(7)
    7
    >>> tag("sweep") >= 2**31
    True
    """
    if isinstance(name, bool):
        raise TypeError("a key path element must be a string or an integer, not a bool")
    if isinstance(name, str):
        if not name:
            raise ValueError("a key path name must not be empty")
        digest = hashlib.blake2b(name.encode("utf-8"), digest_size=4).digest()
        return _INT_LIMIT | (int.from_bytes(digest, "big") % _INT_LIMIT)
    try:
        value = int(name)
    except TypeError:
        raise TypeError(f"a key path element must be a string or an integer, got {name!r}") from None
    if value != name or not 0 <= value < _INT_LIMIT:
        raise ValueError(f"integer key path elements must be in [0, 2^31), got {name!r}")
    return value


def stream(seed: int | jax.Array, *path: str | int) -> jax.Array:
    """The key of the stream ``path`` under ``seed`` (an integer or a typed JAX key).

    ``stream(seed)`` is ``jax.random.key(seed)``; every further element of
    ``path`` is folded in with :func:`tag`. Extending a path derives a
    sub-stream: ``stream(seed, "sweep", n)`` is the parent of
    ``stream(seed, "sweep", n, s)``.
    """
    if isinstance(seed, jax.Array):
        key = seed
    else:
        if isinstance(seed, bool) or int(seed) != seed:
            raise TypeError(f"seed must be an integer or a JAX key, got {seed!r}")
        key = jax.random.key(int(seed))
    for name in path:
        key = jax.random.fold_in(key, tag(name))
    return key
