"""The kit's version, in one place: `forge.__version__` and the `kit` field of
a replay file (`forge.run.record.kit_version`) both read it.  A leaf module, so
that the run definition can name the kit without importing the `forge`
package (whose lazy re-export of `forge.api` sits above it)."""

__version__ = "0.2.0"
