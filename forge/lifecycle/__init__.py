"""The task lifecycle manager: a deterministic reference for its specification.

Racing parties (finalizers, stops, retries, restarts) are explicit calls whose
order the caller chooses, so tests and state machines can force every
interleaving the specification worries about.

Lives here: records (``records``), the compare-and-set store (``store``), the
Manager (``manager``) and the wake-up text formatter (``notices``).
Not modelled: the four tools and task_status (waiting, listing, DescribeState),
OnTaskUpdate/update entries, ModelHasResult, durable debt tables, resuming a
paused run after its approval, session repositories other than the store's own
delete cascade.
"""
