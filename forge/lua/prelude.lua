-- The engine's Lua side, loaded once per runtime into a private environment
-- (a reused runtime sets its per-run state back with `E.reset`).
--
-- What lives here: the deterministic pairs/next, host error values, the
-- sandbox's pcall/xpcall, the var guard, the bridge that turns host calls
-- into coroutine yields, the instruction budget, and the builder of a fresh
-- section VM environment (its string, table and basic functions; the
-- charged versions of the size-proportional ones come from bulk.lua, the
-- pattern functions from patterns.lua).  What does not: any decision about the walk,
-- tasks or time - those are Python's, reached through `suspend` (a yield to
-- the driver) or through host functions that answer at once.
--
-- Everything here captures the standard functions it needs as upvalues
-- before any prompt code runs, so a prompt that rebinds a global in its own
-- environment cannot reach into the engine.

local H = ...                           -- host table from Python: limits
local rawget, rawset, rawequal, rawlen = rawget, rawset, rawequal, rawlen
local next_raw, type, select, error = next, type, select, error
local setmetatable, getmetatable = setmetatable, getmetatable
local pcall_raw, xpcall_raw = pcall, xpcall
local tostring, tonumber, ipairs = tostring, tonumber, ipairs
local string, table, math = string, table, math
local tsort, tconcat, tpack, tunpack = table.sort, table.concat, table.pack, table.unpack
local mtype, sbyte, sformat = math.type, string.byte, string.format
-- The C matchers, for the engine's own patterns (fixed, on short strings):
-- the sandbox's string library gets the bounded ones (patterns.lua).
local sfind, smatch, sgsub = string.find, string.match, string.gsub
local yield, isyieldable = coroutine.yield, coroutine.isyieldable
local cocreate, coresume = coroutine.create, coroutine.resume
local sethook = debug.sethook
local utf8len = utf8 and utf8.len

local E = {}

---------------------------------------------------------------------------
-- Type names as prompts see them: integer vs number.
---------------------------------------------------------------------------
local function typename(v)
  local t = type(v)
  if t == 'number' then
    return mtype(v) == 'integer' and 'integer' or 'number'
  end
  return t
end
E.typename = typename

---------------------------------------------------------------------------
-- Host error values: tables with kind and message, marked in a weak set so
-- the engine can tell them from tables a prompt raises itself.
---------------------------------------------------------------------------
local host_errors = setmetatable({}, { __mode = 'k' })
local ErrorMT = {
  __metatable = 'error value',
  __tostring = function(e) return rawget(e, 'message') end,
  __concat = function(a, b)
    local sa = (type(a) == 'table' and host_errors[a]) and rawget(a, 'message') or a
    local sb = (type(b) == 'table' and host_errors[b]) and rawget(b, 'message') or b
    return sa .. sb
  end,
}
local function make_error(kind, message, fields)
  local e = { kind = kind, message = message or kind }
  if fields then
    for k, v in next_raw, fields do e[k] = v end
  end
  setmetatable(e, ErrorMT)
  host_errors[e] = true
  return e
end
E.make_error = make_error
E.is_host_error = function(v) return type(v) == 'table' and host_errors[v] == true end

---------------------------------------------------------------------------
-- The abort flag: set when the run must stop whatever the prompt catches
-- (instruction budget, memory).  Once set, every sandbox pcall re-raises.
---------------------------------------------------------------------------
local abort = nil
E.abort_value = function() return abort end
-- The engine aborts the run itself (an internal error): set the value once.
E.abort_with = function(e)
  if abort == nil then abort = e end
  return abort
end
local function check_abort()
  if abort ~= nil then error(abort, 0) end
end

local function is_memory_error(e)
  return e == 'not enough memory'
end

local function pcall_safe(f, ...)
  local r = tpack(pcall_raw(f, ...))
  check_abort()
  if not r[1] and is_memory_error(r[2]) then
    abort = make_error('lua', 'not enough memory: the run exceeded its Lua memory limit')
    error(abort, 0)
  end
  return tunpack(r, 1, r.n)
end

local function xpcall_safe(f, handler, ...)
  local r = tpack(xpcall_raw(f, function(e)
    if abort ~= nil then return abort end
    return handler(e)
  end, ...))
  check_abort()
  return tunpack(r, 1, r.n)
end

---------------------------------------------------------------------------
-- Instruction budget: a count hook on each block's thread.  Hooks are not
-- inherited by coroutines, so `run_block` installs it on every thread it
-- starts.
---------------------------------------------------------------------------
local HOOK_EVERY = 1000
local budget = H.max_instructions
local budget_message = H.budget_message
local used = 0
-- Work done outside the VM on the run's behalf (a C pattern match, whose
-- steps the hook cannot see: patterns.lua; a library call whose work grows
-- with its arguments' size, such as string.rep or table.insert at the
-- front: bulk.lua) is charged here, before it is done; the hook charges the
-- instructions it counted.  What one VM instruction does to a long value
-- (`..`, comparing two long strings, a call with many values) is neither
-- counted nor charged: README.md's budget section says why.
local collectgarbage_raw = collectgarbage
local function spend(n)
  used = used + n
  if abort ~= nil then error(abort, 0) end
  if used > budget then
    abort = make_error('lua', budget_message)
    error(abort, 0)
  end
end
-- Charged work since the collector last ran in full, and how much of it
-- makes the engine run it.  The C library builds a result of more than a
-- few hundred bytes in a buffer it takes from the allocator directly: the
-- collector never counts those bytes, so it does not run for them, and a
-- failed allocation there is a memory error at once, without the emergency
-- collection Lua's own allocations get.  A loop of large upper() or rep()
-- calls would fill the memory cap with its own garbage and fail.  So every
-- 2^20 instructions charged (64 MiB of copying at bulk.lua's rate), before
-- the call that crosses it does its work, the collector runs in full: the
-- points depend on the charges alone, so a run collects at the same calls on
-- any runtime, and only live values decide whether a call runs out of
-- memory.  Collecting is invisible to a prompt (no finalizers, and a prompt
-- that names weak tables runs on a fresh runtime).
local COLLECT_EVERY = 1 << 20
local pending = 0
local function charge(n)
  spend(n)
  pending = pending + n
  if pending >= COLLECT_EVERY then
    pending = 0
    collectgarbage_raw('collect')
  end
end
-- The CPU-time backstop (forge/lua/backstop.py says how and why).  The
-- hook reads the process's CPU clock at each firing, and past the run's
-- deadline ends the run with an error of kind `backstop`; a run that never
-- reaches the deadline sees nothing of it.  Past the deadline the watchdog
-- makes every registered thread's hook fire at each instruction, so a loop
-- of long instructions (`..` on 100 MB) stops at the next one.  `live` keeps
-- each registered thread alive while it is registered, so the watchdog
-- never touches a freed one.
local cpu_clock = os.clock
local cpu_deadline = H.cpu_deadline
local cpu_message = H.cpu_message
local register_thread = H.register_thread
local running, costatus = coroutine.running, coroutine.status
-- A finished block thread is let go at a later registration, once the
-- registered threads have doubled since the last sweep (no instruction may
-- follow a block's own pcall: see `run_block`).
local live, live_count, sweep_at = {}, 0, 64
local function unregister(co)
  if live[co] ~= nil then
    live[co] = nil
    live_count = live_count - 1
    register_thread(tostring(co), false)
  end
end
local function register()
  local co = running()
  if live[co] == nil then
    if live_count >= sweep_at then
      for t in next_raw, live do
        if costatus(t) == 'dead' then unregister(t) end
      end
      sweep_at = 2 * (live_count > 32 and live_count or 32)
    end
    live[co] = true
    live_count = live_count + 1
    register_thread(tostring(co), true)
  end
  return co
end
local getinfo = debug.getinfo
local run_block             -- E.run_block, below
local function hook()
  if abort ~= nil or cpu_clock() > cpu_deadline then
    if abort == nil then abort = make_error('backstop', cpu_message) end
    -- A hook firing at every instruction fires in `run_block` after the
    -- block's pcall has returned the abort: raising there would end the
    -- coroutine with an error instead of that result.
    if getinfo(2, 'f').func == run_block then return end
    error(abort, 0)
  end
  spend(HOOK_EVERY)
end
E.instructions_used = function() return used end
E.charge = charge

---------------------------------------------------------------------------
-- Deterministic iteration: array part, booleans, numbers, strings bytewise,
-- then every other key in a stable trailing order.
---------------------------------------------------------------------------
local TWO63 = 9223372036854775808.0
local function key_class(k)
  local t = type(k)
  if t == 'boolean' then return 1 end
  if t == 'number' then
    if k ~= k or k == math.huge or k == -math.huge then return 4 end
    return 2
  end
  if t == 'string' then
    if utf8len and utf8len(k) == nil then return 4 end
    return 3
  end
  return 4
end

-- Exact comparison of two numbers of any subtype (integers past 2^53 keep
-- their place; floats outside the 64-bit range sort beyond every integer).
local function num_less(a, b)
  local ta, tb = mtype(a), mtype(b)
  if ta == tb then return a < b end
  return a < b    -- Lua 5.4+ compares mixed integer/float exactly
end

-- One number per object for the whole run, given in order of first need:
-- what stands in for an address wherever Lua would show or order by one.
local serials = setmetatable({}, { __mode = 'k' })
local next_serial = 0
local function serial_of(k)
  local s = serials[k]
  if s == nil then
    next_serial = next_serial + 1
    s = next_serial
    serials[k] = s
  end
  return s
end
E.serial = serial_of

local function key_less(a, b)
  local ca, cb = key_class(a), key_class(b)
  if ca ~= cb then return ca < cb end
  if ca == 1 then return a == false and b == true end
  if ca == 2 then return num_less(a, b) end
  if ca == 3 then return a < b end
  -- Trailing group: strings first (bytewise), then numbers, then objects.
  -- The spec leaves the order of object keys (tables, functions, userdata)
  -- open.  They get serials in order of first sight, and first sight
  -- follows Lua's hash order, which depends on addresses: this is the one
  -- order the kit cannot make reproducible across processes.
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    local rank = { string = 1, number = 2 }
    return (rank[ta] or 3) < (rank[tb] or 3) or ((rank[ta] or 3) == (rank[tb] or 3) and ta < tb)
  end
  if ta == 'string' or ta == 'number' then
    if a ~= a then return false end
    if b ~= b then return true end
    return a < b
  end
  return serial_of(a) < serial_of(b)
end

-- Section environments whose library tables are not copied yet, each with
-- the ones still to copy (`section_env`); `materialize` copies them all.
-- Every walk over a table's keys goes through `ordered_keys`, which does it
-- first, so no walk can tell a pending table from a copied one.
local lazy_envs = setmetatable({}, { __mode = 'k' })
local materialize

local function ordered_keys(t)
  if lazy_envs[t] ~= nil then materialize(t) end
  local keys, n = {}, 0
  local border = rawlen(t)
  for i = 1, border do
    if rawget(t, i) ~= nil then n = n + 1; keys[n] = i end
  end
  local rest, m = {}, 0
  local k = next_raw(t)
  while k ~= nil do
    if not (mtype(k) == 'integer' and k >= 1 and k <= border) then
      m = m + 1; rest[m] = k
    end
    k = next_raw(t, k)
  end
  -- Objects get serials in a sorted-by-class pass so first sight is stable
  -- for scalar-only tables; object keys among themselves stay first-seen.
  tsort(rest, key_less)
  for i = 1, m do keys[n + i] = rest[i] end
  return keys, n + m
end

local function pairs_ordered(t)
  local mt = getmetatable(t)
  if type(mt) == 'table' then
    local p = rawget(mt, '__pairs')
    if p ~= nil then
      if type(p) ~= 'function' then
        error(sformat("attempt to call a %s value (metamethod '__pairs')", type(p)), 2)
      end
      return p(t)
    end
  end
  if type(t) ~= 'table' then
    error(sformat("bad argument #1 to 'pairs' (table expected, got %s)", type(t) == 'nil' and 'nil' or typename(t) == 'integer' and 'number' or type(t)), 2)
  end
  local keys, n = ordered_keys(t)
  local i = 0
  local function iter()
    while i < n do
      i = i + 1
      local k = keys[i]
      local v = rawget(t, k)
      if v ~= nil then return k, v end
    end
    return nil, nil
  end
  return iter, t, nil
end

local function next_ordered(t, k)
  if type(t) ~= 'table' then
    error(sformat("bad argument #1 to 'next' (table expected, got %s)", type(t)), 2)
  end
  local keys, n = ordered_keys(t)
  if k == nil then
    if n == 0 then return nil, nil end
    return keys[1], rawget(t, keys[1])
  end
  for i = 1, n do
    if rawequal(keys[i], k) then
      local nk = keys[i + 1]
      if nk == nil then return nil, nil end
      return nk, rawget(t, nk)
    end
  end
  -- The key was cleared during the walk: continue from where it would sort.
  if mtype(k) == 'integer' and rawget(t, k + 1) ~= nil and k >= 1 then
    return k + 1, rawget(t, k + 1)
  end
  if type(k) == 'number' then
    if n == 0 then return nil, nil end
    return keys[1], rawget(t, keys[1])
  end
  for i = 1, n do
    local c = keys[i]
    if not (mtype(c) == 'integer' and c >= 1 and c <= rawlen(t)) and key_less(k, c) then
      return c, rawget(t, c)
    end
  end
  return nil, nil
end
E.ordered_keys = ordered_keys

---------------------------------------------------------------------------
-- JSON data: the values var, items and results may hold.
---------------------------------------------------------------------------
local function json_check(v, path, seen)
  local t = type(v)
  if t == 'nil' or t == 'boolean' or t == 'string' then return nil end
  if t == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then
      return path .. ' must be JSON data, got number'
    end
    return nil
  end
  if t ~= 'table' then return path .. ' must be JSON data, got ' .. t end
  seen = seen or {}
  if seen[v] then return path .. ' must be JSON data, got table' end
  seen[v] = true
  local keys, n = ordered_keys(v)
  for i = 1, n do
    local k = keys[i]
    local sub
    local kt = type(k)
    if kt == 'string' and smatch(k, '^[%a_][%w_]*$') then
      sub = path .. '.' .. k
    elseif kt == 'string' or kt == 'number' then
      sub = path .. '[' .. tostring(k) .. ']'
    else
      sub = path .. '[' .. kt .. ']'     -- never an address: messages are reproducible
    end
    if kt ~= 'string' and math.type(k) ~= 'integer' then
      return sub .. ' must be JSON data, got ' .. kt   -- a key names an object field or an index
    end
    local err = json_check(rawget(v, k), sub, seen)
    if err then return err end
  end
  seen[v] = nil
  return nil
end
E.json_check = json_check

local function deep_copy(v)
  if type(v) ~= 'table' then return v end
  local out = {}
  local k = next_raw(v)
  while k ~= nil do
    out[k] = deep_copy(rawget(v, k))
    k = next_raw(v, k)
  end
  return out
end
E.deep_copy = deep_copy

---------------------------------------------------------------------------
-- The var guard: a proxy whose writes are checked and copied.
---------------------------------------------------------------------------
local guarded = setmetatable({}, { __mode = 'k' })   -- proxy -> backing

-- Metamethods that capture nothing, shared by every sealed table (a
-- closure made per table would cost an allocation each, for nothing a
-- prompt can tell apart: the metatables are protected).
local function length_zero() return 0 end
local function no_pairs(t) return function() return nil end, t, nil end

local function var_proxy(backing, path)
  local proxy = {}
  guarded[proxy] = backing
  setmetatable(proxy, {
    __index = function(_, k)
      local v = backing[k]
      if type(v) == 'table' then
        local sub = type(k) == 'string' and (path .. '.' .. k) or (path .. '[' .. tostring(k) .. ']')
        return var_proxy(v, sub)
      end
      return v
    end,
    __newindex = function(_, k, v)
      local kt = type(k)
      if kt ~= 'string' and math.type(k) ~= 'integer' then
        local shown = kt == 'number' and tostring(k) or kt
        error(make_error('lua', path .. '[' .. shown .. '] must be JSON data, got ' .. kt), 2)
      end
      local sub = kt == 'string' and (path .. '.' .. k) or (path .. '[' .. tostring(k) .. ']')
      if guarded[v] then v = guarded[v] end
      local err = json_check(v, sub)
      if err then error(make_error('lua', err), 2) end
      backing[k] = deep_copy(v)
    end,
    __len = length_zero,
    __pairs = no_pairs,
    __metatable = 'var is guarded',
  })
  return proxy
end
E.var_proxy = var_proxy
E.var_backing = function(proxy) return guarded[proxy] end
E.var_intact = function(env, backing)
  local v = rawget(env, 'var')
  return v ~= nil and rawequal(guarded[v], backing)
end

---------------------------------------------------------------------------
-- The bridge.  A suspending call yields its request to the Python driver,
-- which resumes the block with (true, values...) or (false, error value).
-- A host function that answers at once returns the same shape directly.
---------------------------------------------------------------------------
local function check(ok, ...)
  if ok then return ... end
  error((...), 0)
end

-- True while a section VM replays the shared library, which runs at top
-- level, outside any coroutine: there suspending calls cannot wait, and the
-- store's calls run directly.
local loading_library = false

-- How many guarded calls (`E.guarded`, below) are running: a suspending call
-- inside one cannot wait, as in any call Python makes into Lua.
local guard_depth = 0

local function suspend(op, ...)
  if loading_library then
    error('attempt to yield from outside a coroutine', 0)
  end
  if guard_depth > 0 or not isyieldable() then
    error(make_error('lua', op .. ' cannot wait here: a suspending call is not allowed inside a metamethod, a sort comparator or a gsub callback'), 0)
  end
  return check(yield(op, ...))
end
E.suspend = suspend

local function host(f)
  return function(...) return check(f(...)) end
end
E.host = host
-- A task handle; a host function answering a task's id gives one.
local function task_handle(id) return { task = id } end
E.task_handle = task_handle
local function handle_host(f)
  return function(...) return task_handle(check(f(...))) end
end
E.suspender = function(op)
  return function(...) return suspend(op, ...) end
end

-- A store function: it waits on the harness, except during the shared
-- library's load, where it runs directly.
E.store_function = function(op, direct)
  return function(...)
    if loading_library then return direct(...) end
    return suspend(op, ...)
  end
end

-- The host library in one call, from flat (kind, name, value) triples:
-- kind `host` wraps a Python function answering at once, `handle` one
-- answering a task id with that task's handle, `suspend` makes a
-- suspending call named `name`, `store` a store function (`value` is its
-- direct form), `value` takes `value` as it is.  A dotted name goes into
-- its namespace table.  One call instead of one per function: each crossing
-- from Python into Lua costs more than the Lua work it does here.
E.build_library = function(...)
  local spec, lib = tpack(...), {}
  for i = 1, spec.n, 3 do
    local kind, name, v = spec[i], spec[i + 1], spec[i + 2]
    if kind == 'host' then v = host(v)
    elseif kind == 'handle' then v = handle_host(v)
    elseif kind == 'suspend' then v = E.suspender(name)
    elseif kind == 'store' then v = E.store_function(name, host(v)) end
    local ns, key = smatch(name, '^([^.]+)%.(.+)$')
    if ns then
      local t = lib[ns]
      if t == nil then t = {}; lib[ns] = t end
      t[key] = v
    else
      lib[name] = v
    end
  end
  return lib
end

---------------------------------------------------------------------------
-- A fresh section VM environment.  Library tables are copied per
-- environment, so a section that rebinds string.upper changes nothing for
-- the next section.
---------------------------------------------------------------------------
-- Library tables never change once built, so each one's size is counted
-- once and every copy is made at its final size (no rehash while filling).
local tcreate = table.create
local lib_sizes = setmetatable({}, { __mode = 'k' })
local function copy_lib(lib)
  local n = lib_sizes[lib]
  if n == nil then
    n = 0
    for _ in next_raw, lib do n = n + 1 end
    lib_sizes[lib] = n
  end
  local out = tcreate(0, n)
  for k, v in next_raw, lib do out[k] = v end
  return out
end

---------------------------------------------------------------------------
-- Closing the doors to nondeterminism that standard Lua leaves open:
-- addresses in tostring/string.format, and math.random's time-based seed.
---------------------------------------------------------------------------
local tostring_raw, debug_getmetatable = tostring, debug.getmetatable
local format_raw = string.format
local bulk = H.bulk({
  charge = charge, getinfo = debug.getinfo, xpcall = xpcall_raw, pcall = pcall_raw,
  error = error, getmetatable = debug.getmetatable, max_memory = H.max_memory,
  c = {
    ['string.rep'] = string.rep, ['string.sub'] = string.sub, ['string.byte'] = string.byte,
    ['string.upper'] = string.upper,
    ['string.lower'] = string.lower, ['string.reverse'] = string.reverse,
    ['string.pack'] = string.pack, ['string.packsize'] = string.packsize,
    ['string.unpack'] = string.unpack, ['string.dump'] = string.dump,
    ['table.insert'] = table.insert, ['table.remove'] = table.remove,
    ['table.move'] = table.move, ['table.unpack'] = table.unpack,
    ['table.sort'] = table.sort,
    ['table.create'] = table.create, tonumber = tonumber, error = error,
  },
})
local charge_bytes = bulk.charge_bytes
-- Lua prints tables, functions, threads and userdata by address, which
-- differs between processes.  A run prints them by a serial given in the
-- order the run first prints them instead, so the text is reproducible.
local function tostring_stable(v)
  local s = tostring_raw(v)
  local t = type(v)
  if t == 'table' or t == 'function' or t == 'thread' or t == 'userdata' then
    local mt = debug_getmetatable(v)
    if not (mt and rawget(mt, '__tostring')) then
      s = sgsub(s, ': 0x%x+$', format_raw(': 0x%08x', serial_of(v)))
    end
  end
  return s
end
E.tostring = tostring_stable

-- Run under bulk.lua's protection, so an error of the C function reads as
-- it would had the prompt called it (its position and name, not the
-- prelude's), and an error of Lua code it calls passes through unchanged.
local format_handler, format_finish = bulk.protected(format_raw, 'string.format')
local through = bulk.through
local function format_stable(...)
  local fmt = ...
  if type(fmt) == 'string' and sfind(fmt, '%%[-+ #0-9.]*p') then
    error("bad argument #1 to 'format' (%p prints an address, which is not reproducible)", 2)
  end
  local args = tpack(...)
  -- The result holds the format and each string argument: charged by
  -- their sizes before the work (%q writes up to four bytes a byte, some
  -- through snprintf, about 40 ns a byte: a byte of it is an instruction).
  local bytes = type(fmt) == 'string' and #fmt or 0
  local weight = (type(fmt) == 'string' and sfind(fmt, '%q', 1, true)) and bulk.BYTES_PER_INSTRUCTION or 1
  for i = 2, args.n do
    local t = type(args[i])
    if t == 'table' or t == 'function' or t == 'thread' or t == 'userdata' then
      args[i] = tostring_stable(args[i])
      t = 'string'
    end
    if t == 'string' then bytes = bytes + weight * #args[i] end
  end
  charge_bytes(bytes)
  return format_finish(xpcall_raw(through, format_handler, format_raw, tunpack(args, 1, args.n)))
end

-- A finalizer runs whenever the collector gets to it, a point no schedule
-- controls, so a prompt may not install one.  (Lua only honours a __gc that
-- is present when setmetatable is called.)
local function setmetatable_safe(t, mt)
  if type(mt) == 'table' and rawget(mt, '__gc') ~= nil then
    error("setmetatable: __gc finalizers are not available in a prompt "
          .. "(they would run at points no schedule controls)", 2)
  end
  -- A section environment's metatable copies its pending libraries.
  if lazy_envs[t] ~= nil then materialize(t) end
  return setmetatable(t, mt)
end

local randomseed_raw = math.randomseed
local random_raw = math.random
local random_seed = H.random_seed
randomseed_raw(random_seed)
local math_lib = copy_lib(math)
local reseeded = false
-- Without arguments Lua reseeds from the clock; a run reseeds from its seed.
math_lib.randomseed = function(...)
  reseeded = true
  if select('#', ...) == 0 then return randomseed_raw(random_seed) end
  return randomseed_raw(...)
end
-- Whether nothing drew from the generator the run's seed started (nor
-- reseeded it): then the run's seed reached nothing it did through Lua, and a
-- runner may reuse its observation for another seed with the same choices
-- (`forge.conformance.adapters`).  Four draws of 64 bits are xoshiro256**'s
-- whole state, so equal draws mean an untouched generator.  Called after the
-- run only: it moves the generator.
E.random_untouched = function()
  if reseeded then return false end
  local a1, a2, a3, a4 = random_raw(0), random_raw(0), random_raw(0), random_raw(0)
  randomseed_raw(random_seed)
  local b1, b2, b3, b4 = random_raw(0), random_raw(0), random_raw(0), random_raw(0)
  return a1 == b1 and a2 == b2 and a3 == b3 and a4 == b4
end

-- table.concat also joins values that render through __tostring (fanout
-- results, model handles, the prompt's own objects).  Those elements are
-- rendered first and everything else is left to the standard function, so
-- its argument checks and "invalid value" messages stay Lua's own.  The
-- standard function runs under bulk.lua's protection (its own errors are
-- raised at the caller, as a direct call raises them; an error of a
-- metamethod it calls passes through unchanged), called from here so that
-- the call site's name is the one Lua's message uses.
local concat_handler, concat_finish = bulk.protected(tconcat, 'table.concat')
local function concat_rendering(...)
  local list, sep, i, j = ...
  if type(list) ~= 'table' then return concat_finish(xpcall_raw(through, concat_handler, tconcat, ...)) end
  local lo = math.tointeger(i == nil and 1 or i)
  local hi = math.tointeger(j == nil and #list or j)
  if lo == nil or hi == nil then return concat_finish(xpcall_raw(through, concat_handler, tconcat, ...)) end
  local rendered
  -- The bytes the result will hold, charged before the C function copies
  -- them (each element's own cost is this loop's, which the hook counts).
  -- The scan stops where the C function will stop with its error.
  local bytes, reached = 0, lo - 1
  for k = lo, hi do
    reached = k
    local v = list[k]
    local tv = type(v)
    if tv == 'string' then
      bytes = bytes + #v
    elseif tv == 'number' then
      bytes = bytes + 24                   -- at most LUAI_NUMFFORMAT's width
    elseif tv == 'table' or tv == 'userdata' then
      local mt = debug_getmetatable(v)
      if type(mt) == 'table' and rawget(mt, '__tostring') ~= nil then
        rendered = rendered or {}
        rendered[k] = tostring_stable(v)
        bytes = bytes + #rendered[k]
      else
        break
      end
    else
      break
    end
  end
  local tsep = type(sep)
  if (tsep == 'string' or tsep == 'number') and reached > lo then
    bytes = bytes + #tostring_raw(sep) * (reached - lo + 0.0)
  end
  bulk.charge_result(bytes)
  if rendered == nil then return concat_finish(xpcall_raw(through, concat_handler, tconcat, ...)) end
  local view = setmetatable({}, { __index = function(_, k)
    local r = rendered[k]
    if r ~= nil then return r end
    return list[k]
  end })
  return concat_finish(xpcall_raw(through, concat_handler, tconcat, view, sep, lo, hi))
end
local table_lib = copy_lib(table)
table_lib.concat = concat_rendering

local string_lib = copy_lib(string)
string_lib.format = format_stable
-- Size-proportional library calls under the instruction budget (bulk.lua
-- says how and which).
for name, f in next_raw, bulk.string do string_lib[name] = f end
for name, f in next_raw, bulk.table do table_lib[name] = f end
-- Pattern matching under the instruction budget (patterns.lua says how).
do
  local bounded = H.patterns({
    byte = string.byte, sub = string.sub,
    find = sfind, match = smatch, gmatch = string.gmatch, gsub = sgsub,
    charge = charge, getinfo = debug.getinfo, pcall = pcall_raw,
    charge_bytes = bulk.charge_result,
  })
  string_lib.find, string_lib.match = bounded.find, bounded.match
  string_lib.gmatch, string_lib.gsub = bounded.gmatch, bounded.gsub
end
-- The string metatable is shared by every string in the runtime; seal it so
-- getmetatable('') cannot be used to reach or change it.
local smt = getmetatable('')
smt.__metatable = 'string metatable is sealed'
smt.__index = string_lib

-- getmetatable of a section environment copies its pending libraries
-- first: the metatable's __index copies a pending one when called, and must
-- give nil for it, as it would once copied.  Without an argument, Lua's own
-- error (no argument is all getmetatable can refuse).
local getmetatable_raw = getmetatable
local getmetatable_handler, getmetatable_finish = bulk.protected(getmetatable_raw, 'getmetatable')
local function getmetatable_safe(...)
  if select('#', ...) == 0 then
    return getmetatable_finish(xpcall_raw(through, getmetatable_handler, getmetatable_raw, ...))
  end
  local t = ...
  if lazy_envs[t] ~= nil then materialize(t) end
  return getmetatable_raw(t)
end

-- The base functions every environment has (no library table).
local table_create = table.create
local base_error, base_tonumber = bulk.error, bulk.tonumber
local function base_env()
  -- Sized for the base names and what a section VM adds (its library's
  -- functions, args, sys, var, item): the table never grows in a rehash.
  local env = table_create(0, 32)
  env.assert, env.error, env.pcall, env.xpcall = assert, base_error, pcall_safe, xpcall_safe
  env.getmetatable, env.setmetatable = getmetatable_safe, setmetatable_safe
  env.ipairs, env.pairs, env.next, env.select = ipairs, pairs_ordered, next_ordered, select
  env.tonumber, env.tostring, env.type = base_tonumber, tostring_stable, type
  env._VERSION = _VERSION
  env._G = env
  return env
end

local function new_env(globals)
  local env = base_env()
  env.string, env.table, env.math = copy_lib(string_lib), copy_lib(table_lib), copy_lib(math_lib)
  if globals then
    for k, v in next_raw, globals do env[k] = v end
  end
  return env
end
E.new_env = new_env

materialize = function(env)
  local pending = lazy_envs[env]
  lazy_envs[env] = nil
  for k, lib in next_raw, pending do
    rawset(env, k, copy_lib(lib))
    pending[k] = nil            -- clearing a field while walking is allowed
  end
end

---------------------------------------------------------------------------
-- sys: sealed and read-only; an unknown field is an error, never nil.
---------------------------------------------------------------------------
local function sys_newindex(_, k)
  error(make_error('lua', "sys is read-only; cannot set '" .. tostring(k) .. "'"), 2)
end
E.make_sys = function(fields)
  return setmetatable({}, {
    __index = function(_, k)
      if type(k) ~= 'string' then
        error(make_error('lua', 'sys fields must be accessed by string key'), 2)
      end
      local v = rawget(fields, k)
      if v == nil then
        error(make_error('lua', "runtime error: unknown sys field '" .. k .. "'"), 2)
      end
      return v
    end,
    __newindex = sys_newindex,
    __len = length_zero,
    __pairs = no_pairs,
    __metatable = 'sys is sealed',
  })
end

---------------------------------------------------------------------------
-- argv outside the H1 pass: frozen at every depth.
---------------------------------------------------------------------------
local function frozen_newindex(_, k)
  local shown = type(k) == 'string' and ("'" .. k .. "'") or tostring(k)
  error(make_error('lua', 'argv is frozen outside H1: cannot set field ' .. shown), 2)
end
local function frozen(v)
  if type(v) ~= 'table' then return v end
  return setmetatable({}, {
    __index = function(_, k) return frozen(rawget(v, k)) end,
    __newindex = frozen_newindex,
    __len = length_zero,
    __pairs = no_pairs,
    __metatable = 'argv is frozen',
  })
end
E.frozen = frozen

---------------------------------------------------------------------------
-- A section VM's globals.  `prose` renders at its first read in each block
-- (Python's render callback), and `argv` is writable only in the H1 pass.
---------------------------------------------------------------------------
-- A library table is copied into the environment when the section first
-- reads or sets that global (most sections touch one or two), or when
-- anything walks the environment's keys (`ordered_keys`) or replaces its
-- metatable (`setmetatable_safe`): until then it is pending, and nothing a
-- prompt can do tells the difference.
-- Each environment's prose reset, which `run_block` calls as a block starts
-- (every block reads its own prose).
local prose_resets = setmetatable({}, { __mode = 'k' })
-- Returns the environment and the argv reader.
local function section_env(lib, args, sys, var, has_item, item, render, key, argv_value, in_h1)
  local env = base_env()
  local pending = { string = string_lib, table = table_lib, math = math_lib }
  for k, v in next_raw, lib do
    if type(v) == 'table' then pending[k] = v else env[k] = v end
  end
  env.args, env.sys, env.var = args, sys, var
  if has_item then env.item = item end
  lazy_envs[env] = pending
  local argv = in_h1 and argv_value or frozen(argv_value)
  local prose_cache = nil
  setmetatable(env, {
    __index = function(t, k)
      local lib_table = pending[k]
      if lib_table ~= nil then
        pending[k] = nil
        local copy = copy_lib(lib_table)
        rawset(t, k, copy)
        return copy
      end
      if k == 'prose' then
        if prose_cache == nil then prose_cache = render(key) end
        return prose_cache
      end
      if k == 'argv' then return argv end
      return nil
    end,
    __newindex = function(t, k, v)
      if k == 'prose' then
        error(make_error('lua', 'prose is read-only: assign to `var` or a section global instead'), 2)
      end
      if k == 'argv' then
        if in_h1 then argv = v; return end
        error(make_error('lua', 'argv is frozen outside H1: assign it in H1 only'), 2)
      end
      pending[k] = nil
      rawset(t, k, v)
    end,
  })
  prose_resets[env] = function() prose_cache = nil end
  return env, function() return argv end
end

-- A section entry's VM in one call from Python: `sys` from its fields, the
-- guarded `var` over `backing`, `item` when the entry has one, and the
-- environment.  `prose` renders through `render(key)`, the run's one prose
-- callback (key names the entry for Python).  Returns the environment and
-- the argv reader.
E.section_vm = function(lib, render, key, id, taskid, section_name, execution, section_count,
                        when, index, args, backing, has_item, item, argv, in_h1)
  local sys = E.make_sys({
    id = id, taskid = taskid, section_name = section_name, execution = execution,
    section_count = section_count, when = when, index = index,
  })
  return section_env(lib, args, sys, var_proxy(backing, 'var'), has_item, item, render, key,
                     argv, in_h1)
end

-- A fanout result entry: read-only, and tostring gives its text.
E.fanout_result = function(text, ok, item, exhausted)
  local data = { text = text, ok = ok, item = item, exhausted = exhausted }
  return setmetatable({}, {
    __index = data,
    __newindex = function() error(make_error('lua', 'fanout results are read-only'), 2) end,
    __tostring = function() return text end,
    __pairs = function(t) return function() return nil end, t, nil end,
    __metatable = { __tostring = function() return text end },
  })
end

-- Stamps for the stale re-raise rule: which suspend count an error value
-- was made at.
local stamps = setmetatable({}, { __mode = 'k' })
E.stamp = function(e, n) if type(e) == 'table' then stamps[e] = n end return e end
E.stamp_of = function(e) if type(e) == 'table' then return stamps[e] end return nil end
-- A host error value made and stamped in one call.
E.stamped_error = function(kind, message, fields, n)
  local e = make_error(kind, message, fields)
  stamps[e] = n
  return e
end

---------------------------------------------------------------------------
-- Compiling and running blocks.
---------------------------------------------------------------------------
local load_raw = load
-- Replays the shared library (bytecode or text, as `run_block` loads) into a
-- fresh section VM: (true, values...) or (false, error).  Runs on whatever
-- thread calls it, under the budget hook.
E.load_library = function(source, chunkname, mode, env)
  local f, err = load_raw(source, chunkname, mode, env)
  if not f then return false, err end
  -- On a thread of its own, which the backstop's watchdog may reach (the
  -- main thread runs the engine's own calls from Python).
  local co = cocreate(function()
    register()
    sethook(hook, '', HOOK_EVERY)
    return f()
  end)
  loading_library = true
  local r = tpack(coresume(co))
  loading_library = false
  return tunpack(r, 1, r.n)
end

-- Loads a block into env (a new closure per entry, so two chains running one
-- section never share an _ENV) and runs it inside the current coroutine (the
-- code is the block's bytecode or its text, `mode`: see
-- `forge.lua.runtime.loadable`); returns (true, values...) or (false, error).
-- Installed as the body of every block coroutine.
-- Nothing follows the block's pcall (a tail call): past an abort the hook
-- raises at any instruction, and one raised outside the pcall would end the
-- coroutine with an error instead of the block's result.
run_block = function(source, chunkname, mode, env)
  -- Before the hook is set: the budget counts the block's instructions only.
  local reset_prose = prose_resets[env]
  if reset_prose ~= nil then reset_prose() end
  register()
  sethook(hook, '', HOOK_EVERY)
  if abort ~= nil then return false, abort end
  local bound, err = load_raw(source, chunkname, mode, env)
  if not bound then return false, err end
  return pcall_raw(bound)
end
E.run_block = run_block

---------------------------------------------------------------------------
-- Lua the engine runs from Python on the prompt's behalf: a global read
-- for `{{ name }}` (the environment's `__index`), a field read or write on
-- a table the prompt handed over, a `tostring`.  Each may run the prompt's
-- own metamethods, so each runs here, on a thread of its own under the
-- budget hook: lupa runs a call from Python on the main thread, where no
-- count hook fires while a block's coroutine waits in a host function (the
-- hook a host function sets there is gone by its next call).  One thread
-- per nesting depth serves every call of the run and keeps its hook count
-- from call to call, so many short calls are charged as one long one.
-- `forge.lua.runtime.LuaRuntime.guarded` is the one entry from Python.
---------------------------------------------------------------------------
local guard_threads = {}
local function guard_body(f, ...)
  register()
  sethook(hook, '', HOOK_EVERY)
  local call = tpack(f, ...)
  while true do
    call = tpack(yield(tpack(pcall_raw(tunpack(call, 1, call.n)))))
  end
end
-- The error value the last guarded call raised into Python: lupa hands Python
-- only its text (nothing at all for a table), so `forge.lua.runtime` takes
-- the value itself from here and the host call fails with it, as in Lua.
local guard_error = nil
E.take_guard_error = function()
  local e = guard_error
  guard_error = nil
  return e
end
E.guarded = function(f, ...)
  check_abort()
  guard_error = nil
  guard_depth = guard_depth + 1
  local depth = guard_depth
  local co = guard_threads[depth]
  if co == nil then
    co = cocreate(guard_body)
    guard_threads[depth] = co
  end
  local ok, r = coresume(co, f, ...)
  guard_depth = depth - 1
  if not ok then
    -- The thread itself died (the hook's abort between two calls): the
    -- next call at this depth starts a new one.
    guard_threads[depth] = nil
    error(r, 0)
  end
  check_abort()
  if r[1] then return tunpack(r, 2, r.n) end
  guard_error = r[2]
  error(r[2], 0)
end
local function index(t, k) return t[k] end
local function assign(t, k, v) t[k] = v end
E.index = function(t, k) return E.guarded(index, t, k) end
E.assign = function(t, k, v) return E.guarded(assign, t, k, v) end

E.pack = tpack
E.table_from_list = function(...) return { ... } end
-- A join's results, made here in one call rather than table by table and
-- key by key from Python: `(position, task id, ok, result)` for each member
-- delivered, in ascending position (a member skipped leaves its position
-- empty).  (A task handle is `task_handle`, above.)
E.join_results = function(...)
  local results = {}
  for i = 1, select('#', ...), 4 do
    local position, id, ok, result = select(i, ...)
    results[position] = { task = id, ok = ok, result = result }
  end
  return results
end
-- `argv` of a prompt that declares no arguments: the args text as `prose`.
E.prose_argv = function(text) return { prose = text } end

---------------------------------------------------------------------------
-- A reused runtime starts each run here (`forge.lua.runtime`): every piece
-- of state above that a run can change goes back to what loading the
-- prelude gave it, with the next run's limits and seed.  The weak sets get
-- new tables, so nothing a run marked (host errors, stamps, var proxies,
-- serials) is known to the next.  The library tables, the sealed string
-- metatable and every function here are built once and never changed by a
-- run.  The main thread's hook is cleared from Python before this runs.
---------------------------------------------------------------------------
local weak_keys = { __mode = 'k' }     -- one metatable for the weak sets below
E.reset = function(max_instructions, message, seed, deadline, deadline_message)
  budget, budget_message, used, pending = max_instructions, message, 0, 0
  cpu_deadline, cpu_message = deadline, deadline_message
  -- The threads the last run registered are let go without telling Python
  -- one by one: `LuaRuntime.begin` cleared the backstop's set just before.
  live, live_count, sweep_at = {}, 0, 64
  abort, loading_library = nil, false
  guard_depth, guard_threads, guard_error = 0, {}, nil
  host_errors = setmetatable({}, weak_keys)
  serials, next_serial = setmetatable({}, weak_keys), 0
  guarded = setmetatable({}, weak_keys)
  stamps = setmetatable({}, weak_keys)
  lazy_envs = setmetatable({}, weak_keys)
  prose_resets = setmetatable({}, weak_keys)
  random_seed, reseeded = seed, false
  randomseed_raw(seed)
end

return E
