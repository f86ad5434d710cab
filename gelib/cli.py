"""Command line: ``python -m gelib {compare,law,presets,batch}``.

``compare`` samples the original multi-head attention and its Gaussian
equivalent (or any two models of Table 1) from shared draws and reports the
relative W1 and KS distances between their spectra over seeds; ``law``
evaluates the free-probability limit law; ``presets`` lists the dimensions
of public models; ``batch`` executes every chapter and renders the book.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from .config import AttentionConfig, ConfigError
from .presets import PRESETS, get_preset

__all__ = ["main", "build_parser", "add_config_args", "config_from_args"]

_FIELDS = {  # flag -> AttentionConfig field
    "n": "n",
    "d": "d",
    "h": "h",
    "h_kv": "h_kv",
    "dk": "d_k",
    "dv": "d_v",
    "do": "d_o",
    "beta": "beta",
}


def add_config_args(p: argparse.ArgumentParser) -> None:
    """The flags that describe one attention layer (shared by every sub-command)."""
    g = p.add_argument_group(
        "layer", "a preset, or explicit dimensions; explicit flags override the preset's values"
    )
    g.add_argument("--preset", metavar="NAME", help=f"dimensions of a public model: {', '.join(PRESETS)}")
    g.add_argument("--n", type=int, help="context length n (n <= d)")
    g.add_argument("--d", type=int, help="input width d")
    g.add_argument("--h", type=int, help="number of query heads h")
    g.add_argument("--h-kv", type=int, help="key/value groups h_KV dividing h (default h, also when --h overrides a preset; 1 = MQA)")
    g.add_argument("--dk", type=int, help="key/query width per head d_K")
    g.add_argument("--dv", type=int, help="value width per head d_V (default d_K)")
    g.add_argument("--do", type=int, help="output width d_O (default d)")
    g.add_argument("--beta", type=float, help="inverse temperature beta > 0 (default 1)")
    g.add_argument("--tie-kv", action="store_true", help="within-head key-value tying W^V = W^K (needs d_V = d_K)")
    g.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="floating-point precision (default float64)")


def config_from_args(args: argparse.Namespace) -> AttentionConfig:
    """An :class:`AttentionConfig` from the flags of :func:`add_config_args`."""
    fields: dict = {}
    if args.preset:
        p = get_preset(args.preset)
        fields = dict(n=p.n, d=p.d, h=p.h, h_kv=p.h_kv, d_k=p.d_k)
    for flag, field in _FIELDS.items():
        value = getattr(args, flag)
        if value is not None:
            fields[field] = value
    required = {"n": "--n", "d": "--d", "h": "--h", "d_k": "--dk"}
    missing = [flag for field, flag in required.items() if field not in fields]
    if missing:
        raise ConfigError(f"give --preset NAME or all of {', '.join(missing)}")
    if args.preset and args.h is not None and args.h_kv is None:
        fields["h_kv"] = fields["h"]  # a new head count without --h-kv: unshared
    return AttentionConfig(**fields, tie_kv=args.tie_kv, dtype=args.dtype)


def _compare_main(args) -> int:
    import jax

    from .models import LABELS, check_models
    from .spectra import compare

    cfg = config_from_args(args)
    models = check_models(m.strip() for m in args.models.split(","))
    if len(models) != 2 or models[0] == models[1]:
        raise ConfigError(f"--models needs two different models A,B, got {args.models!r}")
    if args.seeds < 1:
        raise ConfigError(f"--seeds must be >= 1, got {args.seeds}")
    t0 = time.perf_counter()
    res = compare(jax.random.key(args.seed), cfg, models, args.seeds, args.path, progress=not args.quiet)
    elapsed = time.perf_counter() - t0
    out = res.as_dict()
    out.update(seed=args.seed, path=args.path, seconds=elapsed, device=jax.devices()[0].platform)
    if args.preset:
        p = get_preset(args.preset)
        out["preset"] = p.name
        if p.paper_rel_w1 is not None and models == ("mha", "yg") and cfg == p.config(dtype=cfg.dtype):
            out["paper_rel_w1"] = {"mean": p.paper_rel_w1[0] / 100, "ci95": p.paper_rel_w1[1] / 100}
    if args.json:
        print(json.dumps(out))
        return 0
    a, b = (LABELS[m] for m in models)
    rw, k = res.rel_w1_summary, res.ks_summary
    lines = [
        f"layer     {cfg.describe()}",
        f"models    {a}  against  {b}  ({res.rel_w1.size} seeds from seed {args.seed}, {args.path} path)",
        "",
        f"{'distance':<12}{'mean':>10}{'95% CI':>12}",
        f"{'rel. W1 (%)':<12}{100 * rw.mean:>10.3f}{'+-' + format(100 * rw.ci95, '.3f'):>12}",
        f"{'KS':<12}{k.mean:>10.4f}{'+-' + format(k.ci95, '.4f'):>12}",
    ]
    if "paper_rel_w1" in out:
        pm, pc = p.paper_rel_w1
        lines.append(f"{'paper (%)':<12}{pm:>10.3f}{'+-' + format(pc, '.3f'):>12}")
    lines += [
        "",
        f"mean eigenvalue: {a} {out['mean_eigenvalue'][models[0]]:.4f}, {b} "
        f"{out['mean_eigenvalue'][models[1]]:.4f}, limit "
        f"= {cfg.first_moment:.4f}",
        f"time {elapsed:.1f} s on {out['device']}",
    ]
    print("\n".join(lines))
    return 0


def _presets_main(args) -> int:
    rows = [p for p in PRESETS.values()]
    if args.json:
        print(json.dumps({p.name: {**p.config().as_dict(), "source": p.source,
                                   "paper_rel_w1_percent": p.paper_rel_w1} for p in rows}))
        return 0
    print(f"{'name':<18}{'n':>6}{'d':>7}{'h/h_kv':>9}{'d_k':>6}  sharing  paper rel. W1 (%)")
    for p in rows:
        paper = f"{p.paper_rel_w1[0]:.2f} +- {p.paper_rel_w1[1]:.2f}" if p.paper_rel_w1 else "-"
        print(f"{p.name:<18}{p.n:>6}{p.d:>7}{f'{p.h}/{p.h_kv}':>9}{p.d_k:>6}  {p.sharing:<7}  {paper}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gelib",
        description="Gaussian equivalence for multi-head self-attention (Hayase and Karakida, 2026).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{compare,law,presets,batch}")

    c = sub.add_parser(
        "compare",
        help="spectral distance between MHA and its Gaussian equivalent",
        description=(
            "Sample random multi-head attention layers and compare the spectra (eigenvalues of "
            "Y Y^T / n) of two models of the paper's Table 1 built from the same draws: by default "
            "the original softmax MHA (mha) against the Gaussian equivalent Y^G (yg). Reports the "
            "relative W1 distance (W1 / mean eigenvalue of the second model, as a fraction in "
            "--json) and the KS distance, with mean and 95%% confidence interval over seeds."
        ),
    )
    add_config_args(c)
    c.add_argument("--models", default="mha,yg", metavar="A,B",
                   help="two models of Table 1: mha, yf, yf_ring, yg_sigma_f, yg_sigma_g, yg (default mha,yg)")
    c.add_argument("--seeds", type=int, default=10, help="number of independent draws (default 10)")
    c.add_argument("--seed", type=int, default=0, help="root seed of the JAX key (default 0)")
    c.add_argument("--path", choices=("fast", "literal"), default="fast",
                   help="sample Q, K, V directly (fast) or build X and the weights (literal)")
    c.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=_compare_main)

    p = sub.add_parser("presets", help="list the dimensions of public models",
                       description="The attention dimensions of public models known to --preset.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_presets_main)

    from .batch import register as register_batch

    register_batch(sub)
    try:
        from .law_cli import register
    except ImportError:  # the limit-law module is optional for the rest of the CLI
        pass
    else:
        register(sub, add_config_args, config_from_args)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        parser.exit(2, f"{parser.prog} {args.command}: error: {e}\n")
