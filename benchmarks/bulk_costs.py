"""What a byte of library work costs next to a VM instruction: the measurement
behind forge/lua/bulk.lua's BYTES_PER_INSTRUCTION and weights.

Usage: `python3 benchmarks/bulk_costs.py`.  In a plain lupa Lua 5.5 runtime
(no sandbox, no budget), times a tight loop per VM instruction (counted with
a count hook) and each size-proportional library call per byte or per value
it handles, and prints nanoseconds per unit and the units one instruction's
time buys.  CPU time (`time.process_time`), best of three; the ratios are what
matter.  On the machine the constants were chosen on: about 2 ns an
instruction; copying 0.13 ns a byte (`..`, format %s, `==`) to 0.37 (sub,
rep of a 16-byte unit), 2 ns for rep of a one-byte unit; upper, lower,
reverse, tonumber's scan 0.4 to 0.9 ns a byte; a value pushed or moved
(byte, unpack, insert's shift, move) 3.5 to 5.5 ns; table.concat 21 ns an
element; a sort 19 ns a comparison; %q of NUL bytes 41 ns a byte.
"""

from __future__ import annotations

import argparse
import time

import lupa.lua55 as lua55

L = lua55.LuaRuntime(encoding=None)
_load = L.eval("function(code) return assert(load(code)) end")
_count = L.eval("""function(code)
  local n, fn = 0, assert(load(code))
  debug.sethook(function() n = n + 1 end, '', 1000)
  fn()
  debug.sethook()
  return n * 1000
end""")

S = "local s = string.rep('x', 1e7) "
T = "local t = {} for i = 1, 1e6 do t[i] = i end "
#: name, code, units of work it does (bytes, or values where noted)
CASES = [
    ("rep (1-byte unit)", "for i = 1, 50 do local r = string.rep('x', 1e7) end", 50e7),
    ("rep (16-byte unit)", "for i = 1, 50 do local r = string.rep('abcdefghabcdefgh', 625000) end", 50e7),
    ("sub", S + "for i = 1, 50 do local r = s:sub(2) end", 50e7),
    ("`..`", S + "for i = 1, 50 do local r = s .. 'y' end", 50e7),
    ("== (long strings)", S + "local s2 = s:sub(1, -2) .. 'y' for i = 1, 50 do local r = s == s2 end", 50e7),
    ("format %s", S + "for i = 1, 50 do local r = string.format('%s', s) end", 50e7),
    ("pack c", "for i = 1, 50 do local r = string.pack('c10000000', '') end", 50e7),
    ("upper", S + "for i = 1, 50 do local r = s:upper() end", 50e7),
    ("lower", S + "for i = 1, 50 do local r = s:lower() end", 50e7),
    ("reverse", S + "for i = 1, 50 do local r = s:reverse() end", 50e7),
    ("tonumber (spaces)", "local s = string.rep(' ', 1e7) for i = 1, 50 do local r = tonumber(s) end", 50e7),
    ("format %q (NUL bytes)", "local s = string.rep('\\0', 1e6) "
     "for i = 1, 50 do local r = string.format('%q', s) end", 50e6),
    ("byte (values)", "local s = string.rep('x', 1e5) for i = 1, 50 do local r = {s:byte(1, -1)} end", 50e5),
    ("unpack (values)", T + "for i = 1, 20 do local r = select('#', table.unpack(t, 1, 5e5)) end", 20 * 5e5),
    ("insert at 1 (values moved)", T + "for i = 1, 50 do table.insert(t, 1, i) end", 50e6),
    ("remove at 1 (values moved)", T + "for i = 1, 50 do table.remove(t, 1) end", 50e6),
    ("move (values)", T + "for i = 1, 50 do table.move(t, 1, 1e6, 2) end", 50e6),
    ("table.concat (10-byte elements)", "local t = {} for i = 1, 1e6 do t[i] = 'abcdefghij' end "
     "for i = 1, 20 do local r = table.concat(t) end", 20e6),
    ("sort (n log2 n comparisons)", "local t = {} for i = 1, 1e5 do t[i] = (i * 7919) % 100003 end "
     "local c = {} for i = 1, 5 do for j = 1, 1e5 do c[j] = t[j] end table.sort(c) end", 5 * 1e5 * 17),
]


def cpu(code: str) -> float:
    fn = _load(code.encode())
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    loop = "local x = 0 for i = 1, 3e7 do x = x + i end"
    per_instruction = cpu(loop) / _count(loop.encode()) * 1e9
    print(f"VM instruction (tight loop): {per_instruction:.2f} ns")
    for name, code, units in CASES:
        ns = cpu(code) / units * 1e9
        print(f"{name:34s} {ns:8.3f} ns a unit, {per_instruction / ns:8.1f} units an instruction")


if __name__ == "__main__":
    main()
