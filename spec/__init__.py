"""The clause catalogue: every normative sentence of the two specifications.

`tasks.toml` (the promptforge Tasks chapter) and `lifecycle.toml` (the task
lifecycle manager) hold one `[[clause]]` table per clause: a stable `id`,
the `feature` it belongs to, the spec `section` and seed `lines` it comes
from, a one-line `statement` in our own words, and the exact `strings`
(messages, phrases) it fixes.  Conformance cases cite these ids.

`forge.spec.cli` adds `forge spec` (list, search, render) and `forge spec
coverage` (which clauses no case checks).  The rendered, readable form is
`docs/spec/*.md`, produced by `forge spec render`.
"""
