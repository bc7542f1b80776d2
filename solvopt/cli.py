"""The ``solvopt`` command line: ``solve``, ``info``, ``methods``, ``convert``.

User mistakes (bad files, bad flags, missing backends) print one line on stderr and exit
non-zero; only bugs show a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from typing import Any, Callable, Sequence

from .core.errors import ModelError, SolvoptError
from .core.result import Result

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

# family -> "module:function" solving an Instance: f(instance, method, options, params) -> Result
FAMILY_HANDLERS = {
    "lp": "solvopt.cli:solve_lp_instance",
    "khc": "solvopt.khc.cli:solve_instance",
    "cvrp": "solvopt.dp.split_cli:solve_instance",
    "irp": "solvopt.dp.inventory_cli:solve_instance",
}

# CLI flag -> SolveOptions name (common to every family)
OPTION_FLAGS = {"time_limit": "time_limit", "gap": "rel_gap", "abs_gap": "abs_gap", "seed": "seed",
                "threads": "threads", "device": "device", "node_limit": "node_limit", "progress": "progress"}

# Family parameters given as flags; only the ones the user set reach the family handler.
FAMILY_FLAGS: list[tuple[str, dict[str, Any]]] = [
    ("--k", dict(type=int, help="number of hyperplanes (k-HC point files; overrides the file's K)")),
    ("--norms", dict(help="k-HC norm set, comma separated: 2 | 2,inf | 2,1 | 2,1,inf")),
    ("--restarts", dict(type=int, help="k-HC heuristic restarts")),
    ("--tour", dict(help="split: giant tour, 'identity' (file order) or a file of customer indices")),
    ("--scenarios", dict(type=int, help="number of demand scenarios (stochastic split, IRP)")),
    ("--demand", dict(help="demand model: 'poisson' or a .npy matrix of scenarios")),
    ("--fleet", dict(type=int, help="split: at most this many routes")),
    ("--penalty", dict(type=float, help="soft-capacity penalty per unit of excess load")),
    ("--policy", dict(help="customers whose demand exceeds Q: 'penalty' or 'infeasible'")),
    ("--chunk", dict(type=int, help="scenarios per chunk (bounds memory)")),
    ("--stockout", dict(type=float, help="IRP stockout penalty per unit")),
    ("--customer", dict(type=int, help="IRP customer index for the reinsertion DP")),
]


class CliError(SolvoptError):
    """A usage mistake detected by the CLI itself."""


def _load(target: str) -> Callable:
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def solve_lp_instance(instance, method: str | None, options: dict, params: dict) -> Result:
    """LP/MILP/QP files (MPS, LP) go straight to the DSL's standard-form backends."""
    if params:
        raise ModelError(f"LP/MPS instances take no family flags, got: {', '.join('--' + p for p in params)}")
    from solvopt.dsl.backends import solve_standard_form
    return solve_standard_form(instance.data["standard_form"], method=method, **options)


# --- commands ---------------------------------------------------------------------------------
def cmd_solve(args) -> int:
    from .io import read_instance
    options = {dest: getattr(args, flag) for flag, dest in OPTION_FLAGS.items() if getattr(args, flag) is not None}
    params = {flag.lstrip("-").replace("-", "_"): getattr(args, flag.lstrip("-").replace("-", "_"))
              for flag, _ in FAMILY_FLAGS}
    params = {k: v for k, v in params.items() if v is not None}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    rows, status = [], EXIT_OK
    for path in args.instances:
        try:
            read_params = {"k": params["k"]} if "k" in params else {}
            instance = _read(read_instance, path, args.format, read_params)
            family = args.family or instance.family
            if family != instance.family:  # a reader's data only fits its own family's solvers
                raise CliError(f"{path} was read as a {instance.family} instance ({instance.format}); "
                               f"--family {family} cannot solve it (use --format to read it differently)")
            if family not in FAMILY_HANDLERS:
                raise CliError(f"{path}: no solver for instances of family {family!r}")
            handler = _load(FAMILY_HANDLERS[family])
            result = handler(instance, args.method, dict(options), dict(params))  # handlers reject flags they don't take
        except SolvoptError as exc:
            _error(str(exc))
            status = EXIT_ERROR
            continue
        record = {"instance": instance.name, "path": path, **result.to_dict()}
        if args.out:
            with open(os.path.join(args.out, f"{instance.name}.json"), "w") as fh:
                json.dump(record, fh, allow_nan=False)
        if args.json:
            print(json.dumps(record, allow_nan=False), flush=True)
        else:
            rows.append(_summary_row(instance.name, result))
    if rows:
        _print_table(rows)
    return status


def _read(read_instance, path, fmt, params):
    """Read an instance, giving the reader only the parameters it declares (--k for point sets).

    A flag the reader does not take stays with the family handler, which rejects it by name.
    """
    from .io import detect_format, readers
    if params:
        if fmt is None:
            reader = detect_format(path)
        else:
            reader = next((r for r in readers() if r.format == fmt), None)
        if reader is not None:
            params = {k: v for k, v in params.items() if k in reader.params}
    return read_instance(path, format=fmt, **params)


def _summary_row(name: str, r: Result) -> list[str]:
    def num(x):
        return "-" if x is None else (f"{x:.10g}" if math.isfinite(x) else str(x))
    gap = "-" if r.gap is None else (f"{100 * r.gap:.3g}%" if math.isfinite(r.gap) else "inf")
    return [name, r.family or "-", r.method or "-", r.termination.value, num(r.objective), num(r.bound), gap,
            f"{r.stats.get('wall_time', float('nan')):.3f}"]


def _print_table(rows: list[list[str]]) -> None:
    header = ["instance", "family", "method", "termination", "objective", "bound", "gap", "time_s"]
    table = [header] + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def cmd_info(args) -> int:
    from .io import read_instance
    status = EXIT_OK
    for path in args.instances:
        try:
            inst = read_instance(path, format=args.format, **({"k": args.k} if args.k is not None else {}))
        except SolvoptError as exc:
            _error(str(exc))
            status = EXIT_ERROR
            continue
        desc = inst.describe()
        if args.json:
            print(json.dumps(desc, default=str))
        else:
            print("  ".join(f"{k}={v}" for k, v in desc.items()))
    return status


def cmd_methods(args) -> int:
    from .core.registry import solvers
    rows = []
    for s in solvers(args.family):
        if s.family.startswith("_"):
            continue
        rows.append({"family": s.family, "method": s.name, "default": bool(s.default),
                     "availability": s.available().value, "accepts": ",".join(s.capabilities),
                     "description": s.description, "install": s.install_hint})
    if args.family and not rows:
        raise CliError(f"no methods registered for family {args.family!r}")
    if args.json:
        print(json.dumps(rows))
        return EXIT_OK
    header = ["family", "method", "default", "availability", "accepts", "description"]
    table = [header] + [[r["family"], r["method"], "*" if r["default"] else "", r["availability"], r["accepts"],
                         r["description"]] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return EXIT_OK


def cmd_convert(args) -> int:
    from .io import read_instance
    from .io.convert import convert
    inst = read_instance(args.instance, format=args.format, **({"k": args.k} if args.k is not None else {}))
    convert(inst, args.output)
    print(f"wrote {args.output}")
    return EXIT_OK


# --- parser --------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="solvopt", description="Solve optimization instances with solvopt.")
    p.add_argument("--version", action="version", version=f"solvopt {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("solve", help="solve one or more instance files")
    s.add_argument("instances", nargs="+", metavar="INSTANCE")
    s.add_argument("--method", "-m", help="solver method (see `solvopt methods`); default: the family's default")
    s.add_argument("--family", help="override the detected problem family")
    s.add_argument("--format", help="override the detected file format")
    s.add_argument("--time-limit", dest="time_limit", type=_positive_float, help="seconds per instance")
    s.add_argument("--gap", type=_nonneg_float, help="relative gap to stop at (default 1e-6)")
    s.add_argument("--abs-gap", dest="abs_gap", type=_nonneg_float, help="absolute gap to stop at")
    s.add_argument("--node-limit", dest="node_limit", type=int, help="branch-and-bound node limit")
    s.add_argument("--seed", type=int)
    s.add_argument("--threads", type=int)
    s.add_argument("--device", choices=("auto", "cpu", "gpu"))
    s.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress lines on stderr (default: when stderr is a terminal)")
    s.add_argument("--json", action="store_true", help="one JSON object per instance on stdout")
    s.add_argument("--out", metavar="DIR", help="write each result (with its solution) to DIR/<name>.json")
    for flag, kw in FAMILY_FLAGS:
        s.add_argument(flag, **kw)
    s.set_defaults(func=cmd_solve)

    i = sub.add_parser("info", help="what was detected in an instance file, and its size")
    i.add_argument("instances", nargs="+", metavar="INSTANCE")
    i.add_argument("--format")
    i.add_argument("--k", type=int)
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_info)

    m = sub.add_parser("methods", help="list the registered solvers and whether they can run here")
    m.add_argument("--family")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_methods)

    c = sub.add_parser("convert", help="convert an instance to another format (by the output's extension)")
    c.add_argument("instance")
    c.add_argument("output")
    c.add_argument("--format")
    c.add_argument("--k", type=int, help="number of hyperplanes (needed to read a k-HC point file)")
    c.set_defaults(func=cmd_convert)
    return p


def _positive_float(text: str) -> float:
    v = _float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def _nonneg_float(text: str) -> float:
    v = _float(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def _float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return v


def _version() -> str:
    from . import __version__
    return __version__


def _error(message: str) -> None:
    first, *rest = message.strip().splitlines() or ["error"]
    line = first if not rest else f"{first} ({len(rest)} more lines)"
    print(f"solvopt: error: {line}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SolvoptError as exc:
        _error(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:  # e.g. --out in a read-only folder
        _error(f"{exc.filename or ''}: {exc.strerror}" if exc.strerror else str(exc))
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
