"""The dask backend: a local cluster on this machine runs the campaign and
merges into the serial report; without the distributed extra, asking for it
is one line and exit 2 (kit: campaigns)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES

PROMPT = str(EXAMPLES / "explore" / "store-race.md")
CHECK = '''def rare(obs):
    return ["a rare trace"] if obs["trace_sha256"].startswith("00") else []
'''


def _env(tmp_path) -> dict:
    (tmp_path / "rarecheck.py").write_text(CHECK, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(tmp_path)) if p)
    return env


@pytest.mark.parametrize("strategy", ["random", "exhaustive"])
def test_a_dask_local_cluster_gives_the_serial_report(tmp_path, strategy):
    env = _env(tmp_path)
    base = [sys.executable, "-m", "forge", "explore", PROMPT, "--args", "2", "--runs", "400",
            "--check", "rarecheck:rare", "--json", "--replay-out", "r.json",
            "--strategy", strategy, *(("--no-reduce",) if strategy == "exhaustive" else ())]
    serial = subprocess.run(base, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    replay = (tmp_path / "r.json").read_bytes()
    cluster = subprocess.run([*base, "--backend", "dask", "--workers", "2"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=600)
    assert serial.returncode == cluster.returncode == 1, cluster.stderr
    assert cluster.stdout == serial.stdout
    assert (tmp_path / "r.json").read_bytes() == replay


def test_the_dask_backend_without_the_extra_is_one_line(tmp_path):
    # `sys.modules[name] = None` makes `import distributed` fail, as when
    # the extra is not installed.
    code = ("import sys; sys.modules['distributed'] = None; sys.argv = ['forge'] + sys.argv[1:];"
            " from forge.cli import main; main()")
    out = subprocess.run([sys.executable, "-c", code, "explore", PROMPT, "--backend", "dask"],
                         cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 2
    assert out.stderr == ("forge: --backend: the dask backend needs the distributed extra: "
                          "pip install 'forge-kit[distributed]'\n")


def test_the_api_spreads_a_campaign_with_the_same_report(tmp_path, monkeypatch):
    import forge.api as api

    monkeypatch.syspath_prepend(str(tmp_path))
    _env(tmp_path)
    kwargs = dict(args="2", runs=400, named_checks=["rarecheck:rare"])
    serial = api.explore(PROMPT, **kwargs)
    spread = api.explore(PROMPT, workers=2, **kwargs)
    assert spread == serial and not serial.ok
    # The default strategy, the portfolio: its PCT member of depth 3 finds it
    # (random, `--strategy random`, first fails at seed 247).
    assert serial.failures[0].seed == 143
    walk = dict(args="2", runs=300, named_checks=["rarecheck:rare"], strategy="exhaustive")
    assert api.explore(PROMPT, workers=2, **walk) == api.explore(PROMPT, **walk)
