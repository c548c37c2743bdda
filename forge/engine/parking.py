"""`PARK`: what a suspending call's handler returns when the chain parks.

A handler answers a chain's suspending call either at once (a resume tuple,
handed straight back to the chain's coroutine) or by parking the chain on
something that will answer later; then it returns `PARK`, and whoever
answers makes the chain ready with the resume value.  The sentinel lives
alone here so that every handler module can return it without importing
the run loop.
"""

PARK = object()
