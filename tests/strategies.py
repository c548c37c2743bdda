"""Hypothesis strategies: random task workloads written as prompts.

They live in the package now (`forge.conformance.programs`), where the
differential fuzzer draws from them; the tests import them from here.
"""

from forge.conformance.programs import HEADER, plans, worker

__all__ = ["HEADER", "plans", "worker"]
