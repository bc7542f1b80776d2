"""Model.to_highspy, the array handover to HiGHS and the HiGHS session utilities, against independent references."""
from __future__ import annotations

import inspect
import subprocess
import sys

import highspy
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from solvopt.core import ModelError
from solvopt.core.errors import BackendUnavailable
from solvopt.dsl import Model, StandardForm
from solvopt.dsl.highs_export import load_standard_form, new_highs


def _run(h):
    h.run()
    return h.getModelStatus(), h.getInfo().objective_function_value, np.asarray(h.getSolution().col_value)


def test_to_highspy_loads_the_model_linprog_solves():
    rng = np.random.default_rng(5)
    n1, n2 = 4, 6
    cost = rng.uniform(1, 10, size=(n1, n2))
    supply = rng.uniform(5, 10, size=n1)
    demand = rng.uniform(1, 4, size=n2)
    m = Model()
    x = m.add_var(shape=(n1, n2), lb=0, name="x")
    m.add(x.sum(axis=1) <= supply, name="supply")
    m.add(x.sum(axis=0) >= demand, name="demand")
    m.minimize((cost * x).sum() + 3.0)
    h = m.to_highspy()
    assert isinstance(h, highspy.Highs)
    assert (h.getNumCol(), h.getNumRow(), h.getNumNz()) == (n1 * n2, n1 + n2, 2 * n1 * n2)
    status, obj, col = _run(h)
    A_ub = np.vstack([np.kron(np.eye(n1), np.ones(n2)), -np.kron(np.ones(n1), np.eye(n2))])
    ref = linprog(cost.ravel(), A_ub=A_ub, b_ub=np.concatenate([supply, -demand]), bounds=(0, None), method="highs")
    assert status == highspy.HighsModelStatus.kOptimal
    assert obj == pytest.approx(ref.fun + 3.0, rel=1e-9)
    assert m.solve().objective == pytest.approx(obj, rel=1e-9)


def test_to_highspy_keeps_sense_integrality_and_duplicate_terms():
    # x appears twice in one row (summed), binaries stay binary, maximisation stays maximisation
    m = Model()
    y = m.add_var(shape=3, vtype="binary", name="y")
    z = m.add_var(lb=0, ub=2.5, vtype="integer", name="z")
    m.add(y[0] + y[0] + y[1] + z <= 3.2, name="cap")
    m.maximize(np.array([3.0, 2.0, 1.0]) @ y + z)
    h = m.to_highspy()
    assert h.getNumNz() == 3  # y0 twice became one entry of 2
    lp = h.getLp()
    assert list(lp.integrality_) == [highspy.HighsVarType.kInteger] * 4
    status, obj, col = _run(h)
    # brute force over y in {0,1}^3, z in {0,1,2}
    best = max(3 * a + 2 * b + c + k for a in (0, 1) for b in (0, 1) for c in (0, 1) for k in (0, 1, 2)
               if 2 * a + b + k <= 3.2)
    assert obj == pytest.approx(best)


def test_to_highspy_carries_the_quadratic_objective():
    t = np.array([0.5, -1.0, 2.0])
    m = Model()
    x = m.add_var(shape=3, lb=-5, name="x")
    m.add(x.sum() == 1)
    m.minimize(((x - t) ** 2).sum())
    status, obj, col = _run(m.to_highspy())
    proj = t - (t.sum() - 1) / 3
    np.testing.assert_allclose(col, proj, atol=1e-6)
    assert obj == pytest.approx(((proj - t) ** 2).sum(), abs=1e-7)


def test_to_highspy_prints_nothing_on_stdout():
    code = ("import numpy as np\nfrom solvopt.dsl import Model\nm = Model()\nx = m.add_var(shape=3, name='x')\n"
            "m.add(x.sum() <= 1)\nm.maximize(x.sum())\nh = m.to_highspy()\nh.run()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""


def test_empty_and_rowless_models_load():
    m = Model()
    assert m.to_highspy().getNumCol() == 0
    m = Model()
    x = m.add_var(shape=2, lb=1, ub=3, name="x")
    m.minimize(x.sum())
    h = m.to_highspy()
    assert h.getNumRow() == 0
    status, obj, col = _run(h)
    assert obj == pytest.approx(2.0)


def test_load_standard_form_takes_row_wise_matrices_without_changing_them():
    # the MPS reader hands CSR matrices, possibly with duplicates: summed in a copy, the caller's kept
    A = sp.csr_matrix((np.array([1.0, 1.0, 2.0]), np.array([0, 0, 1]), np.array([0, 2, 3])), shape=(2, 2))
    A.has_canonical_format = False
    before = A.data.copy()
    sf = StandardForm(c=np.array([-1.0, -1.0]), A=A, row_lower=np.full(2, -np.inf), row_upper=np.array([4.0, 2.0]),
                      col_lower=np.zeros(2), col_upper=np.full(2, np.inf), integrality=np.zeros(2, dtype=np.int8))
    h = new_highs()
    load_standard_form(h, sf)
    status, obj, col = _run(h)
    np.testing.assert_array_equal(A.data, before)
    assert obj == pytest.approx(-3.0)   # 2 x0 <= 4, 2 x1 <= 2


def test_highs_refuses_quadratic_constraints_on_load():
    m = Model()
    z = m.add_var(shape=2, lb=-1, ub=1, name="z")
    m.add((z ** 2).sum() >= 1)
    with pytest.raises(ModelError, match="quadratic constraints"):
        m.to_highspy()


# --- the HiGHS session utilities: one definition, in solvopt.dsl.highs_export ----------------------
def test_highs_session_utilities_are_defined_once():
    from solvopt.dsl import highs_export
    from solvopt.khc import node_lp
    from solvopt.lp import highs_session
    for name in ("highspy_module", "new_highs", "watch_interrupt", "was_interrupted"):
        assert not hasattr(highs_session, name), name                 # defined once, not re-exported
    assert node_lp.highspy_module is highs_export.highspy_module
    assert "import highspy\n" not in inspect.getsource(highs_session)
    assert "import highspy\n" not in inspect.getsource(node_lp)


def test_highspy_module_names_what_needs_it(monkeypatch):
    from solvopt.dsl.highs_export import highspy_module
    monkeypatch.setitem(sys.modules, "highspy", None)   # import highspy raises ImportError
    with pytest.raises(BackendUnavailable, match="method 'sbb' needs highspy.*pip install highspy"):
        highspy_module("method 'sbb'")
    with pytest.raises(BackendUnavailable, match="highspy is not installed"):
        highspy_module()
