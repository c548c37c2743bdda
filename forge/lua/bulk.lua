-- Size-proportional library calls under the run's one instruction budget.
--
-- What lives here: the sandbox's versions of the library functions whose
-- work grows with the size of their arguments or results but which run
-- inside one VM instruction, where the count hook never fires (string.rep,
-- sub, upper, lower, reverse, byte, pack, unpack, packsize, dump;
-- table.insert, remove, move, unpack, sort, create; tonumber, error),
-- the charge each makes, and the helpers prelude.lua uses to charge
-- table.concat and string.format (which it wraps for other reasons).
-- What does not: the budget itself (prelude.lua's hook and `charge`), the
-- pattern functions (patterns.lua), and the VM's own operators (`..`,
-- comparisons and number coercion of long strings, calls with many
-- values), which no library wrapper can reach: the README's budget section
-- says what they leave open.
--
-- string.char and table.pack stay C's: their work is one step per argument
-- already on the stack, which the caller paid for pushing (table.unpack is
-- charged here), and a Lua wrapper would take at most about 500,000
-- arguments where the C function takes a million.  (The wrapped string.pack
-- and string.format have that lower limit.)
--
-- Why: `for i = 1, 1e6 do local r = s:rep(100) end` spent one instruction
-- per call while copying megabytes, so a run could go on for hours under any
-- instruction budget.  Each wrapper works out from its arguments, before the
-- C function runs, how many bytes the call will copy or scan and charges
-- ceil(bytes / BYTES_PER_INSTRUCTION) instructions; then it calls the C
-- function itself, so results are Lua's own.  Nothing Lua would accept is
-- refused: a charge never exceeds what the memory cap lets a call allocate
-- (a larger result fails with Lua's own memory error before any copying),
-- so a call the budget can afford behaves as in plain Lua.
--
-- Errors stay Lua's own, position and name included.  The C function runs
-- under xpcall; the message handler, which runs before the stack unwinds,
-- tells an error the C function raised itself (its own argument checks,
-- "resulting string too large") from one raised by Lua code it called (a
-- metamethod), which passes through unchanged.  The C function's own
-- message is raised again at the caller of the wrapper, as luaL_error would
-- have placed it, with the function named as luaL_argerror would have named
-- it had the caller called it directly (the name the call site used, `self`
-- not counted in a method call).  tests/engine/test_bulk.py compares every
-- wrapper with the plain C function over many argument shapes.  Two
-- differences remain, both of any Lua wrapper (the pattern functions,
-- format and concat have them too): a failing call in tail position
-- (`return string.rep(x, {})`) has replaced its caller's frame, so its
-- message has no position and names the function by its global name
-- ('string.rep'); and a table whose __len is a metamethod has it called
-- once more (`tablen`).
--
-- Most calls take a direct path: arguments the C function cannot refuse,
-- charged and passed straight on (`wrap`).  The wrappers' own instructions
-- count like the prompt's: 10 to 30 a call.

local D = ...
local charge, getinfo = D.charge, D.getinfo
local xpcall_raw, error_raw = D.xpcall, D.error
local C = D.c                            -- the C functions, by qualified name
local MEMORY_CAP = D.max_memory
local type, select, rawlen, rawget, tostring = type, select, rawlen, rawget, tostring
local getmetatable_raw = D.getmetatable   -- debug.getmetatable: never __metatable
local tointeger, ceil, ult = math.tointeger, math.ceil, math.ult
local smatch, ssub, gmatch_c = string.match, string.sub, string.gmatch

-- Bytes of copying charged as one instruction.  Measured with lupa's Lua
-- 5.5 (benchmarks/bulk_costs.py, best of three): an ordinary VM instruction
-- costs about 2 ns; copying costs 0.13 ns a byte (`..`, format %s) to 0.37
-- (sub, rep of a 16-byte unit), so an instruction's worth is 5 to 15
-- bytes.  64 is generous by 4 to 12 times - within the order of magnitude
-- - and lets a run fill the 256 MiB memory cap for about 4 million of its
-- 20 million instructions, which the hostile catalogue's memory bombs need
-- to end on memory.  Two shapes are cheaper still to the prompt: rep of a
-- one-byte unit (a memcpy call a byte: 2 ns a byte) and %q of control
-- bytes (40 ns a byte, charged as an instruction); a single call is still
-- bounded by the memory cap (about half a second), and a loop of them ends
-- within seconds.
local BYTES_PER_INSTRUCTION = 64
-- Work that is not a plain copy, in bytes of copying (same measurement):
-- a byte converted one at a time (upper, lower, reverse, tonumber's scan:
-- 0.4 to 0.9 ns a byte), and one value pushed, read or written through the
-- API (byte, unpack, insert's shift, move: 3.5 to 5.5 ns a value).
local SCAN_WEIGHT = 4
local VALUE_BYTES = 64
-- A sort costs about n * log2(n) comparisons of about 19 ns each.
local COMPARISON_BYTES = 128
-- The most values one call can push: Lua's stack limit (LUAI_MAXSTACK);
-- past it the C function fails before doing any work.
local MAX_STACK = 1000000
-- No charge exceeds this many instructions (it keeps the counter far from
-- overflow; the budget is far smaller).
local MAX_CHARGE = 1 << 40

local SMALL = 256    -- see `wrap`
local function charge_bytes(bytes)
  if bytes > SMALL then
    local n = ceil(bytes / BYTES_PER_INSTRUCTION)
    if not (n <= MAX_CHARGE) then n = MAX_CHARGE end
    charge(n)
  end
end
-- Bytes a call may allocate and fill: never more than the memory cap, past
-- which the allocation fails before any copying.
local function charge_result(bytes)
  if bytes > MEMORY_CAP then bytes = MEMORY_CAP end
  charge_bytes(bytes)
end

---------------------------------------------------------------------------
-- Calling the C function with its own errors.
---------------------------------------------------------------------------
local BOX = {}

-- Lua's message for a bad argument as luaL_argerror words it for a call
-- site named `name` (`namewhat` as debug.getinfo gives it): `self` is not
-- counted in a method call.  A nameless site (a call from pcall) gets the
-- function's global name, as pushglobalfuncname finds it.
local function renamed(msg, name, namewhat)
  local k, rest = smatch(msg, "^bad argument #(%d+) to '[^']*' (.*)$")
  if k == nil then return msg end
  local arg = tointeger(k)
  if namewhat == 'method' then
    arg = arg - 1
    if arg == 0 then return "calling '" .. name .. "' on bad self " .. rest end
  end
  return "bad argument #" .. arg .. " to '" .. name .. "' " .. rest
end

-- The C function runs from this Lua frame, so the position luaL_error
-- gives its own messages is this line's, which the handler recognises and
-- strips; an error Lua raises inside the C function (a comparison in sort)
-- has no position, as in a direct call.  Its results come back packed: a
-- Lua function cannot take the million values a C function may return.
local tpack, tunpack = table.pack, table.unpack
local function through(f, ...) return tpack(f(...)) end

-- The message handler and the result filter for one C function, called as
-- `finish(xpcall_raw(through, handler, cfn, ...))`.  The handler sees the
-- stack as it was when the error was raised: level 2 is the function that
-- raised it, 3 `through`, 5 the wrapper (above xpcall).
local function protected(cfn, qualified)
  local function handler(e)
    local info = getinfo(2, 'f')
    if info == nil or info.func ~= cfn or type(e) ~= 'string' then return { BOX, e } end
    local at = getinfo(3, 'Sl')
    local prefix = at.short_src .. ':' .. at.currentline .. ': '
    if ssub(e, 1, #prefix) ~= prefix then return { BOX, e } end
    local site = getinfo(5, 'n')
    local name, namewhat = site and site.name, site and site.namewhat
    return { BOX, ssub(e, #prefix + 1), true, name or qualified, namewhat }
  end
  -- Called in tail position by the wrapper, so level 2 is the wrapper's caller.
  local function finish(ok, box)
    if ok then return tunpack(box, 1, box.n) end
    -- A memory error reaches xpcall without its handler.
    if type(box) ~= 'table' or rawget(box, 1) ~= BOX then error_raw(box, 0) end
    if not box[3] then error_raw(box[2], 0) end
    error_raw(renamed(box[2], box[4], box[5]), 2)
  end
  return handler, finish
end

-- The length luaL_checklstring sees (a number is converted), or nil.
local function strlen(v)
  local t = type(v)
  if t == 'string' then return #v end
  if t == 'number' then return #tostring(v) end
  return nil
end

-- The length luaL_len takes of a table argument, when it is known without
-- running Lua code: a table with a __len metamethod has its length taken
-- here once more (the one difference from plain Lua: a __len with side
-- effects sees one call more; without it a lying __len could make one call
-- shift billions of elements uncharged).
local function tablen(t)
  if type(t) ~= 'table' then return nil end
  local mt = getmetatable_raw(t)
  if mt == nil or rawget(mt, '__len') == nil then return rawlen(t) end
  local ok, n = D.pcall(function() return #t end)
  if not ok then return nil end        -- the C function fails the same way
  return tointeger(n)
end

-- Most calls take the direct path: when the arguments have a shape the C
-- function cannot refuse (checked by the function's entry in `DS`/`DT`,
-- which also works out the charge), the wrapper charges and calls the C
-- function itself, with no protection to pay for.  Any other shape takes
-- the protected path, whose charge is the function's entry in `S`/`T`.  A
-- call whose work is at most SMALL bytes' worth is not charged: its work is
-- a few instructions' worth, less than the wrapper's own instructions,
-- which the hook counts.

local function never() return nil end
local function wrap(cfn, qualified, cost, direct)
  local handler, finish = protected(cfn, qualified)
  direct = direct or never
  return function(...)
    local n = direct(...)
    if n then
      if n > 0 then charge(n) end
      return cfn(...)
    end
    cost(...)
    return finish(xpcall_raw(through, handler, cfn, ...))
  end
end

-- The instructions `bytes` bytes of copying are charged, or 0 for a small call.
local function instructions(bytes)
  if bytes <= SMALL then return 0 end
  if bytes > MEMORY_CAP then bytes = MEMORY_CAP end
  return (bytes + BYTES_PER_INSTRUCTION - 1) // BYTES_PER_INSTRUCTION
end

---------------------------------------------------------------------------
-- The charges, one per function, computed from the arguments as the C
-- function will read them.  An argument the C function refuses charges
-- nothing: the call fails before any work.
---------------------------------------------------------------------------
local S = {}

-- Start and end of a range as str_sub/str_byte compute them (posrelatI, getendpos).
local function range(l, i, j)
  if i > 0 then elseif i == 0 then i = 1 elseif i < -l then i = 1 else i = l + i + 1 end
  if j > l then j = l elseif j >= 0 then elseif j < -l then j = 0 else j = l + j + 1 end
  return i, j
end

S.rep = function(s, n, sep)
  local ls, k = strlen(s), n ~= nil and tointeger(n)
  local lsep = sep == nil and 0 or strlen(sep)
  -- Lua refuses a result past its largest string size at once ("resulting
  -- string too large", before any work): nothing to charge.
  if ls and k and lsep and k > 0 and ls + lsep <= math.maxinteger // k then
    charge_result((ls + lsep + 0.0) * k)
  end
end

S.sub = function(s, i, j)
  local l, a, b = strlen(s), i ~= nil and tointeger(i), j == nil and -1 or tointeger(j)
  if l and a and b then
    a, b = range(l, a, b)
    if b >= a then charge_bytes(b - a + 1) end
  end
end

S.byte = function(s, i, j)
  local l, a = strlen(s), i == nil and 1 or tointeger(i)
  local b = j == nil and a or tointeger(j)
  if l and a and b then
    a, b = range(l, a, b)
    if b >= a then charge_bytes(VALUE_BYTES * math.min(b - a + 1, MAX_STACK)) end
  end
end

local function scan(s)
  local l = strlen(s)
  if l then charge_bytes(SCAN_WEIGHT * l) end
end
S.upper, S.lower, S.reverse = scan, scan, scan


-- pack and packsize read the format once; pack's result holds each string
-- argument and whatever sizes the format names (`c1000000` is a million
-- bytes of padding): the sum of every number in the format bounds those.
local function format_bytes(fmt)
  if type(fmt) ~= 'string' and type(fmt) ~= 'number' then return 0 end
  fmt = tostring(fmt)
  charge_bytes(SCAN_WEIGHT * #fmt)
  local sizes = 0
  for digits in gmatch_c(fmt, '%d+') do
    local v = tointeger(digits)
    sizes = sizes + (v or MEMORY_CAP)
    if sizes > MEMORY_CAP then return MEMORY_CAP end
  end
  return sizes
end

S.pack = function(fmt, ...)
  local bytes, n = format_bytes(fmt), select('#', ...)
  if n > 0 then
    local args = { ... }
    for i = 1, n do bytes = bytes + (strlen(args[i]) or 0) + 16 end
  end
  charge_result(bytes)
end

S.packsize = function(fmt)
  format_bytes(fmt)
end

S.unpack = function(fmt, data)
  format_bytes(fmt)
  local l = strlen(data)
  if l then charge_bytes(l) end
end

local T = {}

T.insert = function(...)
  if select('#', ...) ~= 3 then return end
  local t, pos = ...
  local e, p = tablen(t), tointeger(pos)
  if e and p and ult(p - 1, e + 1) and e + 1 > p then
    charge_bytes(VALUE_BYTES * math.min(e + 1 - p, MAX_CHARGE))
  end
end

T.remove = function(t, pos)
  local size = tablen(t)
  if size == nil then return end
  local p = pos == nil and size or tointeger(pos)
  if p and p >= 1 and p < size then
    charge_bytes(VALUE_BYTES * math.min(size - p, MAX_CHARGE))
  end
end

T.move = function(a1, f, e, t, a2)
  local a, b, d = tointeger(f), tointeger(e), tointeger(t)
  local dest = a2 == nil and a1 or a2
  if not (a and b and d and b >= a and type(dest) == 'table') then return end
  if type(a1) ~= 'table' and type(a1) ~= 'string' then return end
  -- Lua's own range checks come first ("too many elements to move",
  -- "destination wrap around"): such a call fails before any work.
  if not (a > 0 or b < math.maxinteger + a) then return end
  local n = b - a + 1
  if d > math.maxinteger - n + 1 then return end
  charge_bytes(VALUE_BYTES * math.min(n, MAX_CHARGE))
end

T.unpack = function(list, i, j)
  if type(list) ~= 'table' then return end
  local a = i == nil and 1 or tointeger(i)
  local b
  if j == nil then b = tablen(list) else b = tointeger(j) end
  if a and b and b >= a then
    local n = b - a + 1
    -- Past the stack limit (or an overflowing range) Lua fails at once.
    if n > 0 and n <= MAX_STACK then charge_bytes(VALUE_BYTES * n) end
  end
end


T.sort = function(t, comp)
  local n = tablen(t)
  if comp ~= nil and type(comp) ~= 'function' then return end
  if n and n > 1 and n < 0x7fffffff then
    local levels = 1
    while (1 << levels) < n do levels = levels + 1 end
    charge_bytes(COMPARISON_BYTES * n * levels)
  end
end

T.create = function(narray, nhash)
  local a, h = tointeger(narray), nhash == nil and 0 or tointeger(nhash)
  if a and h and a >= 0 and h >= 0 and a <= 0x7fffffff and h <= 0x7fffffff then
    charge_result(16.0 * a + 40.0 * h)
  end
end

local B = {}
B.tonumber = function(v)
  if type(v) == 'string' then charge_bytes(SCAN_WEIGHT * #v) end
end

---------------------------------------------------------------------------
-- The direct path: argument shapes the C function cannot refuse, and their
-- charge in instructions (nil: take the protected path).
---------------------------------------------------------------------------
local mtype = math.type
-- Past this many bytes a result may be "too large" for Lua (an error the
-- protected path must word); far past the memory cap.
local HUGE = 1 << 40
local DS, DT = {}, {}

DS.rep = function(s, n, sep)
  if type(s) ~= 'string' or mtype(n) ~= 'integer' then return nil end
  local l = #s
  if sep ~= nil then
    if type(sep) ~= 'string' then return nil end
    l = l + #sep
  end
  if n <= 0 or l == 0 then return 0 end
  if n > HUGE // l then return nil end
  return instructions(n * l)
end

DS.sub = function(s, i, j)
  if type(s) ~= 'string' or mtype(i) ~= 'integer' then return nil end
  if j == nil then j = -1 elseif mtype(j) ~= 'integer' then return nil end
  local a, b = range(#s, i, j)
  return b >= a and instructions(b - a + 1) or 0
end

-- Past this many values the stack check may refuse a call (at any depth
-- but the deepest, far more can be pushed): the protected path words it.
local MANY = 8000
DS.byte = function(s, i, j)
  if type(s) ~= 'string' then return nil end
  if i == nil then i = 1 elseif mtype(i) ~= 'integer' then return nil end
  if j == nil then j = i elseif mtype(j) ~= 'integer' then return nil end
  local a, b = range(#s, i, j)
  if b < a then return 0 end
  if b - a >= MANY then return nil end
  return instructions(VALUE_BYTES * (b - a + 1))
end

local function scanned(s)
  if type(s) ~= 'string' then return nil end
  return instructions(SCAN_WEIGHT * #s)
end
DS.upper, DS.lower, DS.reverse = scanned, scanned, scanned


local function plain(t) return type(t) == 'table' and getmetatable_raw(t) == nil end
DT.insert = function(...)
  local t, pos = ...
  local n = select('#', ...)
  if not plain(t) then return nil end
  if n == 2 then return 0 end
  if n ~= 3 or mtype(pos) ~= 'integer' then return nil end
  local e = rawlen(t) + 1
  if pos < 1 or pos > e then return nil end
  return instructions(VALUE_BYTES * (e - pos))
end
DT.remove = function(t, pos)
  if not plain(t) then return nil end
  local size = rawlen(t)
  if pos == nil then return 0 end
  if mtype(pos) ~= 'integer' or pos < 1 or pos > size + 1 then return nil end
  return pos < size and instructions(VALUE_BYTES * (size - pos)) or 0
end
DT.unpack = function(list, i, j)
  if not plain(list) then return nil end
  if i == nil then i = 1 elseif mtype(i) ~= 'integer' then return nil end
  if j == nil then j = rawlen(list) elseif mtype(j) ~= 'integer' then return nil end
  if j < i then return 0 end
  if i <= 0 or j - i >= MANY then return nil end
  return instructions(VALUE_BYTES * (j - i + 1))
end

local M = { string = {}, table = {} }
for name, cost in pairs(S) do
  M.string[name] = wrap(C['string.' .. name], 'string.' .. name, cost, DS[name])
end
for name, cost in pairs(T) do
  M.table[name] = wrap(C['table.' .. name], 'table.' .. name, cost, DT[name])
end

-- The most used functions get the direct path written out in the wrapper
-- (no call to a checker: the wrapper's instructions count like the
-- prompt's, and a text loop calls sub or byte once a character).
do
  local sub_c, sub_cost = C['string.sub'], S.sub
  local handler, finish = protected(sub_c, 'string.sub')
  M.string.sub = function(...)
    local s, i, j = ...
    if type(s) == 'string' and mtype(i) == 'integer' and (j == nil or mtype(j) == 'integer') then
      local l = #s
      if l <= SMALL then return sub_c(...) end
      local a, b = range(l, i, j or -1)
      if b - a >= SMALL then charge((b - a + BYTES_PER_INSTRUCTION) // BYTES_PER_INSTRUCTION) end
      return sub_c(...)
    end
    sub_cost(...)
    return finish(xpcall_raw(through, handler, sub_c, ...))
  end
end
do
  local byte_c, byte_cost = C['string.byte'], S.byte
  local handler, finish = protected(byte_c, 'string.byte')
  M.string.byte = function(...)
    local s, i, j = ...
    if type(s) == 'string' and (i == nil or mtype(i) == 'integer') then
      if j == nil then return byte_c(...) end         -- one byte at most
      if mtype(j) == 'integer' then
        local a, b = range(#s, i or 1, j)
        if b - a < MANY then
          if b - a >= 4 then charge(b - a + 1) end    -- a value pushed is an instruction
          return byte_c(...)
        end
      end
    end
    byte_cost(...)
    return finish(xpcall_raw(through, handler, byte_c, ...))
  end
end
do
  local rep_c, rep_cost = C['string.rep'], S.rep
  local handler, finish = protected(rep_c, 'string.rep')
  M.string.rep = function(...)
    local s, n, sep = ...
    if sep == nil and type(s) == 'string' and mtype(n) == 'integer' then
      local l = #s
      if n <= 0 or l == 0 then return rep_c(...) end
      if n <= HUGE // l then
        local bytes = n * l
        if bytes > SMALL then
          charge(bytes <= MEMORY_CAP and (bytes + BYTES_PER_INSTRUCTION - 1) // BYTES_PER_INSTRUCTION
                 or instructions(bytes))
        end
        return rep_c(...)
      end
    end
    rep_cost(...)
    return finish(xpcall_raw(through, handler, rep_c, ...))
  end
end
for _, name in ipairs({ 'upper', 'lower', 'reverse' }) do
  local c_fn, cost = C['string.' .. name], S[name]
  local handler, finish = protected(c_fn, 'string.' .. name)
  M.string[name] = function(...)
    local s = ...
    if type(s) == 'string' then
      if #s > SMALL // SCAN_WEIGHT then charge(instructions(SCAN_WEIGHT * #s)) end
      return c_fn(...)
    end
    cost(...)
    return finish(xpcall_raw(through, handler, c_fn, ...))
  end
end
do
  local tonumber_c, cost = C.tonumber, B.tonumber
  local handler, finish = protected(tonumber_c, 'tonumber')
  M.tonumber = function(...)
    local v, base = ...
    if base == nil and select('#', ...) > 0 then
      if type(v) == 'string' and #v > SMALL // SCAN_WEIGHT then
        charge(instructions(SCAN_WEIGHT * #v))
      end
      return tonumber_c(...)
    end
    cost(...)
    return finish(xpcall_raw(through, handler, tonumber_c, ...))
  end
end

-- string.dump's work is bounded by the size of the function's code, which
-- the prompt's size limit bounds; it is charged by its result, after.
do
  local dump_c = C['string.dump']
  local handler, finish = protected(dump_c, 'string.dump')
  M.string.dump = function(...)
    local ok, r = xpcall_raw(through, handler, dump_c, ...)
    if ok then charge_bytes(#r[1]) end
    return finish(ok, r)
  end
end

-- error prefixes a string message with the position of the level it names,
-- which copies the message: a long message raised in a loop under pcall
-- copies it each time.  The wrapper charges the copy and calls the C
-- function one level further up, so the position is the one Lua gives.
do
  local error_c = C.error
  local handler, finish = protected(error_c, 'error')
  -- Level k counts the frames a prompt can see: the sandbox's own Lua
  -- functions between them (its pcall and xpcall, the wrappers here) are
  -- not counted, so `pcall(error, msg, 2)` names the line that called
  -- pcall, as Lua does.  The level is relative to the wrapper below (1 is
  -- the wrapper itself); past the stack's end, no position.
  local function visible_level(k)
    local level, seen = 2, 0
    while true do
      local info = getinfo(level + 1, 'S')
      if info == nil then return level end
      if ssub(info.source, 1, 7) ~= '=forge/' then
        seen = seen + 1
        if seen == k then return level end
      end
      level = level + 1
    end
  end
  M.error = function(...)
    local msg, level = ...
    local k = level == nil and 1 or tointeger(level)
    -- A level that is no integer: Lua's own argument error.
    if k == nil then return finish(xpcall_raw(through, handler, error_c, ...)) end
    k = ((k + 0x80000000) & 0xffffffff) - 0x80000000   -- C reads the level as an int
    if k > 0 then
      if type(msg) == 'string' then charge_bytes(#msg) end
      error_raw(msg, k == 1 and 2 or visible_level(k))
    end
    error_raw(msg, k)
  end
end

-- For prelude.lua: the charges of the functions it wraps itself, and the
-- protection it calls them under.
M.protected, M.through = protected, through
M.charge_bytes = charge_bytes
M.charge_result = charge_result
M.BYTES_PER_INSTRUCTION = BYTES_PER_INSTRUCTION
M.VALUE_BYTES = VALUE_BYTES

return M
