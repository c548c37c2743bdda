-- The Lua side of models, conversations and tools, loaded once per runtime
-- (it keeps no state of a run: list serials are the prelude's, reset per run).
--
-- What lives here: message lists and their builder methods, sealing model
-- handles' metatable, the read-only `tools.calls` view, and the trampoline
-- that lets a suspending call run Lua on the engine's behalf - a local tool
-- handler or a compactor - inside the calling chain's own coroutine, so the
-- handler's own suspending calls (store, tasks, models) park the chain like
-- any other call.  What does not: any decision about rounds, tools or tasks;
-- those are Python's (forge.engine.models), reached through `suspend`.
--
-- The trampoline protocol: every suspending call below resumes with
-- (kind, value).  `done` returns value to the caller; `run` asks for
-- value.fn(value.arg) to be called here, its outcome reported back with
-- `models.handler_done`; `continue` just re-enters the engine with
-- `models.continue` (used after the chain was parked on a round or a wait).

local E = ...
local suspend, make_error = E.suspend, E.make_error
local pcall_raw, select, type, error = pcall, select, type, error
local setmetatable, getmetatable, rawset, rawlen = setmetatable, getmetatable, rawset, rawlen

local M = {}

local function drive(kind, value)
  while true do
    if kind == 'done' then
      return value
    elseif kind == 'run' then
      -- Only the first return value counts, as for any handler.
      local ok, result = pcall_raw(value.fn, value.arg)
      kind, value = suspend('models.handler_done', ok, result)
    else
      kind, value = suspend('models.continue')
    end
  end
end

M.loop = function(...)
  drive(suspend('models.loop', select('#', ...), ...))
end

M.infer = function(...)
  return suspend('models.infer', select('#', ...), ...)
end

M.call = function(...)
  return drive(suspend('tools.call', select('#', ...), ...))
end

---------------------------------------------------------------------------
-- Message lists: plain arrays whose builders live on a per-list metatable,
-- so `#`, indexes and JSON see only the records.
---------------------------------------------------------------------------
local function push(list, record)
  rawset(list, rawlen(list) + 1, record)
  return list
end
M.append = push

-- Drops the records past position n (a refused round's notices).
M.truncate = function(list, n)
  for i = rawlen(list), n + 1, -1 do rawset(list, i, nil) end
end

M.new_list = function()
  local methods = {
    system = function(self, content) return push(self, { role = 'system', content = content }) end,
    user = function(self, content) return push(self, { role = 'user', content = content }) end,
    assistant = function(self, content, tool_calls)
      return push(self, { role = 'assistant', content = content, tool_calls = tool_calls })
    end,
    tool = function(self, content, tool_call_id)
      return push(self, { role = 'tool', content = content, tool_call_id = tool_call_id })
    end,
    append = function(self, record) return push(self, record) end,
  }
  return setmetatable({}, { __index = methods })
end

---------------------------------------------------------------------------
-- Model handles are Python objects, so userdata, read through the item
-- protocol.  Their metatable is the bridge's own, shared by every Python
-- object; sealing it keeps prompt code from reading or changing it.
---------------------------------------------------------------------------
M.seal_python_objects = function(sample)
  local mt = getmetatable(sample)
  if type(mt) == 'table' then mt.__metatable = 'model handle' end
end

---------------------------------------------------------------------------
-- tools.calls: a live, read-only view; `read(view, key)` (the runtime's
-- one reader, a host function) answers each read of view number `view`.
---------------------------------------------------------------------------
M.calls_view = function(read, view)
  return setmetatable({}, {
    __index = function(_, k) return read(view, k) end,
    __newindex = function() error(make_error('lua', 'tools.calls is read-only'), 2) end,
    __metatable = 'tools.calls is read-only',
  })
end

-- Message lists are told apart by identity, which Python's wrappers do not
-- keep; the run's object serial gives each list one number.
M.list_serial = E.serial

return M
