"""The fuzz suite's summary: how many inputs of each kind ran, by exit code."""

from tests.fuzz.cli import CODES, COUNTS, SLOWEST


def pytest_terminal_summary(terminalreporter):
    if not COUNTS:
        return
    # The counts include inputs of failing tests: the failures report themselves.
    terminalreporter.write_line(f"fuzzed inputs: {sum(COUNTS.values())}")
    for kind, n in sorted(COUNTS.items()):
        codes = ", ".join(f"exit {code}: {m}"
                          for (k, code), m in sorted(CODES.items()) if k == kind)
        terminalreporter.write_line(f"  {kind}: {n} ({codes}; slowest {SLOWEST[kind]:.2f} s)")
