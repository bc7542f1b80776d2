"""The ``solvopt`` command line: ``solve``, ``info``, ``methods``, ``convert``, ``warmup``.

One generic handler serves every family: the instance's reader names its family, the family's
descriptor (:mod:`solvopt.core.family`) says which flags it takes and where each goes (the
reader, the model built by ``from_instance``, or the solve options). A flag the family does
not take is a one-line error naming the families that take it. User mistakes (bad files, bad
flags, missing backends) print one line on stderr and exit non-zero; only bugs show a
traceback. Ctrl-C stops the running instance, prints its best result, writes ``--out``, lists
the instances not started as skipped and exits 130. With ``--workers N`` or
``--scheduler ADDRESS`` (:mod:`solvopt.dist`) several instances are solved as dask tasks and
reported as they finish (completion order); Ctrl-C there prints the finished ones, lists the
others and exits 130.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import textwrap
import threading
from collections.abc import Sequence
from typing import Any

from .core.errors import ModelError, SolvoptError
from .core.family import Family, Param, families
from .core.interrupt import ABANDONED_THREAD_NAME, catching_sigint, stop_requested
from .core.result import Result, Termination, format_gap
from .core.tasks import exception_message

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

# CLI flag dest -> SolveOptions name (common to every family)
OPTION_FLAGS = {"time_limit": "time_limit", "gap": "rel_gap", "abs_gap": "abs_gap", "seed": "seed",
                "threads": "threads", "device": "device", "node_limit": "node_limit", "progress": "progress"}


class CliError(SolvoptError):
    """A usage mistake detected by the CLI itself."""


def family_flags() -> dict[str, list[tuple[Family, Param]]]:
    """Flag dest -> the (family, parameter) pairs that declare it, over every discovered family."""
    out: dict[str, list[tuple[Family, Param]]] = {}
    for fam in families():
        for p in fam.params:
            out.setdefault(p.name, []).append((fam, p))
    return out


# --- solve ------------------------------------------------------------------------------------
def solve_instance(instance, fam: Family, method: str | None, options: dict, given: dict[str, Any],
                   reader_params: set[str], solver_options: Sequence[tuple[str, str]] = ()) -> Result:
    """Route the flags the user gave by the family's descriptor, build the model, solve.

    ``solver_options``: the ``--solver-option NAME=VALUE`` pairs, typed by the chosen method's
    option schema (:func:`typed_solver_options`).
    """
    model_params, solver_params = {}, {}
    for name, value in given.items():
        p = fam.param(name)
        if p is None:
            takers = [f.name for f, _ in family_flags().get(name, [])]
            raise CliError(f"{instance.path}: --{name.replace('_', '-')} does not apply to {fam.name} instances; "
                           f"it is a flag of: {', '.join(takers)}")
        if p.target == "model":
            model_params[name] = value
        elif p.target == "solver":
            solver_params[name] = value
        elif name not in reader_params:
            raise CliError(f"{instance.path}: --{name.replace('_', '-')} does not apply to {instance.format} files")
    for p in fam.params:  # CLI defaults a family declares (e.g. a scenario count)
        if p.name not in given and p.default is not None:
            (model_params if p.target == "model" else solver_params if p.target == "solver" else {})[p.name] = p.default
    model = fam.build_model(instance, **model_params)
    return solve_model(model, fam, method, options, given, solver_params, solver_options, str(instance.path))


def solve_model(model, fam: Family, method: str | None, options: dict, given: dict[str, Any],
                solver_params: dict[str, Any], solver_options: Sequence[tuple[str, str]], where: str) -> Result:
    """Solve a built model with the chosen (or default) method, its solver flags checked against it."""
    from .core.registry import get_solver, solvers
    if method is None:  # a model may name its own default (the games models do)
        method = getattr(model, "default_method", None)
    solver = get_solver(fam.name, method, options.get("device"))
    for name in list(solver_params):
        if solver.option(name) is None:
            if name not in given:  # a CLI default the chosen method does not take
                del solver_params[name]
                continue
            takers = [s.name for s in solvers(fam.name) if s.option(name) is not None]
            raise CliError(f"{where}: --{name.replace('_', '-')} does not apply to method {solver.name!r}; "
                           f"it applies to: {', '.join(takers) or 'none'}")
    for name, value in typed_solver_options(solver, solver_options, where).items():
        if name == "params" and isinstance(solver_params.get("params"), dict):
            value = {**solver_params["params"], **value}
        solver_params[name] = value
    return model.solve(solver.name, **options, **solver_params)


_TRUE, _FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")


def typed_solver_options(solver, pairs: Sequence[tuple[str, str]], where: str = "") -> dict[str, Any]:
    """``--solver-option NAME=VALUE`` pairs as the method's typed options.

    A NAME the method declares (``solvopt methods --verbose``) is converted by its type: bool from
    true/false/on/off/yes/no/1/0, int, float, str (checked against its choices), other types from
    the text read as JSON when it parses (a list, a dict), else the text. A NAME it does not declare
    goes, for a method with a ``params`` option (HiGHS, SCIP, Gurobi), into ``params`` as the
    backend's own parameter (the value read as an integer, a number, true/false, else the text):
    the backend rejects a name it does not know. Anything else is a :class:`CliError`.
    """
    out: dict[str, Any] = {}
    prefix = f"{where}: " if where else ""
    for name, text in pairs:
        opt = solver.option(name)
        if opt is not None and name != "params":
            value = _typed_text(opt, name, text, prefix)
            out[name] = opt.convert(value, f"method {solver.name!r}") if value is not None else None
            if out[name] is None:
                del out[name]
        elif solver.option("params") is not None:
            value = json.loads(text) if name == "params" and text.lstrip().startswith("{") else _literal(text)
            if name == "params":
                if not isinstance(value, dict):
                    raise CliError(f"{prefix}--solver-option params=... takes a JSON object, got {text!r}")
                out.setdefault("params", {}).update(value)
            else:
                out.setdefault("params", {})[name] = value
        else:
            known = ", ".join(o.name for o in solver.options) or "none"
            raise CliError(f"{prefix}--solver-option {name}: method {solver.name!r} has no such option "
                           f"(its options: {known}; see `solvopt methods --family {solver.family} --verbose`)")
    return out


def _typed_text(opt, name: str, text: str, prefix: str):
    """``text`` converted by the option's type (a one-line CliError when it does not fit)."""
    kind = opt.type
    low = text.strip().lower()
    try:
        if kind is bool:
            if low in _TRUE or low in _FALSE:
                return low in _TRUE
            raise ValueError("expected true/false, on/off, yes/no or 1/0")
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        if kind is str or opt.choices is not None and all(isinstance(c, str) for c in opt.choices):
            if opt.choices is not None and text not in opt.choices:
                raise ValueError(f"expected one of {', '.join(map(str, opt.choices))}")
            return text
        try:
            return json.loads(text)
        except ValueError:
            return text
    except ValueError as exc:
        type_name = getattr(kind, "__name__", "value")
        detail = str(exc) if "expected" in str(exc) else f"not a valid {type_name}"
        raise CliError(f"{prefix}--solver-option {name}={text}: {detail}") from None


def _literal(text: str):
    """A backend parameter's value from its text: an int, a float, a bool, else the text."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def cmd_solve(args) -> int:
    flags = family_flags()
    options = {dest: getattr(args, flag) for flag, dest in OPTION_FLAGS.items() if getattr(args, flag) is not None}
    given = {name: getattr(args, name) for name in flags if getattr(args, name, None) is not None}
    args.solver_options = _solver_option_pairs(args.solver_option or [])
    if args.out:
        from .io.results import output_names
        os.makedirs(args.out, exist_ok=True)
        args.out_names = output_names(args.instances)  # from the paths, sanitised, unique in this run
    rows: list[list[str]] = []
    status = EXIT_OK
    try:
        with catching_sigint():
            status = _solve_batch(args, options, given, rows)
    except KeyboardInterrupt:  # a hard stop (second Ctrl-C) outside a solve: keep what has finished
        _error("interrupted")
        status = EXIT_INTERRUPTED
    finally:
        if rows:
            _print_table(rows)
    return status


def _solver_option_pairs(texts: Sequence[str]) -> list[tuple[str, str]]:
    """``NAME=VALUE`` texts as (name, value) pairs (a one-line CliError for a text without ``=``)."""
    pairs = []
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--solver-option takes NAME=VALUE, got {text!r}")
        pairs.append((name.strip(), value.strip()))
    return pairs


def _solve_batch(args, options: dict, given: dict, rows: list) -> int:
    """Solve the instances here, one after the other, or as tasks on dask workers (--workers/--scheduler)."""
    if args.scheduler is not None and args.workers is not None:
        raise CliError("give --workers (a local cluster) or --scheduler (an existing one), not both")
    if args.scheduler is None and (args.workers or 1) <= 1:
        return _solve_in_order(args, options, given, rows)
    from .core.tasks import use_client
    from .dist.cluster import client_for
    with client_for(args.workers, args.scheduler) as client:
        if len(args.instances) == 1:  # one instance: its scenario chunks go to the workers
            with use_client(client):
                return _solve_in_order(args, options, given, rows)
        return _solve_on_workers(client, args, options, given, rows)


def _solve_in_order(args, options: dict, given: dict, rows: list) -> int:
    """Solve the instances in order; stops after an interrupted one, listing the rest as skipped."""
    status = EXIT_OK
    for position, path in enumerate(args.instances):
        if stop_requested():
            _skipped(args.instances[position:])
            return EXIT_INTERRUPTED
        try:
            instance, result = solve_path(path, args.format, args.family, args.method, options, given,
                                          args.solver_options)
        except SolvoptError as exc:
            _failed(args, path, str(exc), rows)
            status = EXIT_ERROR
            continue
        except KeyboardInterrupt:
            _skipped(args.instances[position:])
            raise
        except Exception as exc:
            _failed(args, path, exception_message(exc), rows)
            status = EXIT_ERROR
            continue
        _report(args, path, instance, result, rows, position)
        if result.termination is Termination.INTERRUPTED or stop_requested():
            _skipped(args.instances[position + 1:])
            return EXIT_INTERRUPTED
    return status


def _solve_on_workers(client, args, options: dict, given: dict, rows: list) -> int:
    """One task per instance; each is reported (and written to --out) as it finishes."""
    import functools

    from .core.progress import Progress
    from .core.tasks import TaskError, map_tasks
    task = functools.partial(_worker_task, fmt=args.format, family=args.family, method=args.method,
                             options=options, given=given, solver_options=args.solver_options)
    runs = map_tasks(task, args.instances, client=client, progress=Progress(args.progress),
                     return_exceptions=True, what="instances")
    status, finished = EXIT_OK, set()
    try:
        for index, outcome in runs:
            path = args.instances[index]
            finished.add(index)
            if isinstance(outcome, TaskError) or outcome[0] == "error":
                _failed(args, path, outcome.message if isinstance(outcome, TaskError) else outcome[1], rows)
                status = EXIT_ERROR
                continue
            instance, result = outcome[1]
            _report(args, path, instance, result, rows, index)
    finally:
        runs.close()
    if runs.stopped is Termination.INTERRUPTED:
        _skipped([p for i, p in enumerate(args.instances) if i not in finished], "not finished")
        return EXIT_INTERRUPTED
    return status


def _worker_task(path: str, fmt, family, method, options: dict, given: dict, solver_options=()):
    """An instance solved on a worker: ``("ok", (instance, result))`` or ``("error", one-line message)``."""
    try:
        return "ok", solve_path(path, fmt, family, method, dict(options), given, solver_options)
    except SolvoptError as exc:
        return "error", str(exc)


def solve_path(path: str, fmt: str | None, family: str | None, method: str | None, options: dict,
               given: dict, solver_options: Sequence[tuple[str, str]] = ()) -> tuple:
    """Read one instance file (or build a model by ``FILE.py:FUNCTION``) and solve it as the flags
    say: ``(instance, result)``."""
    from .core.family import get_family
    from .io import detect_format, read_instance, readers
    target = factory_target(path)
    if target is not None:
        return solve_factory(path, *target, family, method, options, given, solver_options)
    reader = detect_format(path) if fmt is None else next((r for r in readers() if r.format == fmt), None)
    reader_params = set(reader.params) if reader is not None else set()
    instance = read_instance(path, format=fmt, **{k: v for k, v in given.items() if k in reader_params})
    family = family or instance.family
    if family != instance.family:  # a reader's data only fits its own family's solvers
        raise CliError(f"{path} was read as a {instance.family} instance ({instance.format}); "
                       f"--family {family} cannot solve it (use --format to read it differently)")
    try:
        fam = get_family(family)
    except ModelError:
        raise CliError(f"{path}: no solver for instances of family {family!r}") from None
    return instance, solve_instance(instance, fam, method, dict(options), given, reader_params, solver_options)


def factory_target(path: str) -> tuple[str, str] | None:
    """``FILE.py:FUNCTION`` as (file, function name); None for an instance file."""
    file, sep, name = path.rpartition(":")
    if sep and file.lower().endswith(".py") and name.isidentifier():
        return file, name
    return None


def load_factory(path: str, file: str, name: str):
    """Import ``file`` and call its ``name()``: the solvopt model it returns (one-line errors otherwise).

    The file's folder is on ``sys.path`` while it is imported, so it may import its neighbours.
    """
    import importlib.util
    if not os.path.isfile(file):
        raise CliError(f"{path}: no such file: {file}")
    spec = importlib.util.spec_from_file_location(f"solvopt_factory_{abs(hash(os.path.abspath(file)))}", file)
    if spec is None or spec.loader is None:
        raise CliError(f"{path}: {file} cannot be imported (not a Python source file)")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(file))
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise CliError(f"{path}: importing {file} failed: {exception_message(exc)}") from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    factory = getattr(module, name, None)
    if factory is None:
        found = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
                       and getattr(v, "__module__", None) == module.__name__)
        defines = f" (it defines: {', '.join(found)})" if found else ""
        raise CliError(f"{path}: no function {name!r} in {file}{defines}")
    if not callable(factory):
        raise CliError(f"{path}: {name} in {file} is not a function ({type(factory).__name__})")
    try:
        model = factory()
    except Exception as exc:
        raise CliError(f"{path}: {name}() raised {exception_message(exc)}") from None
    factory_family(path, name, model)
    return model


def model_family(model) -> str | None:
    """The family a model object belongs to: its ``family``, ``lp`` for an algebraic ``Model``."""
    from .dsl.model import Model
    return "lp" if isinstance(model, Model) else getattr(model, "family", None)


def factory_family(path: str, name: str, model) -> str:
    """The family of the model ``name()`` returned; a CliError when it is not a solvopt model."""
    family = model_family(model)
    if not isinstance(family, str) or not callable(getattr(model, "solve", None)):
        raise CliError(f"{path}: {name}() returned {type(model).__name__}, not a solvopt model "
                       "(return a model of solvopt.dsl: Model, Transport, HyperplaneClustering, LayeredDP, ...)")
    return family


def factory_instance(path: str, file: str, name: str, model):
    """The :class:`~solvopt.io.base.Instance` standing for a model built by a factory (reports, ``info``)."""
    from .io.base import Instance, instance_name
    meta = {"factory": name, "model": type(model).__name__}
    text = repr(model)
    if not text.startswith("<"):  # a model's own description, not object.__repr__
        meta["description"] = text
    return Instance(family=factory_family(path, name, model), format="python", name=instance_name(file), path=path,
                    meta=meta)


def solve_factory(path: str, file: str, name: str, family: str | None, method: str | None, options: dict,
                  given: dict, solver_options: Sequence[tuple[str, str]] = ()) -> tuple:
    """Build the model of ``FILE.py:FUNCTION`` and solve it: ``(instance, result)``.

    The model is built: a flag that would go to a reader or the model is an error saying so; the
    method's flags (``--engine``, ``--solver-option``, ...) and the common options apply as for files.
    """
    from .core.family import get_family
    model = load_factory(path, file, name)
    own = factory_family(path, name, model)
    if family is not None and family != own:
        raise CliError(f"{path}: {name}() returned a {own} model; --family {family} cannot solve it")
    try:
        fam = get_family(own)
    except ModelError:
        raise CliError(f"{path}: no solver for models of family {own!r}") from None
    solver_params = {p.name: p.default for p in fam.params if p.target == "solver" and p.default is not None}
    for flag, value in given.items():
        param, text = fam.param(flag), f"{path}: --{flag.replace('_', '-')}"
        if param is None:
            raise CliError(f"{text} does not apply to {fam.name} models")
        if param.target != "solver":
            raise CliError(f"{text} does not apply to a model built by {name}(): it sets the model's data "
                           "(set it in the factory)")
        solver_params[flag] = value
    instance = factory_instance(path, file, name, model)
    return instance, solve_model(model, fam, method, dict(options), given, solver_params, solver_options, path)


# The stdout this command started with: rows and JSON lines go there even while a third-party import
# that a stop abandoned still has Python's stdout redirected to stderr (see the transport's POT import).
_started_stdout: list = []


def _out():
    return _started_stdout[-1] if _started_stdout else sys.stdout


def _write_line(text: str) -> None:
    """``text`` and a newline on the command's stdout, whole: a Ctrl-C that interrupts a large write
    to a pipe makes the system call write part of it, and Python's text layer can drop the rest."""
    out = _out()
    out.flush()
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):   # a stream without a file (a test's capture)
        print(text, file=out, flush=True)
        return
    view = memoryview((text + "\n").encode("utf-8"))
    while view:
        view = view[os.write(fd, view):]


def _report(args, path: str, instance, result: Result, rows: list, index: int) -> None:
    """A finished instance: its row first (the --json line, or a table row), then its --out file.

    Nothing large delays the row: a run already stopped by Ctrl-C prints its --json line without
    the large arrays (named in ``"omitted"``; --out still gets them), and a Ctrl-C while a large
    line or file is being written leaves the large arrays out of it (see
    :mod:`solvopt.io.results`). The --out file is named from the input path (``args.out_names``).
    """
    from .io.results import result_json, write_result
    stopped_before = stop_requested()

    def should_stop() -> bool:  # a Ctrl-C that arrives while writing
        return stop_requested() and not stopped_before

    if args.json:
        # the document --out writes (plain JSON), on one line
        _write_line(result_json({"instance": instance.name, "path": path}, result, instance, should_stop,
                                omit_large=stopped_before))
    else:
        rows.append(_summary_row(instance.name, result))
    if args.out:  # plain JSON (+ a family's own files) that reads without solvopt
        name = args.out_names[index] if getattr(args, "out_names", None) else None
        written = write_result(args.out, {"instance": instance.name, "path": path}, result, instance, name=name,
                               should_stop=should_stop)
        if written.omitted:
            _error(f"{written[0]}: interrupted while writing: {', '.join(written.omitted)} left out "
                   "(listed in 'omitted')")


def _failed(args, path: str, message: str, rows: list) -> None:
    """An instance that failed: one line on stderr and, in a batch's table, an ``error`` row."""
    _path_error(path, message)
    if not args.json and len(args.instances) > 1:
        from .io import instance_name
        rows.append([instance_name(path), "-", "-", Termination.ERROR.value, "-", "-", "-", "-"])


def _path_error(path: str, message: str) -> None:
    _error(message if path in message else f"{path}: {message}")


def _skipped(paths: list[str], why: str = "not started") -> None:
    if paths:
        _error(f"interrupted: skipped {len(paths)} instance(s) {why}: {', '.join(paths)}")




def _summary_row(name: str, r: Result) -> list[str]:
    def num(x):
        return "-" if x is None else (f"{x:.10g}" if math.isfinite(x) else str(x))
    termination = r.termination_label
    concept = r.stats.get("equilibrium")  # a game's result: the equilibrium it is (a VE or a GNE), as --json says
    if isinstance(concept, str) and concept:
        termination += f" ({concept})"
    return [name, r.family or "-", r.method or "-", termination, num(r.objective), num(r.bound),
            format_gap(r.gap), f"{r.stats.get('wall_time', float('nan')):.3f}"]


def _print_table(rows: list[list[str]], header: Sequence[str] = ("instance", "family", "method", "termination",
                                                                   "objective", "bound", "gap", "time_s")) -> None:
    table = [list(header)] + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=_out())


# --- info, methods, convert --------------------------------------------------------------------
def cmd_info(args) -> int:
    status = EXIT_OK
    for path in args.instances:
        try:
            desc = _describe(path, args.format, args.k)
        except SolvoptError as exc:
            _path_error(path, str(exc))
            status = EXIT_ERROR
            continue
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            _path_error(path, f"could not read: {exception_message(exc)}")
            status = EXIT_ERROR
            continue
        if args.json:
            print(json.dumps(desc, default=str))
        else:
            print("  ".join(f"{k}={v}" for k, v in desc.items()))
    return status


def _describe(path: str, fmt: str | None, k: int | None) -> dict:
    """``info``'s description of a file (its reader's ``peek`` when reading needs a parameter not
    given), or of the model a ``FILE.py:FUNCTION`` factory builds."""
    from .io import detect_format, read_instance, readers
    target = factory_target(path)
    if target is not None:
        model = load_factory(path, *target)
        return factory_instance(path, *target, model).describe()
    reader = detect_format(path) if fmt is None else next((r for r in readers() if r.format == fmt), None)
    if reader is not None and reader.peek is not None and k is None:
        return reader.peek(path)
    return read_instance(path, format=fmt, **({"k": k} if k is not None else {})).describe()


def method_rows(family: str | None) -> list[dict[str, Any]]:
    """One row per method (and one per family whose solvers failed to import), for ``methods``."""
    from .core.family import broken_families, discover, get_family, load_solvers
    from .core.registry import solvers
    names = [family] if family else sorted(discover())
    if family:
        get_family(family)  # unknown family: one-line error listing the known ones
    rows = []
    for name in names:
        state = load_solvers(name)
        for s in solvers(name):
            rows.append({"family": s.family, "method": s.name, "default": bool(s.default),
                         "availability": s.available().value, "accepts": ",".join(s.capabilities),
                         "honours": sorted(s.honours or ()), "description": s.description, "install": s.install_hint,
                         "options": [{"name": o.name, "type": o.type_name, "default": o.default, "help": o.help}
                                     for o in s.options]})
        if state.error:
            rows.append({"family": name, "method": "-", "default": False, "availability": "import failed",
                         "accepts": "", "honours": [], "description": state.error, "install": "", "options": []})
    if not family:
        for state in broken_families():
            rows.append({"family": state.module, "method": "-", "default": False, "availability": "import failed",
                         "accepts": "", "honours": [], "description": state.error, "install": "", "options": []})
    return rows


def cmd_methods(args) -> int:
    rows = method_rows(args.family)
    if args.json:
        print(json.dumps(rows, default=str))
        return EXIT_OK
    width = shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 100
    table = [[r["family"], r["method"], "*" if r["default"] else "", r["availability"], r["description"]]
             for r in rows]
    header = ["family", "method", "default", "availability", "description"]
    widths = [max(len(r[i]) for r in [header] + table) for i in range(4)]
    room = max(20, width - sum(widths) - 2 * 4)
    indent = " " * (sum(widths) + 2 * 4)
    for r in [header] + table:
        if r[3] == "import failed" and len(r[4]) > room:  # the reason matters: whole, on its own lines
            desc, more = "", textwrap.wrap(r[4], width, initial_indent="    ", subsequent_indent="    ")
        else:  # a long description wraps under its column, never cut
            lines = textwrap.wrap(r[4], room) or [""]
            desc, more = lines[0], [indent + line for line in lines[1:]]
        print("  ".join([c.ljust(w) for c, w in zip(r[:4], widths)] + [desc]).rstrip())
        for line in more:
            print(line)
        if args.verbose and r is not header:
            row = rows[table.index(r)]
            if row["honours"]:
                print(textwrap.fill(f"honours: {', '.join(row['honours'])}", width, initial_indent="    ",
                                    subsequent_indent="        "))
            for o in row["options"]:
                print(textwrap.fill(f"{o['name']} ({o['type']}, default {o['default']!r}): {o['help']}", width,
                                    initial_indent="    ", subsequent_indent="        "))
    return EXIT_OK


def cmd_convert(args) -> int:
    from .io import read_instance
    from .io.convert import convert
    inst = read_instance(args.instance, format=args.format, **({"k": args.k} if args.k is not None else {}))
    convert(inst, args.output)
    print(f"wrote {args.output}")
    return EXIT_OK


def cmd_warmup(args) -> int:
    """Compile the Numba kernels of the families into the user's cache (:func:`solvopt.warmup.warmup`)."""
    from .warmup import warmup
    report = warmup(args.family or None, progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(report, default=str))
        return EXIT_OK
    rows = []
    for name, entry in report.items():
        errors = sum("error" in s for s in entry.get("solves", {}).values())
        state = ("skipped" if "skipped" in entry else "cached" if entry.get("cached") else "compiled")
        rows.append([name, state, str(len(entry.get("kernels", {}))), f"{entry.get('compile_time', 0.0):.1f}",
                     f"{entry.get('seconds', 0.0):.1f}", str(errors)])
    _print_table(rows, ("family", "state", "kernels", "compile_s", "time_s", "failed_solves"))
    return EXIT_OK


# --- parser --------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="solvopt", description="Solve optimization instances with solvopt.")
    p.add_argument("--version", action="version", version=f"solvopt {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("solve", help="solve one or more instance files",
                       description="Solve instance files; the family is detected from each file. "
                                   "Common options first, then each family's own flags.")
    s.add_argument("instances", nargs="+", metavar="INSTANCE")
    s.add_argument("--method", "-m", help="solver method (see `solvopt methods`); default: the family's default")
    s.add_argument("--family", help="override the detected problem family")
    s.add_argument("--format", help="override the detected file format")
    s.add_argument("--time-limit", dest="time_limit", type=_positive_float, help="seconds per instance")
    s.add_argument("--gap", type=_nonneg_float, help="relative gap to stop at (default 1e-6)")
    s.add_argument("--abs-gap", dest="abs_gap", type=_nonneg_float, help="absolute gap to stop at (default 1e-9)")
    s.add_argument("--node-limit", dest="node_limit", type=_nonneg_int, help="branch-and-bound node limit")
    s.add_argument("--seed", type=_nonneg_int)
    s.add_argument("--threads", type=_positive_int)
    s.add_argument("--device", choices=("auto", "cpu", "gpu"))
    s.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress lines on stderr (default: when stderr is a terminal)")
    s.add_argument("--solver-option", dest="solver_option", action="append", metavar="NAME=VALUE",
                   help="an option of the method (repeatable), typed by its schema (`solvopt methods --verbose`), "
                        "e.g. presolve=off; for HiGHS, SCIP and Gurobi any other NAME is the backend's own "
                        "parameter (mip_rel_gap=1e-4, limits/gap=0.01, MIPFocus=1)")
    s.add_argument("--json", action="store_true", help="one JSON object per instance on stdout")
    s.add_argument("--out", metavar="DIR",
                   help="write each result to DIR/<name>.json (plain JSON; plus <name>.sol for split routes)")
    s.add_argument("--workers", type=_positive_int, metavar="N",
                   help="solve on a dask LocalCluster of N one-thread worker processes (extra 'dist'): several "
                        "instances run as tasks, one instance fans its scenario chunks out")
    s.add_argument("--scheduler", metavar="ADDRESS", help="solve on the dask cluster of this scheduler (tcp://host:8786)")
    _add_family_groups(s)
    s.set_defaults(func=cmd_solve)

    i = sub.add_parser("info", help="what was detected in an instance file, and its size")
    i.add_argument("instances", nargs="+", metavar="INSTANCE")
    i.add_argument("--format")
    i.add_argument("--k", type=int, help="number of hyperplanes of a k-HC point file (default: its '# k=K' line)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_info)

    m = sub.add_parser("methods", help="list the registered solvers and whether they can run here")
    m.add_argument("--family")
    m.add_argument("--verbose", "-v", action="store_true", help="each method's options")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_methods)

    c = sub.add_parser("convert", help="convert an instance to another format (by the output's extension)")
    c.add_argument("instance")
    c.add_argument("output")
    c.add_argument("--format")
    c.add_argument("--k", type=int, help="number of hyperplanes of a k-HC point file (default: its '# k=K' line)")
    c.set_defaults(func=cmd_convert)

    w = sub.add_parser("warmup", help="compile the Numba kernels into the user's cache (for cold workers)",
                       description="Solve each family's small scale cases with every method they list, so that "
                                   "every Numba kernel is compiled into the on-disk cache once; later processes "
                                   "(dask workers included) load them instead of compiling.")
    w.add_argument("--family", action="append", metavar="F", help="only this family (repeatable; default: all)")
    w.add_argument("--json", action="store_true", help="the full report as JSON")
    w.set_defaults(func=cmd_warmup)
    return p


def _add_family_groups(parser: argparse.ArgumentParser) -> None:
    """One argument group per family (a flag several families declare goes in a group naming them all)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for name, decls in family_flags().items():
        fams = [f.name for f, _ in decls]
        if len({p.type for _, p in decls}) > 1:  # families disagree: the first declaration wins the flag
            decls = [d for d in decls if d[1].type is decls[0][1].type]
            fams = [f.name for f, _ in decls]
        title = ", ".join(fams)
        if title not in groups:
            groups[title] = parser.add_argument_group(f"{title} flags" if len(fams) > 1 else f"{title} flags")
        first = decls[0][1]
        helps = [f"{f.name}: {p.help}" for f, p in decls] if len({p.help for _, p in decls}) > 1 else [first.help]
        groups[title].add_argument(first.flag, dest=name, type=first.type, metavar=first.metavar,
                                   help="; ".join(helps).replace("%", "%%"))


def _positive_int(text: str) -> int:
    v = _int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return v


def _nonneg_int(text: str) -> int:
    v = _int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


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
    """The ``solvopt`` command; ``argv=None`` means this process is the command itself."""
    _started_stdout.append(sys.stdout)
    try:
        rc = _run(argv)
    finally:
        out = _started_stdout.pop()
    if argv is None and _abandoned_calls():
        # A stopped run left a third-party call running in a daemon thread: ending the
        # interpreter around it can abort the process (SIGABRT), so end it now, with its code.
        out.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


def _abandoned_calls() -> bool:
    """True while a third-party call abandoned by a stop still runs in its thread."""
    return any(t.name == ABANDONED_THREAD_NAME and t.is_alive() for t in threading.enumerate())


def _run(argv: Sequence[str] | None) -> int:
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
