"""Killing a store worker amid its work, for the crash tests: start it,
wait for its READY line and for its first call to begin, let it run a
moment more, then `kill -9` it and hand back everything it wrote."""

from __future__ import annotations

import random
import signal
import subprocess
import time


def kill_amid_work(argv: list[str], env: dict[str, str], rng: random.Random,
                   window: float) -> list[str]:
    """The lines a worker wrote before `kill -9` landed, up to `window`
    seconds after its first call began (however slow a loaded machine
    starts it); the first of them is that call's."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
    first = proc.stdout.readline()
    time.sleep(rng.uniform(0.0, window))
    proc.send_signal(signal.SIGKILL)
    # read through the same buffered file the READY line came from
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, err
    return [first, *out.splitlines()]
