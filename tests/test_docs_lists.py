"""The front door stays true: every place that lists the families agrees with the registry, the
version is one value everywhere, and the README and docs speak about the project alone (no paths
outside the repository, no planning words, no commit hashes, no stale file paths), each docs page
ending with its references."""
from __future__ import annotations

import configparser
import re
import subprocess
import sys

import pytest
from helpers import REPO

import solvopt
from solvopt.core.family import families

FAMILIES = sorted(f.name for f in families())
PAGES = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def _readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The body of the markdown section ``## heading`` (up to the next ``## ``)."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"no section '## {heading}'"
    return m.group(1)


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def test_registry_knows_the_families_the_docs_talk_about():
    assert {"khc", "cvrp", "dp", "irp", "lp", "transport", "games"} <= set(FAMILIES)


def test_readme_table_lists_every_family():
    table = _section(_readme(), "What is in the box")
    listed = sorted(re.findall(r"^\| `(\w+)` \|", table, re.M))
    assert listed == FAMILIES


def test_readme_layout_lists_every_family_and_the_dist_layer():
    layout = _section(_readme(), "Layout")
    missing = [name for name in FAMILIES + ["dist"] if f"`{name}`" not in layout]
    assert not missing, f"README's Layout section does not name {missing}"


def test_package_docstring_lists_every_family_and_the_dist_layer():
    doc = solvopt.__doc__
    missing = [name for name in FAMILIES + ["dist"] if f"``solvopt.{name}``" not in doc]
    assert not missing, f"solvopt/__init__.py's docstring does not name {missing}"


def test_cli_page_lists_every_family_that_reads_files():
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    readers = {f.name for f in families() if f.reader_modules}
    assert readers <= listed, f"docs/cli.md's family table misses {sorted(readers - listed)}"


def test_readme_names_every_extra():
    extras = sorted(_setup_cfg()["options.extras_require"])
    section = _section(_readme(), "Optional extras")
    missing = [name for name in extras if f"`{name}`" not in section]
    assert not missing, f"README's Optional extras section does not name {missing}"


def test_index_links_every_docs_page():
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md") if p.name != "index.md")
    missing = [name for name in pages if f"]({name})" not in index]
    assert not missing, f"docs/index.md does not link {missing}"


# --- one version -----------------------------------------------------------------------------------
def test_version_is_defined_once():
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:[.-]?(?:a|b|rc|dev|post)\d*)?", solvopt.__version__)
    assert _setup_cfg()["metadata"]["version"].strip() == "attr: solvopt.__version__"


def test_cli_prints_the_version():
    proc = subprocess.run([sys.executable, "-m", "solvopt.cli", "--version"], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == f"solvopt {solvopt.__version__}"


def test_citation_file_matches_the_version_and_names_each_family_paper():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert str(cff["version"]) == solvopt.__version__
    titles = " | ".join(ref["title"] for ref in cff["references"])
    for key in ("k-hyperplane clustering", "W_p Optimal Transport", "Markov Economies",
                "Generalized Nash equilibrium problems", "Split algorithm in O(n)", "GPU"):
        assert key in titles, key
    for ref in cff["references"]:
        assert ref["authors"] and ref["year"], ref["title"]


def test_changelog_and_license_exist():
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "semantic versioning" in changelog and f"## [{solvopt.__version__}]" in changelog
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


# --- docs that speak to users about the project alone --------------------------------------------
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
INWARD = [
    (re.compile(r"\.\./shared"), "a path outside the repository"),
    (re.compile(r"\bissues?\b", re.I), "a planning word ('issue')"),
    (re.compile(r"\banchors?\b", re.I), "a planning word ('anchor': say 'reference solver')"),
    (re.compile(r"\bcommit\s+[0-9a-f]{7,40}\b"), "a commit"),
]


def _strip_links(text: str) -> str:
    return re.sub(r"https?://\S+", "", text)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_page_speaks_about_the_project_alone(page):
    text = _strip_links(page.read_text(encoding="utf-8"))
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in INWARD:
            if pattern.search(line):
                problems.append(f"line {n}: {what}: {line.strip()[:100]}")
        for m in HASH.finditer(line):
            if not re.search(r"\b10\.\d{4,}/\S*" + re.escape(m.group(0)), line):  # not part of a DOI
                problems.append(f"line {n}: a commit hash? {m.group(0)}: {line.strip()[:100]}")
    assert not problems, "\n".join(problems)


PATH = re.compile(r"`((?:solvopt|dsl|gpu|benchmarks|tests|instances|docs|tools)/[\w./-]+)`")


def _written_by_a_benchmark(path: str) -> bool:
    """A results file not recorded on this checkout yet (e.g. a GPU run's) that a benchmark script writes."""
    if not path.startswith("benchmarks/results/"):
        return False
    name = path.rsplit("/", 1)[1]
    return any(name in script.read_text(encoding="utf-8") for script in (REPO / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_paths_named_in_a_page_exist(page):
    missing = [m.group(1) for m in PATH.finditer(page.read_text(encoding="utf-8"))
               if not (REPO / m.group(1)).exists() and not _written_by_a_benchmark(m.group(1))]
    assert not missing, f"{page.name} names files that do not exist: {missing}"


@pytest.mark.parametrize("page", sorted((REPO / "docs").glob("*.md")), ids=lambda p: p.name)
def test_docs_page_ends_with_references(page):
    headings = re.findall(r"^## (.+)$", page.read_text(encoding="utf-8"), re.M)
    assert headings and headings[-1].strip() == "References", f"{page.name}: last section is {headings[-1:]}"


def test_the_checks_catch_what_they_are_for():
    bad = "See ../shared/DESIGN.md; the issue's anchor; fixed in commit febd381."
    hits = [what for pattern, what in INWARD if pattern.search(bad)]
    assert len(hits) == 4
    assert HASH.search("legend: a1b2c3d") and not HASH.search("1000000 scenarios") \
        and not HASH.search("cafe and decade")
