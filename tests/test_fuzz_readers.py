"""Fuzzing every reader: a mutated instance file is read, or refused with one SolvoptError; never anything else.

Each shipped instance format (transport ``.npz``, games JSON with the Markov kinds, k-HC AMPL
``.dat`` and point files, VRPLIB, Archetti IRP, MPS and LP) is mutated by hypothesis: truncation,
byte flips, inserted and deleted bytes, numbers replaced by huge, tiny, NaN, infinite or non-numeric
tokens; JSON also by wrong types, dropped and duplicated items, ragged rows, deep nesting; ``.npz``
also by array changes (dtype, shape, NaN, scale, missing and extra arrays). The reader (and, for
games and transport, the model built from the instance) must return or raise a ``SolvoptError``.

Files that once escaped as another exception are kept in ``tests/fuzz_cases/``; each is checked
through the CLI: one line on stderr, exit 1, the expected words.
"""
from __future__ import annotations

import copy
import io
import json
import os
import re
import signal
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from solvopt.cli import main
from solvopt.core.errors import SolvoptError
from solvopt.core.family import get_family
from solvopt.io import read_instance

SAMPLES = REPO / "instances"
CASES = Path(__file__).resolve().parent / "fuzz_cases"
# derandomized (the same examples in every run) and not shrunk: a failing example is reported as drawn
FUZZ = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

MARKOV_GAME = {
    "kind": "markov_pseudo_game", "name": "two_player", "players": ["a", "b"], "action_sizes": [1, 1],
    "linear": [[[1.0, 0.5], [2.0, 0.0]], [[0.5, 1.0], [0.0, 2.0]]],
    "quadratic": [[[[-1.0, 0.0], [0.0, 0.0]], [[-1.0, 0.0], [0.0, 0.0]]],
                  [[[0.0, 0.0], [0.0, -1.0]], [[0.0, 0.0], [0.0, -1.0]]]],
    "lower": 0, "upper": [[1, 1], [None, 2]], "shared_matrix": [[[1.0, 1.0]], [[1.0, 1.0]]],
    "shared_rhs": [[1.5], [2.0]], "transitions": [[0.5, 0.5], [0.3, 0.7]], "discount": 0.5, "initial": [0.5, 0.5]}


def _games_seeds() -> list[bytes]:
    return [p.read_bytes() for p in sorted((SAMPLES / "games").glob("*.json"))] + [json.dumps(MARKOV_GAME).encode()]


def _points_seed() -> bytes:
    from solvopt.io import read_instance as read
    pts = read(str(SAMPLES / "khc" / "sr_10_2_2_1022.dat")).data["points"]
    return ("\n".join(",".join(repr(float(v)) for v in row) for row in pts) + "\n").encode()


# format, file extension, reader parameters, seeds
TEXT_FORMATS = {
    "ampl_khc": (".dat", {}, lambda: [(SAMPLES / "khc" / "sr_10_2_2_1022.dat").read_bytes()]),
    "points": (".csv", {"k": 2}, lambda: [_points_seed()]),
    "archetti_irp": (".dat", {}, lambda: [(SAMPLES / "irp" / "abs1n5_1.dat").read_bytes()]),
    "vrplib": (".vrp", {}, lambda: [(SAMPLES / "cvrp" / "X-n101-k25.vrp").read_bytes()]),
    "mps": (".mps", {}, lambda: [(SAMPLES / "lp" / "knapsack.mps").read_bytes()]),
    "lp": (".lp", {}, lambda: [(SAMPLES / "lp" / "production.lp").read_bytes()]),
    "game_json": (".json", {}, _games_seeds),
}
BAD_NUMBERS = ["1e400", "-1e400", "nan", "NaN", "inf", "-Infinity", "1e308", "-1e308", "0", "-1", "-0", "1e-320",
               "99999999999999999999999999", "1.5", "abc", "", "0x10", "1,5"]
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


HIGHS_FORMATS = ("mps", "lp")  # read by HiGHS, which cannot be interrupted: each read runs in a forked child
HANG_SECONDS = 4.0  # HiGHS reads these files (under 1 KiB) in milliseconds


def _read_in_child(path: str, fmt: str, params: dict) -> None:
    """Read ``path`` in a forked child: a SolvoptError or an Instance is fine; another exception or
    no answer within HANG_SECONDS (a reader that never returns) fails."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave at once, whatever happens
        os.close(rfd)
        message = b""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                read_instance(path, format=fmt, **params)
        except SolvoptError:
            pass
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}".encode()[:2000] or b"?"
        os.write(wfd, message)
        os._exit(0)
    os.close(wfd)
    deadline = time.monotonic() + HANG_SECONDS
    try:
        while True:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"the {fmt} reader did not return within {HANG_SECONDS} s")
            time.sleep(0.005)
        message = os.read(rfd, 4096)
    finally:
        os.close(rfd)
    assert not message, message.decode(errors="replace")


def _accepts_or_refuses(data: bytes, fmt: str, ext: str, params: dict, build: bool) -> None:
    """Read ``data`` as ``fmt``: an Instance, or a SolvoptError; anything else fails the test."""
    fd, path = tempfile.mkstemp(suffix=ext, prefix="fuzz_")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if fmt in HIGHS_FORMATS:
            _read_in_child(path, fmt, params)
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # readers warn about what they read on (HiGHS's notes)
            try:
                instance = read_instance(path, format=fmt, **params)
                if build:
                    get_family(instance.family).build_model(instance)
            except SolvoptError as exc:
                assert str(exc).strip(), "an error with no message"
    finally:
        os.unlink(path)


# --- byte and token mutations ---------------------------------------------------------------------
@st.composite
def byte_mutations(draw, seeds: list[bytes]) -> bytes:
    raw = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        if not raw:
            break
        op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "repeat"]))
        i = draw(st.integers(0, len(raw) - 1))
        if op == "truncate":
            raw = raw[:i]
        elif op == "flip":
            raw[i] = draw(st.integers(0, 255))
        elif op == "insert":
            raw[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del raw[i:i + draw(st.integers(1, 64))]
        else:
            raw[i:i] = raw[i:i + draw(st.integers(1, 256))]
    return bytes(raw)


@st.composite
def token_mutations(draw, seeds: list[bytes]) -> bytes:
    raw = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        numbers = list(_NUMBER.finditer(raw))
        if not numbers:
            break
        m = numbers[draw(st.integers(0, len(numbers) - 1))]
        raw = raw[:m.start()] + draw(st.sampled_from(BAD_NUMBERS)).encode() + raw[m.end():]
    return raw


@pytest.mark.parametrize("fmt", sorted(TEXT_FORMATS))
@FUZZ
@given(data=st.data())
def test_text_readers_read_or_refuse_mutated_bytes(fmt, data):
    ext, params, seeds = TEXT_FORMATS[fmt]
    mutated = data.draw(st.one_of(byte_mutations(seeds()), token_mutations(seeds())))
    _accepts_or_refuses(mutated, fmt, ext, params, build=fmt == "game_json")


# --- games JSON: structure-level mutations --------------------------------------------------------
_REPLACEMENTS = st.one_of(
    st.sampled_from([None, True, "x", {}, [], [[1, 2], [3]], [[[[[[[1]]]]]]], float("nan"), float("inf"), -float("inf"),
                     1e308, -1e308, 10 ** 400, -5, 0, 1e-320, 3.5, [1, "a"], {"kind": "ces"}]),
    st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=5))


def _locations(obj, where=()):
    yield where
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _locations(value, where + (key,))


@st.composite
def json_mutations(draw) -> bytes:
    doc = json.loads(draw(st.sampled_from(_games_seeds())))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(list(_locations(doc))))
        parent, key = None, None
        target = doc
        for k in where:
            parent, key, target = target, k, target[k]
        op = draw(st.sampled_from(["replace", "drop", "duplicate", "ragged", "nest"]))
        if op == "drop" and isinstance(target, (list, dict)) and target:
            if isinstance(target, list):
                target.pop(draw(st.integers(0, len(target) - 1)))
            else:
                target.pop(draw(st.sampled_from(sorted(target))))
        elif op == "duplicate" and isinstance(target, list) and target:
            target.append(target[0])
        elif op == "ragged" and isinstance(target, list) and target and isinstance(target[0], list) and target[0]:
            target[0].pop()
        elif op == "nest":
            value = target
            for _ in range(draw(st.integers(1, 200))):
                value = [value]
            doc = value if parent is None else doc
            if parent is not None:
                parent[key] = value
        else:
            value = copy.deepcopy(draw(_REPLACEMENTS))  # the strategy's own objects stay as they are
            if parent is None:
                doc = value
            else:
                parent[key] = value
    return json.dumps(doc).encode()


@FUZZ
@given(mutated=json_mutations())
def test_games_json_reader_and_model_read_or_refuse_mutated_documents(mutated):
    _accepts_or_refuses(mutated, "game_json", ".json", {}, build=True)


# --- transport .npz: array-level and byte-level mutations -----------------------------------------
def _npz_bytes(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@st.composite
def npz_mutations(draw) -> bytes:
    with np.load(SAMPLES / "transport" / "small.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    if draw(st.booleans()):  # a cost-matrix instance instead of points
        x, y = arrays.pop("x"), arrays.pop("y")
        arrays["cost"] = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))
    for _ in range(draw(st.integers(1, 2))):
        key = draw(st.sampled_from(sorted(arrays)))
        a = arrays[key]
        op = draw(st.sampled_from(["nan", "inf", "scale", "negate", "shorten", "dtype", "empty", "drop", "extra",
                                   "zero", "flatten", "add_axis"]))
        numeric = a.dtype.kind in "fiu"
        if op in ("nan", "inf") and a.size and numeric:
            a = a.astype(float)
            a.flat[draw(st.integers(0, a.size - 1))] = np.nan if op == "nan" else np.inf
        elif op == "scale" and numeric:
            with np.errstate(over="ignore"):  # inf where it overflows: the reader must refuse it
                a = a.astype(float) * draw(st.sampled_from([1e300, 1e-300, 1e154, -1.0, 0.0]))
        elif op == "negate" and numeric:
            a = -a.astype(float)
        elif op == "shorten" and a.ndim:
            a = a[:max(0, a.shape[0] - draw(st.integers(1, 3)))]
        elif op == "dtype":
            dtype = draw(st.sampled_from([np.int8, np.uint8, np.bool_, np.float32, np.float16, np.complex128, "U3",
                                          ">f8"]))
            with np.errstate(invalid="ignore", over="ignore"):
                try:
                    a = a.astype(dtype)
                except (ValueError, TypeError):  # strings made earlier that do not parse as numbers
                    pass
        elif op == "empty" and a.ndim:
            a = np.zeros((0,) + a.shape[1:])
        elif op == "zero":
            a = np.zeros_like(a)
        elif op == "flatten":
            a = a.ravel()
        elif op == "add_axis":
            a = a[..., None]
        if op == "drop":
            arrays.pop(key)
            if not arrays:
                break
        elif op == "extra":
            arrays["extra"] = a
        else:
            arrays[key] = a
    raw = _npz_bytes(arrays)
    return draw(byte_mutations([raw])) if draw(st.integers(0, 3)) == 0 else raw


@FUZZ
@given(mutated=npz_mutations())
def test_transport_npz_reader_and_model_read_or_refuse_mutated_archives(mutated):
    _accepts_or_refuses(mutated, "transport_npz", ".npz", {}, build=True)


# --- the CLI on a few mutations: one line, exit 1 ---------------------------------------------------
def _sample(rel: str) -> bytes:
    return (SAMPLES / rel).read_bytes()


MUTATED = {  # name -> the mutation of a shipped file
    "truncated.json": lambda: _sample("games/harker.json")[:200],
    "flipped.npz": lambda: _sample("transport/small.npz")[:300] + b"\xff" * 40 + _sample("transport/small.npz")[340:],
    "nan.vrp": lambda: re.sub(rb"CAPACITY\s*:\s*\d+", b"CAPACITY : nan", _sample("cvrp/X-n101-k25.vrp")),
    "cut.dat": lambda: _sample("irp/abs1n5_1.dat")[:-40],
}


@pytest.mark.parametrize("name", sorted(MUTATED))
def test_cli_prints_one_line_for_a_mutated_file(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_bytes(MUTATED[name]())
    code = main(["solve", str(path), "--time-limit", "5"])
    out, err = capsys.readouterr()
    assert code == 1 and len(err.strip().splitlines()) == 1 and str(path) in err and "Traceback" not in err


# --- files that once failed -------------------------------------------------------------------------
EXPECTED = {  # file in tests/fuzz_cases -> words its one-line error holds
    "npy_renamed.npz": "a NumPy .npy file (one array), not an .npz archive",
    "junk_member.npz": "array 'x': unreadable .npy header",
    "header_71_pib.npz": "header claims shape",
    "deep_5000.json": "JSON nested too deeply",
    "broken.json": "broken.json:3:19: not valid JSON: Expecting value",
    "ragged_q.json": "player 'x1': Q must be a matrix (rows of equal length)",
    "ragged_shared_coefficients.json": "shared_constraints[0]: coefficients must be a matrix",
    "ragged_endowments.json": "endowments must be a matrix (rows of equal length)",
    "borrowing_limit_length.json": "borrowing_limit must be one number, or one per asset",
    "ces_without_rho.json": "a ces utility needs 'values' and 'rho'; missing 'rho'",
    "markov_lower_nested.json": "lower must be a number, a list of numbers (one per action) or rows of them",
    "huge_player_size.json": "player 'x1': Q must have shape (96726, 96726), got (3, 3)",
    "markov_upper_rows.json": "upper must be a number, 2 numbers (one per action) or 2 rows of 2",
    "mps_name_not_utf8.mps": "not UTF-8 text",
    "lp_name_not_utf8.lp": "not UTF-8 text",
    "mps_hangs_highs.mps": "mps_hangs_highs.mps:9: COLUMNS line too short",
}


def test_every_stored_case_has_an_expectation():
    stored = {p.name for p in CASES.iterdir() if p.is_file() and p.name != "README.md"}
    assert stored == set(EXPECTED) | {"sorted_keys.json"}


def test_a_malformed_mps_that_hangs_highs_is_refused():
    # HiGHS' readModel never returns on a COLUMNS line of two tokens: the reader refuses it first
    _read_in_child(str(CASES / "mps_hangs_highs.mps"), "mps", {})


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_stored_case_is_one_line_through_the_cli(capsys, name):
    path = CASES / name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["solve", str(path), "--time-limit", "5"])
    out, err = capsys.readouterr()
    assert code == 1, out
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert EXPECTED[name] in err and str(path) in err, err


def test_a_kind_after_the_first_4_kib_is_detected(tmp_path):
    """Written with sort_keys=True, the 'kind' comes after a 5 KiB description: detected by parsing."""
    path = CASES / "sorted_keys.json"
    assert b'"kind"' not in path.read_bytes()[:4096]
    assert read_instance(str(path)).family == "games"
    other = tmp_path / "game.txt"  # any extension: the content decides
    other.write_bytes(path.read_bytes())
    assert read_instance(str(other)).family == "games"


@pytest.mark.parametrize("document, said", [
    ({"kind": "bogus"}, "'bogus' is not a kind solvopt reads"),
    ({"players": []}, "field kind: missing"),
])
def test_an_unknown_or_missing_json_kind_names_every_kind(tmp_path, capsys, document, said):
    """The refusal lists every JSON kind solvopt reads, the production economy's too."""
    path = tmp_path / "what.json"
    path.write_text(json.dumps(document))
    assert main(["solve", str(path)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and said in err and "production_economy" in err, err
    assert str(path) in err


def test_load_npy_checks_the_header_before_allocating(tmp_path):
    from solvopt.core.errors import InstanceFormatError
    from solvopt.io.npz import load_npy
    ok = tmp_path / "ok.npy"
    np.save(ok, np.arange(6.0).reshape(2, 3))
    assert load_npy(str(ok)).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (71 * 2 ** 17, 2 ** 30)})
    huge = tmp_path / "huge.npy"
    huge.write_bytes(header.getvalue() + bytes(16))
    with pytest.raises(InstanceFormatError, match=r"header claims shape .* \(71 PiB\) but the file holds 16 bytes"):
        load_npy(str(huge))
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([[1, "a"]], dtype=object), allow_pickle=True)
    with pytest.raises(InstanceFormatError, match="dtype object is not supported"):
        load_npy(str(obj))
