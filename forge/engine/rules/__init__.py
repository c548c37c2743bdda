"""The Tasks chapter's rules, one module each, each written once.

- `ids`: task ids, the child counter every taker goes through, the depth cap.
- `admission`: the queue, slots, the concurrency limit and its ceiling.
- `timeouts`: a wait's timeout option, its timer and the tie with a member's end.
- `endings`: how a task ends: cancel, abandon reasons and their phrases, tasks_live.
- `notices`: the notices a model gets for its ended tasks, and their queue.
- `waits`: the one recipe by which a chain parks on other tasks, and leaves.

Each module declares its variation sites (`forge.variation`), the places a
mutant may switch to make exactly that rule wrong.
"""
