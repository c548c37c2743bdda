"""The trace: every scheduling step and harness exchange, as JSON lines.

The trace is what replay and the determinism check compare, so its bytes must
depend only on the run's inputs and choices: records are plain JSON with
sorted keys, times are integer nanoseconds, and nothing in them comes from an
address, a hash seed or the wall clock.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


#: One encoder for every record: `json.dumps` with options builds a new one a call.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    return _ENCODER.encode(value)


class Trace:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def emit(self, now: int, what: str, **fields: Any) -> None:
        record = {"i": len(self.records), "t": now, "what": what}
        record.update(fields)
        self.records.append(record)

    def lines(self) -> str:
        return "".join(canonical_json(r) + "\n" for r in self.records)

    def sha256(self) -> str:
        digest = hashlib.sha256()
        encode = _ENCODER.encode
        for record in self.records:
            digest.update((encode(record) + "\n").encode("utf-8"))
        return digest.hexdigest()
