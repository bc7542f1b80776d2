"""benchmarks/transport.py keeps hand-written notes through every write, and stops before
overwriting a results page that was edited by hand (no measurement runs here: the row is faked)."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_transport", REPO / "benchmarks" / "transport.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["bench_transport"] = bench
spec.loader.exec_module(bench)


def fake_row(case, n, p, args, log):
    row = {"case": case, "d": 2, "n": n, "p": p, "repeats": 1,
           "ours": {"objective": 1.0, "bound": 0.5, "factor": 5.66, "seconds": 0.1, "peak_mib": 1.0}}
    bench.derive(row)
    return row


@pytest.fixture
def no_measuring(monkeypatch):
    monkeypatch.setattr(bench, "bench_row", fake_row)
    monkeypatch.setattr(bench, "warm_up", lambda *a, **k: None)
    monkeypatch.setattr(bench, "plot", lambda *a, **k: None)
    monkeypatch.setattr(bench, "machine", lambda: "test machine")
    monkeypatch.setattr(bench, "code_version", lambda: "test")


def run(out, *extra):
    bench.main(["--cases", "uniform2", "--ps", "1", "--methods", "ours", "--output", str(out), *extra])


def test_notes_survive_merge_and_redraw(tmp_path, no_measuring):
    out = tmp_path / "transport"
    run(out, "--sizes", "10", "--note", "first note")
    run(out, "--sizes", "20", "--merge", "--note", "second note")
    run(out, "--sizes", "10", "--merge")                    # no note given: the recorded ones stay
    bench.main(["--redraw", "--output", str(out), "--note", "first note"])   # a repeated note is not doubled
    recorded = json.loads(out.with_suffix(".json").read_text())
    assert recorded["meta"]["notes"] == ["first note", "second note"]
    assert sorted(r["n"] for r in recorded["rows"]) == [10, 20]
    text = out.with_suffix(".md").read_text()
    assert "- first note" in text and "- second note" in text


def test_hand_edited_page_is_not_overwritten(tmp_path, no_measuring):
    out = tmp_path / "transport"
    run(out, "--sizes", "10")
    md = out.with_suffix(".md")
    md.write_text(md.read_text() + "\nA hand-written remark.\n")
    for extra in (["--sizes", "20", "--merge"], ["--redraw"]):
        with pytest.raises(SystemExit, match="edited by hand"):
            bench.main(["--cases", "uniform2", "--ps", "1", "--methods", "ours", "--output", str(out), *extra])
        assert md.read_text().endswith("A hand-written remark.\n")
    md.unlink()                                             # the text moved into a note: write again
    bench.main(["--redraw", "--output", str(out), "--note", "A hand-written remark."])
    assert "- A hand-written remark." in md.read_text()
    run(out, "--sizes", "20", "--merge")                    # and the page is the writer's again
