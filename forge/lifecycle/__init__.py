"""The task lifecycle manager: a deterministic reference for its specification.

Racing parties (finalizers, stops, retries, restarts) are explicit calls whose
order the caller chooses, and both bounded waits (a stop's look-again,
task_status's wait) run on an injectable clock, virtual by default, so tests
and state machines force every interleaving the specification worries about
without wall time. On the simulator, the racing parties run as actors the
chooser interleaves at every store operation and host call.

Lives here: records (``records``), refusals (``errors``), clocks (``clock``),
the compare-and-set stores (``store`` in memory, ``sqlite_store``) and the
contract they pass (``contract``), store histories and their recording
(``history``), the linearizability checker (``linearizability``) and its page
(``history_html``), session repositories (``sessions``), the
Manager (``manager``), the model's four tools (``tools``) and their texts
(``cards``), the wake-up text formatter (``notices``), and the races on the
simulator: actors and oracles (``explore``), what actors do (``actors``),
the action names shared with lifecycle cases (``vocabulary``), scenario
files (``scenario``), partial-order reduction (``dpor``), running
strategies and replays (``campaign``), replay files (``replayfile``) and
``forge explore``'s and ``forge replay``'s printing (``command``).
Not modelled: generation columns on the SQL store (a row surviving a delete
some other way is not made inert). The per-parent cap is checked by each
Manager under its lock and again inside the store's create and retry claim,
so it holds for several Managers over one store too.
"""
