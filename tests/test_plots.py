"""benchmarks/plots.py draws the transport and games figures from the recorded JSON, with legends
free of commit hashes (matplotlib: the bench extra; skipped without it)."""
from __future__ import annotations

import importlib.util
import json

import pytest
from helpers import REPO

spec = importlib.util.spec_from_file_location("plots", REPO / "benchmarks" / "plots.py")
plots = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plots)


def test_labels_lose_commit_hashes():
    assert plots._clean_label("before (c706dff)") == "before"
    assert plots._clean_label("linear 1000x1000 after") == "linear 1000x1000 after"
    assert plots._clean_label("nashopt 1.3.9 (variational, KKT root finding)") == \
        "nashopt 1.3.9 (variational, KKT root finding)"
    assert "6cba5a4" not in plots._clean_label("snapshot 6cba5a4")


@pytest.mark.parametrize("fn, source", [(plots.transport_time, "transport.json"),
                                        (plots.transport_ratio, "transport.json"),
                                        (plots.transport_scaling, "transport.json"),
                                        (plots.games_static, "games.json"),
                                        (plots.games_markets, "games.json"),
                                        (plots.games_exchange, "games.json")])
def test_figures_draw_from_the_recorded_results(fn, source, tmp_path):
    pytest.importorskip("matplotlib")
    json_path = REPO / "benchmarks" / "results" / source
    if not json_path.is_file():
        pytest.skip(f"{source} is not recorded")
    png = tmp_path / "f.png"
    assert fn(json_path, png) and png.stat().st_size > 10_000
    from PIL import Image
    width, height = Image.open(png).size
    assert 700 <= width <= 1600 and height >= 400 and width / height < 3  # not a cramped strip


def test_every_figure_source_is_known():
    names = {png for _, _, png in plots.FIGURES}
    assert {"transport.png", "transport_ratio.png", "transport_scaling.png", "games.png", "games_markets.png",
            "games_exchange.png"} <= names
    for _, source, _ in plots.FIGURES:
        assert source.endswith(".json")
    json.dumps([s for _, s, _ in plots.FIGURES])
