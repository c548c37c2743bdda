"""The suite proves its own strength: every clause of the Tasks chapter is
checked by a case, every case cites real clauses, every mutant switches one
declared variation site, and the suite kills every mutant engine."""

from __future__ import annotations

from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
from forge.conformance.catalogue import default_catalogue_dir, load_catalogue
from forge.conformance.mutants import ORACLES, CATALOGUE, kill_matrix, with_fewer_schedules

TASKS_FEATURES = {"tasks", "tasks-model", "fanout"}


def test_every_tasks_clause_is_covered_and_every_case_cites_real_clauses():
    clauses = load_catalogue(default_catalogue_dir())
    known = {c["id"] for c in clauses}
    cases = load_cases(DEFAULT_CASES_DIR, known)   # refuses a case citing an unknown id
    cited = {cid for case in cases for cid in case.clauses}
    uncovered = sorted(c["id"] for c in clauses
                       if c["feature"] in TASKS_FEATURES and c["id"] not in cited)
    assert uncovered == []


def test_every_mutant_switches_a_declared_site_and_every_site_has_a_mutant():
    """Mutants switch declared variation sites, one each (issue: mutants at
    declared sites): a mutant naming no site, a site without a mutant, or two
    mutants on one site all fail here."""
    from forge import variation

    declared = {site.name for site in variation.declared()}
    named = [m.site for m in CATALOGUE]
    assert sorted(set(named)) == sorted(named), "two mutants switch the same site"
    assert set(named) - declared == set(), "a mutant names a site nothing declares"
    assert declared - set(named) == set(), "a declared site has no mutant"
    for m in CATALOGUE:
        site = variation.find(m.site)
        assert m.description == site.wrong and not site.on
        with m.applied():
            assert [s.name for s in variation.declared() if s.on] == [m.site]
        assert not site.on


def test_every_non_equivalent_mutant_is_killed():
    """The suite and the invariants kill every mutant not marked equivalent
    (two worker processes: each mutant switches its site in a process of its own)."""
    cases = with_fewer_schedules(load_cases(DEFAULT_CASES_DIR), 3)
    scored = [m for m in CATALOGUE if m.equivalent is None]
    killers = kill_matrix(scored, cases, seeds=5, workers=2)
    survivors = [m.id for m, k in zip(scored, killers)
                 if not [x for x in k if not x.startswith(ORACLES)]]
    assert len(CATALOGUE) >= 45
    assert survivors == []
    # The oracles alone (`forge mutants`' second column): the invariants,
    # watchers and liveness monitors over the example prompts, no case.
    alone = [m.id for m, k in zip(scored, killers) if any(x.startswith(ORACLES) for x in k)]
    assert {"release-admits-nobody", "wake-waits-for-slot", "last-end-wakes-nobody",
            "cancel-lost-when-parked", "tie-goes-to-timeout"} <= set(alone)
    assert 2 * len(alone) >= len(scored), (len(alone), len(scored))
