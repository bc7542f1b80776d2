"""The spine: solver registry dispatch, family discovery (lazy, guarded), option schemas, the gap rule,
stop requests, chunks."""
from __future__ import annotations

import math
import textwrap
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.cli import main
from solvopt.core import family as fam_mod
from solvopt.core import registry
from solvopt.core.chunks import Z95, ChunkPlan, ScenarioStats, run_chunks
from solvopt.core.errors import BackendUnavailable, ModelError
from solvopt.core.interrupt import catching_sigint, request_stop, stop_requested
from solvopt.core.options import Option, SolveOptions, parse_options
from solvopt.core.registry import Availability, Solver
from solvopt.core.result import Result, SolutionStatus, Termination
from solvopt.core.status import settle


# --- registry dispatch: default, unknown and unavailable methods -----------------------------
class _Echo(Solver):
    family = "_test"
    name = "echo"
    options = (Option("value", float, 1.0),)
    default = True

    def solve(self, compiled, options):
        return Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=compiled * options.extra["value"])


class _Missing(Solver):
    family = "_test"
    name = "missing"
    install_hint = "pip install something"

    @classmethod
    def available(cls):
        return Availability.NOT_INSTALLED


@pytest.fixture
def test_family():
    registry.register(_Echo)
    registry.register(_Missing)
    yield
    registry._REGISTRY.pop(("_test", "echo"))
    registry._REGISTRY.pop(("_test", "missing"))


def test_registry_dispatch_default_unknown_and_unavailable(test_family):
    assert registry.get_solver("_test") is _Echo
    r = registry.solve("_test", 2.0, value=3.0)
    assert r.objective == 6.0 and r.family == "_test" and r.method == "echo" and r.stats["wall_time"] >= 0
    with pytest.raises(ModelError, match="unknown method 'nope'.*echo"):
        registry.get_solver("_test", "nope")
    with pytest.raises(BackendUnavailable, match="pip install something"):
        registry.solve("_test", 1.0, method="missing")
    with pytest.raises(ModelError, match="unknown option"):
        registry.solve("_test", 1.0, colour="red")
    with pytest.raises(ModelError, match="unknown family|no solvers"):
        registry.get_solver("_no_such_family")


# --- a fake family whose solver module fails to import -----------------------------------------
@pytest.fixture
def fake_families(tmp_path, monkeypatch):
    pkg = tmp_path / "fakefam"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "broken_family.py").write_text(textwrap.dedent("""
        from solvopt.core.family import Family, Param
        FAMILY = Family(name="_broken", description="a family whose optional dependency is missing",
                        solver_modules=("fakefam.broken_solvers",),
                        params=(Param("widgets", int, "how many widgets"),))
    """))
    (pkg / "broken_solvers.py").write_text("import no_such_optional_dependency_xyz\n")
    (pkg / "bad_descriptor.py").write_text("raise RuntimeError('descriptor exploded')\n")
    (pkg / "ok_family.py").write_text(textwrap.dedent("""
        from solvopt.core.family import Family
        FAMILY = Family(name="_okfake", description="a working fake family", solver_modules=("fakefam.ok_solvers",))
    """))
    (pkg / "ok_solvers.py").write_text(textwrap.dedent("""
        from solvopt.core.registry import Solver, register
        from solvopt.core.options import Option
        from solvopt.core.result import Result, Termination, SolutionStatus

        @register
        class Twice(Solver):
            family = "_okfake"
            name = "twice"
            default = True
            honours = frozenset({"rel_gap"})
            options = (Option("factor", float, 2.0, "multiplier"),)

            def solve(self, compiled, options):
                return Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=compiled * options.extra["factor"])

        @register
        class Once(Solver):
            family = "_okfake"
            name = "once"
            honours = frozenset()

            def solve(self, compiled, options):
                return Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=compiled)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    fam_mod.discover()
    fam_mod.discover(("fakefam.broken_family", "fakefam.bad_descriptor", "fakefam.ok_family"))
    yield
    for name in ("_broken", "_okfake"):
        fam_mod._FAMILIES.pop(name, None)
    fam_mod._BROKEN[:] = [s for s in fam_mod._BROKEN if not s.module.startswith("fakefam")]
    for key in [k for k in registry._REGISTRY if k[0] == "_okfake"]:
        registry._REGISTRY.pop(key)
    import sys
    for name in [m for m in sys.modules if m.startswith("fakefam")]:
        del sys.modules[name]


def test_a_family_whose_import_fails_is_listed_and_breaks_nothing(fake_families, capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "_broken" in out and "import failed" in out and "no_such_optional_dependency_xyz" in out
    assert "fakefam.bad_descriptor" in out and "descriptor exploded" in out
    assert "khc" in out and "bnb" in out and "_okfake" in out      # everything else still listed
    from solvopt.core.errors import BackendUnavailable
    with pytest.raises(BackendUnavailable, match="no_such_optional_dependency_xyz"):
        registry.get_solver("_broken")
    assert registry.get_solver("_okfake").name == "twice"
    assert registry.solve("_okfake", 3.0).objective == 6.0


def test_options_typed_and_unhonoured_options_refused(fake_families):
    with pytest.raises(ModelError, match="factor.*must be a number"):
        registry.solve("_okfake", 3.0, factor="big")
    with pytest.raises(ModelError, match="unknown option 'colour'"):
        registry.solve("_okfake", 3.0, colour="red")
    with pytest.raises(ModelError, match="'rel_gap' does not apply to method _okfake/once; it applies to: twice"):
        registry.solve("_okfake", 3.0, method="once", rel_gap=0.1)
    with pytest.raises(ModelError, match="'threads' does not apply.*no _okfake method takes it"):
        registry.solve("_okfake", 3.0, threads=2)
    r = registry.solve("_okfake", 3.0, factor=3, seed=5, time_limit=10)   # universal options always accepted
    assert r.objective == 9.0
    assert r.options["factor"] == 3.0 and r.options["seed"] == 5 and r.versions["solvopt"]


def test_methods_fits_100_columns_and_verbose_lists_options(capsys):
    assert main(["methods"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(line) for line in lines) <= 100
    assert main(["methods", "--family", "khc", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "restarts" in out and max(len(line) for line in out.splitlines()) <= 100


def test_every_registered_solver_declares_its_schema():
    for s in registry.solvers():
        if s.family.startswith("_"):
            continue
        assert isinstance(s.honours, frozenset), f"{s.family}/{s.name}: honours must be a frozenset"
        assert not getattr(s, "extra_options", None), f"{s.family}/{s.name} still uses the untyped extra_options"
        assert all(isinstance(o, Option) for o in s.options)


# --- CLI flags routed by descriptors ------------------------------------------------------------
def test_a_flag_of_another_family_is_refused_by_name(capsys):
    assert main(["solve", "instances/khc/sr_10_2_2_1022.dat", "--fleet", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "sr_10_2_2_1022.dat" in err and "--fleet does not apply to khc" in err and "cvrp" in err
    assert main(["solve", "instances/cvrp/X-n101-k25.vrp", "--k", "2"]) == 1
    err = capsys.readouterr().err
    assert "--k does not apply to cvrp" in err and "khc" in err


def test_solver_flag_a_method_does_not_take_names_the_methods_that_do(capsys):
    assert main(["solve", "instances/khc/sr_10_2_2_1022.dat", "--method", "bnb", "--norms", "2,inf"]) == 1
    err = capsys.readouterr().err
    assert "--norms does not apply to method 'bnb'" in err and "sbb" in err


def test_solve_help_has_one_group_per_family(capsys):
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    out = capsys.readouterr().out
    for title in ("khc flags", "cvrp", "irp"):
        assert title in out


def test_every_family_model_is_listed_by_its_family():
    """Each FamilyModel class in solvopt.dsl is in its family's ``models``, and each listed class
    loads and (where it says) belongs to that family: what a batch reads to place a model."""
    import importlib
    import inspect
    import pkgutil

    import solvopt.dsl
    from solvopt.dsl.family import FamilyModel
    listed = {f.name: set(f.models) for f in fam_mod.families()}
    for info in pkgutil.iter_modules(solvopt.dsl.__path__, "solvopt.dsl."):
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if (inspect.isclass(cls) and issubclass(cls, FamilyModel) and cls.__module__ == info.name
                    and not name.startswith("_") and cls is not FamilyModel):
                assert f"{info.name}:{name}" in listed[cls.family], f"{name} missing from {cls.family}'s models"
    for family, targets in listed.items():
        for target in targets:
            cls = fam_mod.load_object(target)
            assert getattr(cls, "family", family) == family, target


# --- the gap rule ---------------------------------------------------------------------------------
@pytest.mark.parametrize("objective, bound, stopped, expect", [
    (10.0, 10.0, None, Termination.OPTIMAL),
    (10.0, 10.0 - 5e-6, None, Termination.OPTIMAL),                    # rel 5e-7
    (10.0, 9.9, None, Termination.FEASIBLE_WITHIN_GAP),                # stopped by a looser user gap
    (1e-12, 0.0, None, Termination.OPTIMAL),                           # abs 1e-12 <= 1e-9
    (10.0, 9.0, Termination.TIME_LIMIT, Termination.TIME_LIMIT),
    (10.0, 10.0, Termination.TIME_LIMIT, Termination.OPTIMAL),         # closed anyway
    (10.0, 9.0, Termination.INTERRUPTED, Termination.INTERRUPTED),
    (None, None, Termination.INFEASIBLE, Termination.INFEASIBLE),
    (-math.inf, None, Termination.UNBOUNDED, Termination.UNBOUNDED),
])
def test_settle(objective, bound, stopped, expect):
    term, status, gap = settle(objective, bound, has_solution=objective is not None and math.isfinite(objective),
                               stopped=stopped)
    assert term is expect
    assert (status is SolutionStatus.OPTIMAL) == (term is Termination.OPTIMAL)
    if term in (Termination.UNBOUNDED, Termination.INFEASIBLE):
        assert status is SolutionStatus.NONE


def test_settle_maximisation_sense():
    assert settle(10.0, 10.5, has_solution=True, sense=-1)[0] is Termination.FEASIBLE_WITHIN_GAP
    assert settle(10.0, 10.0 + 1e-8, has_solution=True, sense=-1)[0] is Termination.OPTIMAL


# --- stop requests ----------------------------------------------------------------------------------
class _Looper(Solver):
    family = "_loop"
    name = "loop"
    honours = frozenset()

    def solve(self, compiled, options):
        best = 0
        while not options.interrupted():
            best += 1
            time.sleep(0.001)
        term, status, gap = settle(float(best), 0.0, has_solution=True, stopped=Termination.INTERRUPTED)
        return Result(term, status, objective=float(best), bound=0.0, gap=gap)


class _Sleeper(Solver):
    family = "_loop"
    name = "sleeper"
    honours = frozenset()

    def solve(self, compiled, options):
        time.sleep(30)  # never polls: a second stop raises KeyboardInterrupt inside
        raise AssertionError("not interrupted")


def test_stop_request_returns_the_best_so_far():
    timer = threading.Timer(0.3, request_stop)
    timer.start()
    start = time.perf_counter()
    r = _Looper.run(None)
    assert time.perf_counter() - start < 5
    assert r.termination is Termination.INTERRUPTED and r.objective > 0 and r.bound == 0.0


def test_sigint_twice_interrupts_code_that_does_not_poll():
    import os
    import signal

    def send():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)   # Python's default, or SIG_IGN when started in the background
    threading.Timer(0.3, send).start()
    r = _Sleeper.run(None)   # no KeyboardInterrupt escapes
    assert r.termination is Termination.INTERRUPTED and r.solution_status is SolutionStatus.NONE
    assert signal.getsignal(signal.SIGINT) is before       # the handler the run found is back


def test_a_new_solve_starts_without_a_stale_stop_request():
    with catching_sigint():
        request_stop()
        assert stop_requested()
    with catching_sigint():
        assert not stop_requested()


# --- chunks and mergeable statistics ----------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=200), st.integers(1, 50), st.integers(1, 7))
def test_scenario_stats_merge_equals_one_pass(values, size, stride):
    values = np.asarray(values)
    plan = ChunkPlan(values.size, size)
    run = run_chunks(plan, lambda i, lo, hi: ScenarioStats.of(values[lo:hi], lo, stride))
    whole = ScenarioStats.of(values, 0, stride)
    assert run.done == values.size and run.stopped is None and run.chunks == plan.count
    assert run.stats.mean[0] == pytest.approx(values.mean(), rel=1e-9, abs=1e-6)
    if values.size > 1:
        assert run.stats.variance() == pytest.approx(values.var(ddof=1), rel=1e-6, abs=1e-3)
    np.testing.assert_array_equal(run.stats.sample(), values[::stride])
    assert run.stats.interval() == pytest.approx(whole.interval(), rel=1e-9, abs=1e-6)


def test_scenario_stats_rows_infinite_and_interval_constant():
    v = np.array([[1.0, 2.0, np.inf, 3.0], [4.0, 4.0, 4.0, 4.0]])
    s = ScenarioStats.of(v)
    assert s.count.tolist() == [3, 4] and s.infinite.tolist() == [1, 0]
    assert s.row_means()[0] == np.inf and s.row_means()[1] == 4.0
    summary = s.summary(0)
    se = math.sqrt(1.0 / 3)
    assert summary["ci95"] == pytest.approx([2 - Z95 * se, 2 + Z95 * se])


def test_run_chunks_stops_at_the_deadline_and_on_request():
    plan = ChunkPlan(100, 10)
    run = run_chunks(plan, lambda i, lo, hi: (time.sleep(0.01), ScenarioStats.of(np.ones(hi - lo), lo))[1],
                     deadline=time.perf_counter())
    assert run.stopped is Termination.TIME_LIMIT and run.done == 10
    with catching_sigint():
        def chunk(i, lo, hi):
            if i == 2:
                request_stop()
            return ScenarioStats.of(np.ones(hi - lo), lo)
        run = run_chunks(plan, chunk)
    assert run.stopped is Termination.INTERRUPTED and run.done == 30


def test_chunk_plan_rejects_bad_sizes():
    with pytest.raises(ModelError):
        ChunkPlan(0, 10)
    with pytest.raises(ModelError):
        ChunkPlan(10, 0)


def test_parse_options_types():
    schema = (Option("n", int, 3), Option("mode", str, "a", choices=("a", "b")), Option("flag", bool, False))
    assert parse_options({"n": 4, "mode": "b", "flag": True}, schema).extra == {"n": 4, "mode": "b", "flag": True}
    for bad in ({"n": 2.5}, {"mode": "c"}, {"flag": "yes"}, {"n": True}):
        with pytest.raises(ModelError):
            parse_options(bad, schema)
    with pytest.raises(ModelError):
        SolveOptions(threads=True)


def test_bad_common_option_values_are_model_errors():
    for bad in (dict(seed=-1), dict(log=1), dict(progress="yes")):
        with pytest.raises(ModelError):
            SolveOptions(**bad)
    assert SolveOptions(seed=2 ** 64 - 1).seed == 2 ** 64 - 1


def test_none_options_and_cpu_devices_are_accepted_by_cpu_only_methods(fake_families):
    assert registry.solve("_okfake", 3.0, method="once", rel_gap=None, device="cpu").objective == 3.0
    assert registry.solve("_okfake", 3.0, method="once", device="auto").objective == 3.0
    with pytest.raises(ModelError, match="'device' does not apply"):
        registry.solve("_okfake", 3.0, method="once", device="gpu")


def test_a_model_without_a_method_gets_its_own_default_with_all_its_options():
    """A games model names its default method; ``solve()`` routes there, so that method's own
    options (here extragradient's ``step`` and ``start``) are accepted, where the family-level
    ``auto`` takes only the shared ones."""
    from test_games_static import harker

    from solvopt.core.errors import ModelError

    game = harker()
    assert game.solver().name == "extragradient" == game.default_method
    result = game.solve(step=0.5, start=[0.0, 0.0], iteration_limit=50)
    assert result.method == "extragradient"
    with pytest.raises(ModelError, match="step"):
        game.solve("auto", step=0.5)
