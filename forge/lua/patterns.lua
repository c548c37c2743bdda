-- Bounded pattern matching: string.find, match, gmatch and gsub under the
-- run's one instruction budget.
--
-- What lives here: the sandbox's four pattern functions, the rule that
-- chooses between Lua's C matcher and a Lua port of it, and the port itself
-- (a line-by-line transcription of lstrlib.c's matcher: match, max_expand,
-- min_expand, classes, %b, %f, back references, captures, add_s/add_value).
-- What does not: the budget itself (prelude.lua's hook and `charge`), and
-- every other string function (bulk.lua charges those whose work grows
-- with their arguments' size).
--
-- Why: the C matcher backtracks without bound ('a-a-a-...b' is exponential,
-- even 'a-b' is quadratic) and runs inside one VM instruction, where the
-- count hook never fires, so a single call could run for hours under any
-- instruction budget.  The rule, per call:
--
--   * The cost of the C matcher is bounded by B = (n + 1)^(k + 1) * (m + 1)
--     steps for a subject of n bytes, a pattern of m bytes and k
--     unbounded items (a `*`, `+`, `-`, `?`, `%b`, or a back reference
--     `%1`-`%9`; each multiplies the backtracking by at most n + 1).  A
--     plain find costs at most (n + 1) * (m + 1).
--   * When B <= C_LIMIT the C function runs, and the call is charged B /
--     C_STEPS_PER_INSTRUCTION instructions first (so a loop of cheap C
--     calls still spends the budget, and a C call can never run more than
--     C_LIMIT steps uncounted).  Every ordinary call on short strings is
--     here: `('key'):match('^[%a_][%w_]*$')` costs 100 instructions.
--   * Otherwise the port runs.  It is Lua, so the count hook sees every
--     step it takes and the budget ends a runaway match like any loop.
--     Starts where the first item cannot match are skipped by a linear C
--     scan (`next_start`), so an ordinary call costs about 300
--     instructions a match: `gsub('%s+', ' ')` over 100 KB of words
--     (20,000 matches) spends about 6 million of the default 20 million.
--     C_LIMIT and the charge were chosen so that short-string calls stay
--     on the C path (a port call costs more than its C charge there) and
--     no single C call runs longer than about a millisecond uncounted.
--
-- The port agrees with the C matcher on results and error messages
-- (tests/fuzz/test_fuzz_patterns.py checks random patterns and
-- subjects against it); an argument it cannot normalise exactly as C would
-- (a table subject, a non-integral init, a boolean replacement) goes to
-- the C function, which refuses it before any matching.  Callbacks (a gsub
-- function or a table's __index) run through the C gsub, so they cannot
-- yield there, exactly as under the C matcher.

local D = ...
local sbyte, ssub = D.byte, D.sub
local find_c, match_c, gmatch_c, gsub_c = D.find, D.match, D.gmatch, D.gsub
local charge, getinfo, pcall_raw = D.charge, D.getinfo, D.pcall
-- What gsub writes is charged by its size (bulk.lua's rate), apart from
-- the matching: `('x'):rep(1000):gsub('', big)` is a cheap match that
-- writes a thousand copies of `big`.
local charge_bytes = D.charge_bytes
local type, error, tonumber, pairs, select = type, error, tonumber, pairs, select
local tointeger, floor = math.tointeger, math.floor
local tconcat, tpack, tunpack = table.concat, table.pack, table.unpack

-- C matcher steps a call may take before the port is used instead.
local C_LIMIT = D.c_limit or 200000
-- How many C matcher steps are charged as one instruction.
local C_STEPS_PER_INSTRUCTION = 10
-- (`D.c_limit` lets the differential test force the port: -1.)

local MAXCCALLS, MAXCAPTURES = 200, 32
local CAP_UNFINISHED, CAP_POSITION = -1, -2
local SOURCE = '=forge/patterns.lua'

---------------------------------------------------------------------------
-- Errors are raised at the caller of the sandbox function, as luaL_error
-- does for the C function: the first frame outside this file.
---------------------------------------------------------------------------
local function caller_level()
  local level = 3
  while true do
    local info = getinfo(level, 'S')
    if info == nil or info.source ~= SOURCE then return level end
    level = level + 1
  end
end

local function fail(msg)
  error(msg, caller_level() - 1)
end

-- An argument error of the C function, run protected from here, worded
-- as it would be had the caller called it itself: the name the caller
-- used, and `self` not counted in a method call (luaL_argerror's rules).
local function argument_error(msg, fname)
  local k, rest = match_c(msg, "^bad argument #(%d+) to '[^']*' (.*)$")
  if k == nil then return msg end
  local info = getinfo(caller_level() - 2, 'n')
  local name, arg = info and info.name, tonumber(k)
  if info and info.namewhat == 'method' then
    arg = arg - 1
    if arg == 0 then return "calling '" .. name .. "' on bad self " .. rest end
  end
  return "bad argument #" .. arg .. " to '" .. (name or ('string.' .. fname)) .. "' " .. rest
end

---------------------------------------------------------------------------
-- Character classes in the C locale, built on first use of the port.
---------------------------------------------------------------------------
local CLASS
local function build_classes()
  local function set(pred)
    local t = {}
    for c = 0, 255 do t[c] = pred(c) and true or false end
    return t
  end
  local function alpha(c) return (c >= 65 and c <= 90) or (c >= 97 and c <= 122) end
  local function digit(c) return c >= 48 and c <= 57 end
  local function graph(c) return c >= 33 and c <= 126 end
  local base = {
    a = alpha, d = digit, g = graph,
    c = function(c) return c < 32 or c == 127 end,
    l = function(c) return c >= 97 and c <= 122 end,
    p = function(c) return graph(c) and not alpha(c) and not digit(c) end,
    s = function(c) return c == 32 or (c >= 9 and c <= 13) end,
    u = function(c) return c >= 65 and c <= 90 end,
    w = function(c) return alpha(c) or digit(c) end,
    x = function(c) return digit(c) or (c >= 65 and c <= 70) or (c >= 97 and c <= 102) end,
    z = function(c) return c == 0 end,
  }
  CLASS = {}
  for letter, pred in pairs(base) do
    local lower = sbyte(letter)
    CLASS[lower] = set(pred)
    CLASS[lower - 32] = set(function(c) return not pred(c) end)
  end
end

---------------------------------------------------------------------------
-- Match state.  One match runs at a time; a callback that matches again
-- saves and restores it (`call_out`).
---------------------------------------------------------------------------
local S, N                 -- subject and its length (src_end is N + 1)
local P, P_END             -- pattern bytes (P[P_END] == 0, the C terminator)
local level, depth
local cap_init, cap_len = {}, {}

local function match_class(c, cl)
  local t = CLASS[cl]
  if t then return t[c] end
  return cl == c
end

local function class_end(p)
  local c = P[p]
  p = p + 1
  if c == 37 then                                   -- '%'
    if p == P_END then fail("malformed pattern (ends with '%')") end
    return p + 1
  elseif c == 91 then                               -- '['
    if P[p] == 94 then p = p + 1 end
    repeat
      if p == P_END then fail("malformed pattern (missing ']')") end
      local cc = P[p]
      p = p + 1
      if cc == 37 and p < P_END then p = p + 1 end
    until P[p] == 93
    return p + 1
  end
  return p
end

local function match_bracket(c, p, ec)
  local sig = true
  if P[p + 1] == 94 then sig = false; p = p + 1 end
  p = p + 1
  while p < ec do
    local pc = P[p]
    if pc == 37 then
      p = p + 1
      if match_class(c, P[p]) then return sig end
    elseif P[p + 1] == 45 and p + 2 < ec then
      p = p + 2
      if pc <= c and c <= P[p] then return sig end
    elseif pc == c then
      return sig
    end
    p = p + 1
  end
  return not sig
end

local function single(s, p, ep)
  if s > N then return false end
  local c = sbyte(S, s)
  local pc = P[p]
  if pc == 46 then return true                      -- '.'
  elseif pc == 37 then return match_class(c, P[p + 1])
  elseif pc == 91 then return match_bracket(c, p, ep - 1)
  end
  return pc == c
end

local function match_balance(s, p)
  if p >= P_END - 1 then fail("malformed pattern (missing arguments to '%b')") end
  if (sbyte(S, s) or 0) ~= P[p] then return nil end
  local b, e, cont = P[p], P[p + 1], 1
  s = s + 1
  while s <= N do
    local c = sbyte(S, s)
    if c == e then
      cont = cont - 1
      if cont == 0 then return s + 1 end
    elseif c == b then
      cont = cont + 1
    end
    s = s + 1
  end
  return nil
end

local do_match

local function max_expand(s, p, ep)
  local i = 0
  while single(s + i, p, ep) do i = i + 1 end
  while i >= 0 do
    local res = do_match(s + i, ep + 1)
    if res then return res end
    i = i - 1
  end
  return nil
end

local function min_expand(s, p, ep)
  while true do
    local res = do_match(s, ep + 1)
    if res then return res end
    if single(s, p, ep) then s = s + 1 else return nil end
  end
end

local function start_capture(s, p, what)
  if level >= MAXCAPTURES then fail('too many captures') end
  level = level + 1
  cap_init[level], cap_len[level] = s, what
  local res = do_match(s, p)
  if res == nil then level = level - 1 end
  return res
end

local function end_capture(s, p)
  local l = level
  while l >= 1 and cap_len[l] ~= CAP_UNFINISHED do l = l - 1 end
  if l < 1 then fail('invalid pattern capture') end
  cap_len[l] = s - cap_init[l]
  local res = do_match(s, p)
  if res == nil then cap_len[l] = CAP_UNFINISHED end
  return res
end

local function match_capture(s, digit)
  local l = digit - 48                              -- '1' is capture 1
  if l < 1 or l > level or cap_len[l] == CAP_UNFINISHED then
    fail('invalid capture index %' .. (l) )
  end
  local len = cap_len[l]
  -- A position capture's length is negative: as a C size_t it never fits.
  if len < 0 or N + 1 - s < len then return nil end
  if len > 64 then charge(len // 64) end            -- memcmp's work
  if ssub(S, cap_init[l], cap_init[l] + len - 1) == ssub(S, s, s + len - 1) then
    return s + len
  end
  return nil
end

do_match = function(s, p)
  if depth == 0 then fail('pattern too complex') end
  depth = depth - 1
  while p ~= P_END do
    local pc = P[p]
    if pc == 40 then                                -- '('
      if P[p + 1] == 41 then s = start_capture(s, p + 2, CAP_POSITION)
      else s = start_capture(s, p + 1, CAP_UNFINISHED) end
      break
    elseif pc == 41 then                            -- ')'
      s = end_capture(s, p + 1)
      break
    elseif pc == 36 and p + 1 == P_END then         -- '$' at the end
      if s ~= N + 1 then s = nil end
      break
    elseif pc == 37 and P[p + 1] == 98 then         -- '%b'
      s = match_balance(s, p + 2)
      if s == nil then break end
      p = p + 4
    elseif pc == 37 and P[p + 1] == 102 then        -- '%f'
      p = p + 2
      if P[p] ~= 91 then fail("missing '[' after '%f' in pattern") end
      local ep = class_end(p)
      local previous = (s == 1) and 0 or sbyte(S, s - 1)
      if not match_bracket(previous, p, ep - 1) and match_bracket(sbyte(S, s) or 0, p, ep - 1) then
        p = ep
      else
        s = nil
        break
      end
    elseif pc == 37 and P[p + 1] >= 48 and P[p + 1] <= 57 then   -- '%0'-'%9'
      s = match_capture(s, P[p + 1])
      if s == nil then break end
      p = p + 2
    else
      local ep = class_end(p)
      local suffix = P[ep]
      if not single(s, p, ep) then
        if suffix == 42 or suffix == 63 or suffix == 45 then   -- '*' '?' '-'
          p = ep + 1
        else
          s = nil
          break
        end
      elseif suffix == 63 then                      -- '?'
        local res = do_match(s + 1, ep + 1)
        if res then s = res; break end
        p = ep + 1
      elseif suffix == 43 then                      -- '+'
        s = max_expand(s + 1, p, ep)
        break
      elseif suffix == 42 then                      -- '*'
        s = max_expand(s, p, ep)
        break
      elseif suffix == 45 then                      -- '-'
        s = min_expand(s, p, ep)
        break
      else
        s = s + 1
        p = ep
      end
    end
  end
  depth = depth + 1
  return s
end

-- Capture i (0-based, as C's get_onecapture), or the whole match s..e-1.
local function get_capture(i, s, e)
  if i >= level then
    if i ~= 0 then fail('invalid capture index %' .. (i + 1)) end
    return ssub(S, s, e - 1)
  end
  local l = cap_len[i + 1]
  if l == CAP_UNFINISHED then fail('unfinished capture') end
  if l == CAP_POSITION then return cap_init[i + 1] end
  return ssub(S, cap_init[i + 1], cap_init[i + 1] + l - 1)
end

local function captures(s, e)
  local n = (level == 0 and s) and 1 or level
  if n == 0 then return end
  if n == 1 then return get_capture(0, s, e) end
  local out = {}
  for i = 1, n do out[i] = get_capture(i - 1, s, e) end
  return tunpack(out, 1, n)
end

-- Load the pattern `p` from byte `from` on into P.
local function load_pattern(p, from)
  local t, j = {}, 0
  for i = from, #p do j = j + 1; t[j] = sbyte(p, i) end
  t[j + 1] = 0
  P, P_END = t, j + 1
end

local P_STR, P_FROM        -- the pattern text, and where P starts in it

local function prepare(s, p, from)
  if CLASS == nil then build_classes() end
  S, N = s, #s
  P_STR, P_FROM = p, from
  load_pattern(p, from)
end

-- Skipping hopeless starts.  When the pattern's first item (after any
-- opening captures) must match one byte - a class with `+` or no suffix -
-- no match can start where that byte does not match, and the C matcher
-- finds the next place it does in linear time (the single-item pattern
-- cannot backtrack).  Without this, each hopeless start cost ~100
-- instructions; the skip is charged what C's scan does.  The first item is
-- read only after a first attempt, so its errors come when C raises them.
local function first_item()
  local p = 1
  while P[p] == 40 do p = p + (P[p + 1] == 41 and 2 or 1) end
  local c = P[p]
  if p == P_END or c == 41 or (c == 36 and p + 1 == P_END) then return false end
  if c == 37 then
    local d = P[p + 1]
    if d == 98 or d == 102 or (d >= 48 and d <= 57) then return false end
  end
  local ep = class_end(p)
  local suffix = P[ep]
  if suffix == 42 or suffix == 63 or suffix == 45 then return false end
  local text = ssub(P_STR, P_FROM + p - 1, P_FROM + ep - 2)
  -- Alone, '^' and '$' would be anchors; here they are the literal bytes.
  if text == '^' or text == '$' then text = '%' .. text end
  return text
end

-- The next start at or after `from` where a match could begin (N + 1 when
-- none could); `first` is first_item()'s answer (false: every start).
local function next_start(first, from)
  if not first or from > N then return from end
  local at = find_c(S, first, from)
  local to = at or (N + 1)
  if to - from > 160 then charge((to - from) // 16) end
  return to
end

-- Run `f(...)` (first result) with the match state saved, through C's
-- gsub: a callback that matches again gets its own state, and a callback
-- cannot yield, exactly as inside the C gsub.
local function call_out(f, ...)
  local saved_S, saved_N, saved_P, saved_END, saved_str, saved_from = S, N, P, P_END, P_STR, P_FROM
  local saved_level, saved_depth, saved_init, saved_len = level, depth, cap_init, cap_len
  cap_init, cap_len = {}, {}
  local args, result = tpack(...), nil
  gsub_c('', '', function() result = f(tunpack(args, 1, args.n)) end)
  S, N, P, P_END, P_STR, P_FROM = saved_S, saved_N, saved_P, saved_END, saved_str, saved_from
  level, depth, cap_init, cap_len = saved_level, saved_depth, saved_init, saved_len
  return result
end
local function index(t, k) return t[k] end

---------------------------------------------------------------------------
-- Argument normalisation: exactly the conversions lstrlib's checks make,
-- or nil when the C function must see the argument (it refuses it).
---------------------------------------------------------------------------
local function as_string(v)
  local t = type(v)
  if t == 'string' then return v end
  if t == 'number' then return v .. '' end
  return nil
end

local function as_integer(v, default)
  if v == nil then return default end
  if type(v) == 'string' then v = tonumber(v) end
  if type(v) ~= 'number' then return nil end
  return tointeger(v)
end

-- posrelatI: a 1-based start from a relative init.
local function start_of(init, len)
  if init > 0 then return init end
  if init == 0 or init < -len then return 1 end
  return len + init + 1
end

local function unbounded_items(p)
  local _, q = gsub_c(p, '[%*%+%-%?]', '')
  local _, r = gsub_c(p, '%%[b0-9]', '')
  return q + r
end

-- The C matcher's worst case in steps, as a float (it may be huge).
local function c_bound(n, p)
  local m = #p
  if m > 64 then charge(m // 64) end                -- counting the items costs C work too
  return (n + 1.0) ^ (unbounded_items(p) + 1) * (m + 1)
end

local function charge_c(steps)
  charge(floor(steps / C_STEPS_PER_INSTRUCTION) + 1)
end

-- Calling the C function from here would put this file's position on its
-- errors ('malformed pattern ...'): it runs protected and its own errors
-- are raised again at the caller.  A gsub callback's error is boxed on
-- the way through, so it passes on unchanged.
local BOX, boxed = {}, nil
-- (Sites call `unpacked(tpack(call_c(...)))`: a tail call would hide the
-- caller's name for the function from `argument_error`.)
local function unpacked(r) return tunpack(r, 1, r.n) end
local function call_c(fname, c_fn, ...)
  local r = tpack(pcall_raw(c_fn, ...))
  if r[1] then return tunpack(r, 2, r.n) end
  local e = r[2]
  if e == BOX then
    e, boxed = boxed, nil
    error(e, 0)
  end
  if type(e) == 'string' and e ~= 'not enough memory' then
    error(argument_error(e, fname), caller_level() - 1)
  end
  error(e, 0)
end

local function boxing(repl, tr)
  local f = repl
  if tr == 'table' then f = function(k) return repl[k] end end
  return function(...)
    local ok, v = pcall_raw(f, ...)
    if ok then
      if type(v) == 'string' then charge_bytes(#v) end     -- gsub copies it into its result
      return v
    end
    boxed = v
    error(BOX, 0)
  end
end

local SPECIALS = '[%^%$%*%+%?%.%(%[%%%-]'    -- lstrlib's "^$*+?.([%-"

---------------------------------------------------------------------------
-- find and match
---------------------------------------------------------------------------
local function plain_port(s, p, start)
  -- lmemfind, one memchr per candidate: each candidate is counted.
  local m = #p
  if m == 0 then return start, start - 1 end
  local first, last = ssub(p, 1, 1), #s - m + 1
  local i = start
  while i <= last do
    local j = find_c(s, first, i, true)
    if j == nil or j > last then return nil end
    if m > 64 then charge(m // 64) end
    if ssub(s, j, j + m - 1) == p then return j, j + m - 1 end
    i = j + 1
  end
  return nil
end

-- find or match, as one function (a tail call would hide its name from errors).
local function find_aux(find, fname, c_fn)
return function(s0, p0, init0, plain)
  local s, p = as_string(s0), as_string(p0)
  local init = as_integer(init0, 1)
  if s == nil or p == nil or init == nil then return unpacked(tpack(call_c(fname, c_fn, s0, p0, init0, plain))) end
  local n = #s
  local start = start_of(init, n)
  if start > n + 1 then return nil end
  if find and (plain or not find_c(p, SPECIALS)) then
    local bound = (n - start + 2.0) * (#p + 1)
    if bound <= C_LIMIT then
      charge_c(bound)
      return unpacked(tpack(call_c(fname, c_fn, s0, p0, init0, plain)))
    end
    return plain_port(s, p, start)
  end
  local bound = c_bound(n - start + 1, p)
  if bound <= C_LIMIT then
    charge_c(bound)
    return unpacked(tpack(call_c(fname, c_fn, s0, p0, init0, plain)))
  end
  local anchor = sbyte(p, 1) == 94
  prepare(s, p, anchor and 2 or 1)
  local s1, first = start, nil
  repeat
    level, depth = 0, MAXCCALLS
    local e = do_match(s1, 1)
    if e then
      if find then return s1, e - 1, captures(nil, 0) end
      return captures(s1, e)
    end
    if first == nil then first = first_item() end
    s1 = next_start(first, s1 + 1)
  until s1 > n + 1 or anchor
  return nil
end
end

local find = find_aux(true, 'find', find_c)
local match = find_aux(false, 'match', match_c)

---------------------------------------------------------------------------
-- gmatch
---------------------------------------------------------------------------
local function gmatch(s0, p0, init0)
  local s, p = as_string(s0), as_string(p0)
  local init = as_integer(init0, 1)
  if s == nil or p == nil or init == nil then return unpacked(tpack(call_c('gmatch', gmatch_c, s0, p0, init0))) end
  local n = #s
  local start = start_of(init, n)
  if start > n + 1 then start = n + 2 end
  -- Each start position is tried about twice over all iterations.
  local bound = 2 * c_bound(n - start + 1, p)
  if bound <= C_LIMIT then
    charge_c(bound)
    return unpacked(tpack(call_c('gmatch', gmatch_c, s0, p0, init0)))
  end
  prepare(s, p, 1)
  local pattern, pattern_end = P, P_END
  local src, lastmatch, first = start, nil, nil
  return function()
    S, N, P, P_END, P_STR, P_FROM = s, n, pattern, pattern_end, p, 1
    local from = src
    while from <= n + 1 do
      level, depth = 0, MAXCCALLS
      local e = do_match(from, 1)
      if e and e ~= lastmatch then
        src, lastmatch = e, e
        return captures(from, e)
      end
      if first == nil then first = first_item() end
      from = next_start(first, from + 1)
    end
  end
end

---------------------------------------------------------------------------
-- gsub
---------------------------------------------------------------------------
local function add_s(out, news, s, e)
  if #news > 64 then charge(#news // 64) end
  local i = 1
  while true do
    local j = find_c(news, '%', i, true)
    if j == nil then break end
    out[#out + 1] = ssub(news, i, j - 1)
    local c = sbyte(news, j + 1)
    if c == 37 then
      out[#out + 1] = '%'
    elseif c == 48 then
      out[#out + 1] = ssub(S, s, e - 1)
    elseif c and c >= 49 and c <= 57 then
      out[#out + 1] = get_capture(c - 49, s, e) .. ''
    else
      fail("invalid use of '%' in replacement string")
    end
    i = j + 2
  end
  out[#out + 1] = ssub(news, i)
end

local REPLACEMENTS = { string = true, number = true, ['function'] = true, table = true }

local function gsub(s0, p0, repl, max0)
  local s, p = as_string(s0), as_string(p0)
  local tr = type(repl)
  local max_s = s and as_integer(max0, #s + 1)
  if s == nil or p == nil or max_s == nil or not REPLACEMENTS[tr] then
    return unpacked(tpack(call_c('gsub', gsub_c, s0, p0, repl, max0)))
  end
  local n = #s
  local bound = c_bound(n, p)
  if bound <= C_LIMIT then
    charge_c(bound)
    if tr == 'function' or tr == 'table' then
      repl = boxing(repl, tr)
    else
      -- At most n + 1 matches (max of them), each writing the replacement
      -- with its captures (each %0-%9 in it adds at most the match's text,
      -- and the matches' text adds up to at most n), plus the subject kept.
      local news = repl .. ''
      local r, k = #news, 0
      if r > 0 and find_c(news, '%', 1, true) then k = select(2, gsub_c(news, '%%', '')) end
      local m = n + 1
      if max_s < m then m = max_s end
      if m < 0 then m = 0 end
      charge_bytes(n + (m + 0.0) * r + k * (n + 0.0))
    end
    return unpacked(tpack(call_c('gsub', gsub_c, s0, p0, repl, max0)))
  end
  local anchor = sbyte(p, 1) == 94
  prepare(s, p, anchor and 2 or 1)
  local news = (tr == 'string' or tr == 'number') and (repl .. '') or nil
  local out, kept = {}, 1               -- subject bytes kept..src-1 are unchanged so far
  local src, lastmatch, count, changed, first = 1, nil, 0, false, nil
  while count < max_s do
    level, depth = 0, MAXCCALLS
    local e = do_match(src, 1)
    if e and e ~= lastmatch then
      count = count + 1
      if src > kept then out[#out + 1] = ssub(S, kept, src - 1) end
      if news then
        add_s(out, news, src, e)
        changed = true
      else
        local v
        if tr == 'function' then v = call_out(repl, captures(src, e))
        else v = call_out(index, repl, get_capture(0, src, e)) end
        if not v then
          out[#out + 1] = ssub(S, src, e - 1)
        else
          local tv = type(v)
          if tv ~= 'string' and tv ~= 'number' then
            fail('invalid replacement value (a ' .. tv .. ')')
          end
          out[#out + 1] = v .. ''
          changed = true
        end
      end
      src, lastmatch, kept = e, e, e
    elseif src <= N then
      if first == nil then first = first_item() end
      src = anchor and src + 1 or next_start(first, src + 1)
    else
      break
    end
    if anchor then break end
  end
  if not changed then return s0, count end
  out[#out + 1] = ssub(S, kept)
  local total = 0
  for k = 1, #out do total = total + #out[k] end
  charge_bytes(total)
  return tconcat(out), count
end

return { find = find, match = match, gmatch = gmatch, gsub = gsub }
