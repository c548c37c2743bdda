"""The verdict on how a run ended: whether a schedule whose run ends `failed`
or `cancelled` fails the campaign.

One rule, used by `forge explore`, `forge replay`, the Python API
(`forge.explore`) and the pytest plugin, all through
`forge.runspec.Expectation`:

- By default a run must end `ok`.  A run that ends `failed`, whatever its
  error kind (`Lua`, `Budget`, `Deadlock`, `Determinism`, `Internal`, ...),
  or `cancelled`, fails its schedule, as an uncaught exception fails a
  pytest test.
- Under a fault plan (`--faults`) a run may end failed or cancelled: ending
  a run is what an injected fault is for, and the invariants judge the rest.
- The user says what they expect instead: `--expect-outcome O` (every
  schedule ends O), `--expect-error KIND` (every schedule ends failed with
  error kind KIND), or `--allow-failed` (a schedule may end any way; only
  the checks judge it).

A crash (outcome `crashed`: the engine itself raised, a kit bug) is never
accepted; `forge.runspec.no_crash` fails it whatever is expected.

What does not live here: the other checks (`forge.runspec.Expectation`,
`forge.conformance.oracles`), the conformance cases' own expectations
(`forge.conformance.case`), how a failure is printed (`forge.commands`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from forge.deferred import deferred
from forge.errors import InputError

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import difference
else:
    difference = deferred("forge.difference")

#: The outcomes a run ends with (besides `crashed`, a kit bug).
OUTCOMES = ("ok", "failed", "cancelled")
#: Every problem this rule finds starts so (`is_ending_problem`).
PREFIX = "the run ended "
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


@attrs.frozen
class Verdict:
    """What the user expects of a run's ending (nothing said: it ends `ok`)."""

    #: Every schedule must end so (None: `ok`, or as `allow_failed` says).
    outcome: str | None = None
    #: Every schedule must end failed with this error kind.
    error: str | None = None
    #: A schedule may end any way.
    allow_failed: bool = False

    @classmethod
    def of(cls, outcome: str | None = None, error: str | None = None,
           allow_failed: bool = False) -> Verdict:
        """The verdict the flags ask for, checked.

        Raises:
            InputError: naming the flag, for an unknown outcome, an error
                kind that is not a name, or flags that contradict.
        """
        if outcome is not None and outcome not in OUTCOMES:
            raise InputError(f"an outcome is one of {', '.join(OUTCOMES)}, got {outcome!r}",
                             file="--expect-outcome")
        if error is not None:
            if not isinstance(error, str) or not _KIND.fullmatch(error):
                raise InputError(f"an error kind is a name such as Lua or Determinism, got "
                                 f"{str(error)[:40]!r}", file="--expect-error")
            if outcome not in (None, "failed"):
                raise InputError(f"a run with an error kind ends failed, not {outcome}",
                                 file="--expect-error")
        if allow_failed and (outcome is not None or error is not None):
            raise InputError("--allow-failed accepts any ending; --expect-outcome and "
                             "--expect-error ask for one: give one of them",
                             file="--allow-failed")
        return cls("failed" if error is not None else outcome, error, bool(allow_failed))

    @property
    def said(self) -> bool:
        """The user said how runs may end."""
        return self.allow_failed or self.outcome is not None

    def check(self, faulty: bool = False) -> Callable[[dict], list[str]]:
        """The check of a run's observation by this verdict (`faulty`: the
        run injects faults, which may end it failed or cancelled)."""
        return _EndingCheck(self, faulty)

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "error": self.error, "allow_failed": self.allow_failed}

    @classmethod
    def from_json(cls, data: dict | None, where: str = "$.expect.ending") -> Verdict:
        """The recorded verdict; a record from before this rule (None) held
        no verdict on the ending, so it allows any.

        Raises:
            InputError: naming `where`, for values `of` refuses.
        """
        if data is None:
            return cls(allow_failed=True)
        try:
            return cls.of(data.get("outcome"), data.get("error"), data.get("allow_failed") is True)
        except InputError as e:
            raise InputError(e.message, file=where) from None


@attrs.frozen
class _EndingCheck:
    verdict: Verdict
    faulty: bool

    def __call__(self, obs: dict) -> list[str]:
        outcome = obs.get("outcome")
        if outcome not in OUTCOMES:     # a crash: no_crash's to report
            return []
        v = self.verdict
        if v.allow_failed:
            return []
        ended = ending(obs)
        if v.outcome is not None:
            if outcome != v.outcome:
                return [f"{PREFIX}{ended}; expected it to end {v.outcome} (--expect-outcome)"]
            kind = (obs.get("error") or {}).get("kind")
            if v.error is not None and kind != v.error:
                return [f"{PREFIX}{ended}; expected error kind {v.error} (--expect-error)"]
            return []
        if outcome == "ok" or self.faulty:
            return []
        return [f"{PREFIX}{ended}"]


def ending(obs: dict) -> str:
    """How the run ended, in words: its outcome, and its error's kind and message."""
    outcome = str(obs.get("outcome"))
    error = obs.get("error")
    if not isinstance(error, dict):
        return outcome
    message = " ".join(str(error.get("message", "")).split())
    if len(message) > 200:
        message = message[:120] + " ... " + message[-60:]
    return f"{outcome} with a {error.get('kind')} error: {message}"


def is_ending_problem(problem: str) -> bool:
    return problem.startswith(PREFIX)


def acceptance(obs: dict, *, api: bool = False) -> str:
    """The one flag (or, `api`, keyword) that accepts this run's ending."""
    outcome = obs.get("outcome")
    kind = (obs.get("error") or {}).get("kind")
    if api:
        return f"expect_error={kind!r}" if outcome == "failed" and kind else \
            f"expect_outcome={outcome!r}"
    return f"--expect-error {kind}" if outcome == "failed" and kind else \
        f"--expect-outcome {outcome}"


def why(obs: dict, *, api: bool = False) -> str:
    """The explanation a newcomer reads under a failure by this rule."""
    other = "allow_failed=True" if api else "--allow-failed"
    return (f"a schedule fails when its run ends failed or cancelled, as an uncaught "
            f"exception fails a test; if this ending is what the prompt should do, accept "
            f"it with {acceptance(obs, api=api)} (or any ending with {other})")


def result_check(expected: str) -> Callable[[dict], list[str]]:
    """The check that the run's result is `expected` (`--expect-result`):
    its problem shows where they first differ, and how the run ended when
    it did not end ok (a failed run has no result to compare)."""
    return _ResultCheck(expected)


@attrs.frozen
class _ResultCheck:
    expected: str

    def __call__(self, obs: dict) -> list[str]:
        got = obs.get("result")
        if got == self.expected:
            return []
        if len(repr(got)) + len(repr(self.expected)) <= 120:
            summary = f"result {got!r} != {self.expected!r}"
        else:
            summary = "the result is not --expect-result's"
        if obs.get("outcome") != "ok":
            summary += f" (the run ended {ending(obs)})"
        where = difference.first_difference(self.expected, got)
        return [difference.problem(summary, where, "expected", "result")]
