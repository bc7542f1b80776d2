"""Docs that run: every fenced ```python / ```bash / ```sh / ```shell / ```console block of README.md
and docs/*.md runs as written, in page order.

- Python blocks of one page share one namespace (a block may use what an earlier block of the page
  defined); the working directory is the repository root as a reader has it (a fresh folder
  holding links to the checkout's top-level entries, so files a page writes do not land in the
  checkout).
- Shell blocks: each command (``$ `` prompts of console blocks stripped, ``\\`` continuations
  joined) whose first word is ``solvopt`` or ``python`` runs through bash with this interpreter;
  ``pip install`` commands (also as the first part of ``pip install ... && ...``) and the test
  suite's own command (``python -m pytest``) are skipped, other commands too (``cd``, ``git``).
- A block right after an HTML comment ``<!-- no-test: reason -->`` is skipped. Use it only for
  what cannot run here (Gurobi, a GPU) and say why.
- A block that runs longer than BLOCK_TIMEOUT seconds fails: give the example a time limit in the
  docs themselves.
Each block is one test, named ``PAGE:LINE`` (the line of its opening fence); running one block
alone first runs the page's earlier blocks.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import REPO

PAGES = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
LANGS = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell", "console": "shell"}
BLOCK_TIMEOUT = 180  # seconds per block (python) or per command (shell)
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
NO_TEST = re.compile(r"<!--\s*no-test\b(.*?)-->", re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int      # 1-based line of the opening fence
    kind: str      # "python" | "shell"
    lang: str
    source: str
    skip: str | None  # the no-test reason, or None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO).as_posix()}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        lang = m.group(1).lower()
        if lang not in LANGS:
            continue
        before = text[:m.start()].rstrip().splitlines()
        marker = NO_TEST.fullmatch(before[-1].strip()) if before else None
        skip = (marker.group(1).strip(" :") or "marked no-test") if marker else None
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, LANGS[lang], lang, m.group(2), skip))
    return out


ALL_BLOCKS = [b for page in PAGES for b in blocks_of(page)]


def shell_commands(block: Block) -> list[str]:
    """The commands of a shell block that the test runs (see the module docstring)."""
    joined, buf = [], ""
    for ln in block.source.splitlines():
        if block.lang == "console" and not buf:  # console: only "$ " lines (and their continuations)
            if not ln.strip().startswith("$ "):
                continue
            ln = ln.strip()[2:]
        if ln.rstrip().endswith("\\"):
            buf += ln.rstrip()[:-1] + " "
            continue
        joined.append(buf + ln)
        buf = ""
    if buf:
        joined.append(buf)
    commands = []
    for cmd in joined:
        cmd = cmd.strip()
        if not cmd or cmd.startswith("#"):
            continue
        parts = [p.strip() for p in cmd.split("&&")]
        parts = [p for p in parts if not re.match(r"(python3? -m )?pip3? install\b", p)]
        if not parts:
            continue
        cmd = " && ".join(parts)
        first = cmd.split()[0]
        if first not in ("solvopt", "python", "python3") or re.match(r"python3? -m pytest\b", cmd):
            continue
        commands.append(cmd)
    return commands


class _Page:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.namespace: dict = {"__name__": "__docs__"}
        self.done = 0


_PAGES: dict[Path, _Page] = {}


def _reader_folder(tmp_path_factory, page: Path) -> Path:
    """A folder that reads like the repository root, where written files stay out of the checkout."""
    folder = tmp_path_factory.mktemp("docs-" + page.stem)
    for entry in REPO.iterdir():
        if entry.name != ".git":
            (folder / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return folder


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def run_python(block: Block, page: _Page) -> None:
    code = compile("\n" * block.line + block.source, str(block.page), "exec")
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(BLOCK_TIMEOUT)
    cwd = os.getcwd()
    os.chdir(page.workdir)
    try:
        exec(code, page.namespace)
    except _Timeout:
        raise AssertionError(
            f"{block.id}: ran over {BLOCK_TIMEOUT} s: give the example a time limit in the docs") from None
    except BaseException as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(block.page)]
        where = f"line {frames[-1].lineno}: {frames[-1].line}" if frames else ""
        raise AssertionError(f"{block.id}: {where}\n{type(exc).__name__}: {exc}") from exc
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)


def run_shell(block: Block, page: _Page) -> None:
    py = shlex.quote(sys.executable)
    prelude = f'solvopt() {{ {py} -m solvopt.cli "$@"; }}; python() {{ {py} "$@"; }}; python3() {{ {py} "$@"; }}; '
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for cmd in shell_commands(block):
        try:
            proc = subprocess.run(["bash", "-c", prelude + cmd], cwd=page.workdir, env=env, capture_output=True,
                                  text=True, timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{block.id}: `{cmd}` ran over {BLOCK_TIMEOUT} s: "
                                 "give the example a time limit in the docs") from None
        assert proc.returncode == 0, f"{block.id}: `{cmd}` exited {proc.returncode}: {proc.stderr.strip()[-1500:]}"


def _run(block: Block, page: _Page) -> None:
    if block.skip is None:
        (run_python if block.kind == "python" else run_shell)(block, page)


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.id for b in ALL_BLOCKS])
def test_docs_block_runs(block: Block, tmp_path_factory):
    if block.skip is not None:
        pytest.skip(f"<!-- no-test -->: {block.skip}")
    if block.page not in _PAGES:
        _PAGES[block.page] = _Page(_reader_folder(tmp_path_factory, block.page))
    page = _PAGES[block.page]
    same_page = [b for b in ALL_BLOCKS if b.page == block.page]
    index = same_page.index(block)
    for earlier in same_page[page.done:index]:  # a block run alone: run the page's earlier blocks first
        try:
            _run(earlier, page)
        except AssertionError:
            pass  # reported by that block's own test
    page.done = index + 1
    _run(block, page)


# --- the extraction itself ----------------------------------------------------------------------
def test_extraction_finds_the_readme_blocks_and_skips_installs():
    readme = blocks_of(REPO / "README.md")
    assert [b.kind for b in readme][:2] == ["shell", "shell"] and any(b.kind == "python" for b in readme)
    assert shell_commands(readme[0]) == ["solvopt solve instances/khc/sr_10_2_2_1022.dat --time-limit 60"]
    assert shell_commands(readme[1]) == []  # pip install + the test suite itself


def test_markers_continuations_and_console_prompts(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("text\n\n<!-- no-test: needs Gurobi -->\n```python\nimport gurobipy\n```\n\n"
                    "```console\n$ solvopt methods \\\n    --json\nsome output\n$ pip install vrplib\n```\n"
                    "```\nnot run\n```\n```bash\ncd somewhere\npython -c 'print(1)'  # a comment\n```\n")
    blocks = blocks_of(page)
    assert [(b.kind, b.skip) for b in blocks] == [("python", "needs Gurobi"), ("shell", None), ("shell", None)]
    assert shell_commands(blocks[1]) == ["solvopt methods      --json"]
    assert shell_commands(blocks[2]) == ["python -c 'print(1)'  # a comment"]


# --- the tutorial's script ------------------------------------------------------------------------
@pytest.mark.slow
def test_tutorial_batch_runs_as_a_script(tmp_path_factory):
    """docs/tutorial.md ends with a script guarded by ``if __name__ == "__main__":`` (Dask's worker
    processes import the main module); the page's blocks run above with ``__name__ != "__main__"``,
    so the guarded batch is run here as the page says: saved as batch.py, ``python batch.py``."""
    pytest.importorskip("distributed")
    tutorial = [b for b in blocks_of(REPO / "docs" / "tutorial.md") if b.kind == "python"]
    script = tutorial[-1].source
    assert 'if __name__ == "__main__":' in script and "local_client" in script and "solve_many" in script
    folder = _reader_folder(tmp_path_factory, REPO / "docs" / "tutorial.md")
    (folder / "batch.py").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        proc = subprocess.run([sys.executable, "batch.py"], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"docs/tutorial.md's batch ran over {BLOCK_TIMEOUT} s") from None
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if " optimal obj=" in ln]
    assert [int(ln.split()[0]) for ln in lines] == list(range(6)), proc.stdout
