"""One run loop's bookkeeping for every equilibrium method: best certified iterate, history, stops, status.

Each method iterates, and every few iterations certifies its point (exact best responses, see
:mod:`solvopt.games.exploitability`) and calls :meth:`EquilibriumRun.record`. The run keeps the
iterate of smallest certified exploitability, the metric history (iteration, seconds,
exploitability), and decides when to stop: the exploitability tolerance, the iteration limit, the
time limit, Ctrl-C. :meth:`EquilibriumRun.result` settles the status through the one gap rule with
the trivial certified bound 0 (exploitability is never negative), in the frame normalised by the
game's payoff scale ``scale`` (``settle(..., scale=scale)``): OPTIMAL only when the certified
exploitability / scale — and the second measure, the VE gap / scale, where a method certifies
one — is within the spine's default absolute tolerance (1e-9), FEASIBLE_WITHIN_GAP when the
user's looser ``tolerance`` (also relative to ``scale``) stopped it, the limit's termination
otherwise. So multiplying every payoff by 10^k changes neither the status nor the point. Where
the scale is measured at a point (``scale_at``, the pseudo-games), each point is judged against
min(``scale``, its own scale), so a start that inflates ``scale`` cannot loosen a status.

Stops reach every inner call: a method runs inside :meth:`EquilibriumRun.guard`, which hands the
deadline to :mod:`solvopt.games.projection` (every HiGHS call gets the time left and the
interrupt callback; inner loops call ``check_stop``) and turns the resulting ``Stopped`` into
the run's stop reason.
"""
from __future__ import annotations

import contextlib
import time

from solvopt.core.interrupt import stop_reason
from solvopt.core.progress import Progress
from solvopt.core.result import Result, Termination
from solvopt.core.status import settle

from .exploitability import Exploitability
from .projection import Stopped, stopping_at

COMMON_HONOURS = frozenset({"iteration_limit"})
FIRST_GRACE = 0.25     # seconds the first certificate may run past a shorter time limit


class EquilibriumRun:
    def __init__(self, options, tolerance: float, scale: float = 1.0, scale_at=None):
        self.options = options
        self.tolerance = tolerance * scale        # absolute, in utility units
        self.scale = scale                        # the payoff scale: statuses are settled on value / scale
        # scale_at(point) <= scale: the scale a point is judged against, where it may differ from the start's
        # (the pseudo-games' UnitFrame.status_scale); None: every point against ``scale``
        self.scale_at = scale_at
        self.best_scale = scale                   # the scale of the best point
        self.start = time.perf_counter()
        self.deadline = None if options.time_limit is None else self.start + options.time_limit
        self.best_point = None
        self.best: Exploitability | None = None
        self.best_score: float | None = None      # set with best
        self.best_also: float | None = None
        self.history: list[tuple[float, ...]] = []  # (iteration, seconds, exploitability[, also])
        self.stopped: Termination | None = None
        self.iterations = 0
        # progress lines on stderr (the --progress option): one at the start, then at most one a second
        self.progress = Progress(getattr(options, "progress", None))
        self.progress("games: run started (certified exploitability every few iterations)", force=True)

    def record(self, iteration: int, point, expl: Exploitability, also: float | None = None) -> bool:
        """Keep ``point`` if it is the best certified so far; True when within the tolerance.

        ``also`` is a second certified measure that must reach the tolerance too (the VE gap of
        the variational methods: exploitability 0 alone makes any GNE, not the VE).
        """
        self.iterations = iteration
        score = expl.value if also is None else max(expl.value, also)
        self.history.append((iteration, time.perf_counter() - self.start, expl.value)
                            + (() if also is None else (also,)))
        if expl.certified and (self.best_score is None or score < self.best_score):
            self.best, self.best_point, self.best_score, self.best_also = expl, point, score, also
            self.best_scale = self.scale if self.scale_at is None else min(self.scale, self.scale_at(point))
        line = (f"iteration {iteration}: exploitability {expl.value:.3e}"
                + ("" if also is None else f", VE gap {also:.3e}"))
        self.options.emit(line)
        self.progress(line)
        return self.best_score is not None and self.best_score <= self.best_tolerance()

    def best_tolerance(self) -> float:
        """The absolute tolerance of the best point: the relative one times the scale it is judged against."""
        return self.tolerance if self.best_scale == self.scale else self.tolerance / self.scale * self.best_scale

    def first_deadline(self):
        """The deadline of the first certificate: the run's, but at least FIRST_GRACE seconds after the
        start, so even a tiny time limit returns a certified point (Ctrl-C still stops it at once)."""
        return None if self.deadline is None else max(self.deadline, self.start + FIRST_GRACE)

    def rescale(self, scale: float) -> None:
        """Set the payoff scale once the method knows it (the tolerance is relative to it)."""
        self.tolerance = self.tolerance / self.scale * scale
        self.scale = self.best_scale = scale

    @contextlib.contextmanager
    def guard(self):
        """Run a method's loop inside: inner calls honour the deadline and Ctrl-C (see the module doc)."""
        try:
            with stopping_at(self.deadline):
                yield
        except Stopped as stop:
            self.stopped = stop.reason

    def should_stop(self, iteration: int) -> bool:
        """True (and the reason kept) when the iteration limit, the deadline or Ctrl-C says stop."""
        limit = self.options.iteration_limit
        if limit is not None and iteration >= limit:
            self.stopped = Termination.ITERATION_LIMIT
        else:
            self.stopped = stop_reason(self.deadline)
        return self.stopped is not None

    def result(self, solution: dict, **stats) -> Result:
        """The Result of the best certified iterate (``solution`` already built from ``best_point``)."""
        best, score = self.best, self.best_score       # both None, or both set
        value = best.value if best is not None else None
        scale, tolerance = (self.scale, self.tolerance) if best is None else (self.best_scale, self.best_tolerance())
        done = score is not None and score <= tolerance
        # OPTIMAL needs every certified measure (the VE gap too) within the default tolerance
        term, status, _ = settle(score, 0.0, has_solution=best is not None, scale=scale,
                                 stopped=None if done else (self.stopped or Termination.ITERATION_LIMIT))
        out = dict(stats)
        out.update(iterations=self.iterations, exploitability_lower=best.lower if best is not None else None,
                   history=[list(h) for h in self.history], tolerance=tolerance)
        if self.scale_at is not None:             # the scale the status was settled on, and the start's
            out.update(payoff_scale=scale, start_payoff_scale=self.scale)
        if best is not None:
            out["per_player_exploitability"] = best.per_player
            if self.best_also is not None:
                out["ve_gap"] = self.best_also
            if scale != 1.0:
                out["relative_exploitability"] = best.value / scale
        # no relative gap: against the bound 0 it is 100% for any exploitability > 0 and says nothing
        return Result(term, status, objective=value, bound=0.0, gap=None, solution=solution, stats=out,
                      guarantee="objective is a certified upper bound on the exploitability of the returned point "
                                "(exact best responses; 0 only at an equilibrium)")
