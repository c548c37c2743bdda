"""The task lifecycle manager: a deterministic reference for its specification.

Racing parties (finalizers, stops, retries, restarts) are explicit calls whose
order the caller chooses, and both bounded waits (a stop's look-again,
task_status's wait) run on an injectable clock, virtual by default, so tests
and state machines force every interleaving the specification worries about
without wall time.

Lives here: records (``records``), refusals (``errors``), clocks (``clock``),
the compare-and-set stores (``store`` in memory, ``sqlite_store``) and the
contract they pass (``contract``), session repositories (``sessions``), the
Manager (``manager``), the model's four tools (``tools``) and their texts
(``cards``), and the wake-up text formatter (``notices``).
Not modelled: generation columns on the SQL store (a row surviving a delete
some other way is not made inert), several Managers sharing one per-parent
cap (the cap is exact per Manager, as in the original).
"""
