"""Every `forge ...` example in README.md and docs/*.md runs as written.

The files are found when the tests are collected (README.md and every
docs/**/*.md), so a page added later is checked too.  From each fenced
block whose info string is `sh` (or `bash`, `shell`), every line that
starts with `forge ` (continuation lines ending in `\\` joined) runs through
`bash -c`, exactly as written - comments, pipes and redirections included -
with a timeout each.  A block's lines run in order in one fresh temporary
folder holding a copy of `examples/` (so one line may read a file an
earlier one wrote), with a `forge` on PATH that is a plain, non-editable
install of this checkout: its wheel, built once per session and installed
into a fresh virtual environment (which borrows this interpreter's
packages for the dependencies), with no PYTHONPATH.  So a command that
needs a file only the checkout has fails here, as on a user's machine.

A line passes when it exits 0, 1 (a failed run or suite is an outcome the
docs may show) or 3 (an exhaustive search stopped at its budget), and
prints no Python traceback; exit 2 (bad input: the example is wrong), 70 (a
kit bug) or the timeout fails it.

Placeholders are not run:

- a block right after a line `<!-- placeholder -->` (blank lines between
  are allowed);
- a line naming a file or program the reader supplies: a word starting
  `my.` or `my-` (`my.md`, `my-engine.js`), or an all-capitals word of two
  or more letters (`CMD`, `FILE`, `DIR`).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLACEHOLDER_MARK = "<!-- placeholder -->"
SHELLS = ("sh", "bash", "shell")
#: Wall seconds a line may take (the whole suite over the pipe, the mutants).
TIMEOUT = 900
PLACEHOLDER_WORD = re.compile(r"(?<![\w.-])(my[.-]\S*|[A-Z]{2,})(?![\w])")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w-]*)")


def doc_files(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    found = [root / "README.md"] if (root / "README.md").exists() else []
    return found + sorted((root / "docs").rglob("*.md"))


def shell_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(line number of the fence, its runnable `forge` lines) per block that has any."""
    out: list[tuple[int, list[str]]] = []
    for number, command, block in _commands(text):
        if out and out[-1][0] == block:
            out[-1][1].append(command)
        else:
            out.append((block, [command]))
    return out


def shell_lines(text: str) -> list[tuple[int, str]]:
    """(line number, command) for each runnable `forge` line of `text`."""
    return [(number, command) for number, command, _ in _commands(text)]


def _commands(text: str) -> list[tuple[int, str, int]]:
    out: list[tuple[int, str, int]] = []
    lines = text.split("\n")
    i = 0
    previous = ""            # the last non-blank line before the current one
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence, info = match.group(1), match.group(2)
        skip = previous == PLACEHOLDER_MARK or info not in SHELLS
        block = i + 1
        i += 1
        pending, start = "", 0
        while i < len(lines) and not lines[i].startswith(fence):
            line = lines[i]
            if not pending:
                start = i + 1
            pending += line.rstrip()
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
            else:
                command = pending.strip()
                if not skip and command.startswith("forge ") and not is_placeholder(command):
                    out.append((start, command, block))
                pending = ""
            i += 1
        previous = lines[i - 1].strip() if i < len(lines) else ""
        i += 1
    return out


def is_placeholder(command: str) -> bool:
    # Comments do not make a line a placeholder; only what it runs does.
    code = re.sub(r"\s#\s.*$", "", command)
    return PLACEHOLDER_WORD.search(code) is not None


def _examples() -> list:
    params = []
    for path in doc_files():
        for number, commands in shell_blocks(path.read_text(encoding="utf-8")):
            where = f"{path.relative_to(ROOT)}:{number}"
            params.append(pytest.param(commands, id=where))
    return params


#: What is not copied into the tree a wheel is built from.
_NOT_SOURCE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                     ".forge", ".pytest_cache", ".mypy_cache")


@pytest.fixture(scope="session")
def installed_bin(tmp_path_factory) -> pathlib.Path:
    """The bin folder of a virtual environment holding this checkout as a
    user gets it from `pip install .`: a wheel, not the source tree."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)   # the build writes beside its source
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = ["-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run([sys.executable, *pip, "wheel", "--no-deps", "-w", str(base / "wheel"),
                            str(source)], env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"cannot build the kit's wheel:\n{built.stderr[-2000:]}"
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, env=env, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), *pip, "install", "--no-deps",
                           *map(str, (base / "wheel").glob("*.whl"))],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"cannot install the kit's wheel:\n{done.stderr[-2000:]}"
    where = subprocess.run([str(python), "-c", "import forge; print(forge.__file__)"], env=env,
                           capture_output=True, text=True, cwd=base, timeout=120).stdout
    assert where.startswith(str(venv)), f"the venv imports forge from {where}"
    return venv / "bin"


@pytest.fixture
def workdir(tmp_path, installed_bin):
    """A folder with the examples, and a `forge` installed from this checkout's wheel."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": f"{installed_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("PYTHONPATH", "FORGE_DEBUG"):
        env.pop(name, None)
    return tmp_path, env


@pytest.mark.slow
@pytest.mark.parametrize("commands", _examples())
def test_the_examples_run_as_written(commands, workdir):
    """A block's lines run in order in one folder (one may use another's file)."""
    folder, env = workdir
    for command in commands:
        try:
            done = subprocess.run(["bash", "-c", "set -o pipefail\n" + command], cwd=folder,
                                  env=env, capture_output=True, text=True, timeout=TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`{command}` ran past {TIMEOUT} s")
        detail = f"`{command}` exited {done.returncode}\n{done.stderr[-2000:]}"
        assert done.returncode in (0, 1, 3), detail
        assert "Traceback (most recent call last)" not in done.stderr, detail


def test_the_docs_have_examples_to_run():
    """The README's own examples are found (the extractor is not silently empty)."""
    commands = [c for p in doc_files() for _, c in shell_lines(p.read_text(encoding="utf-8"))]
    assert any(c.startswith("forge run examples/two-tasks.md") for c in commands)
    assert not any("my.md" in c or "my-engine" in c for c in commands)


def test_placeholders_are_not_run():
    text = "\n".join([
        "```sh",
        "forge run examples/two-tasks.md   # runs",
        "forge explore my.md --runs 5",
        "forge conformance --impl CMD",
        "forge conformance \\",
        "    -k two-tasks",
        "pip install .",
        "```",
        "",
        PLACEHOLDER_MARK,
        "",
        "```sh",
        "forge run examples/anything.md",
        "```",
        "```python",
        "forge run not-shell.md",
        "```",
    ])
    assert shell_lines(text) == [(2, "forge run examples/two-tasks.md   # runs"),
                                 (5, "forge conformance      -k two-tasks")]
    assert shell_blocks(text) == [(1, ["forge run examples/two-tasks.md   # runs",
                                       "forge conformance      -k two-tasks"])]
