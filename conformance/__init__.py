"""The conformance suite: cases that pin the spec's task semantics, and the
machinery that runs them against an implementation.

What lives here:

- `case`: the case format (TOML files under `cases/<group>/<name>.toml`),
  its JSON Schema (`schema/case.schema.json`) and the loader that refuses a
  malformed case with an `InputError` naming the file and the rule;
- `matchers`: how an expectation is compared with an observation;
- `catalogue`: the clause catalogue (`spec/*.toml`) the cases cite;
- `adapters`: the implementation under test - the reference engine in this
  process, or any program speaking the JSON-lines protocol of
  `docs/protocol.md` over a pipe;
- `runner` and `report`: selecting and running cases, expectation files,
  the summary line, the JSON and JUnit reports;
- `cli`: `forge conformance` and `forge impl-serve`.

What does not: the engine itself (`forge.engine`), schedule exploration and
replay (`sim`), and the clause catalogue's contents (`spec/`).
"""
