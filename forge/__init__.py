"""forge: the reference engine of the forge kit.

Subpackages: `prompt` (parsing prompt files), `lua` (the sandboxed Lua 5.5
runtime), `engine` (running a prompt on the simulator), `lifecycle` (the task
lifecycle manager).  `harness` is the engine's only door to the outside
world; `cli` is the `forge` command.
"""

__version__ = "0.1.0"
