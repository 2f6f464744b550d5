-- wrk script: send, in turn, the requests listed in a file, one "KEY PATH" per line.
--
--   wrk -t2 -c64 -d5s -s bench/rotate.lua http://127.0.0.1:PORT -- requests.txt
--
-- Each request carries its key as a Bearer token. Every request is formatted once, in
-- init, so the per-request cost in wrk is a table lookup. Each wrk thread has its own
-- Lua state and starts at its own offset, so the threads do not walk the list in step.

local requests = {}
local count = 0
local index = 1
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  local path = args[1]
  assert(path, "give the requests file after --")
  local file = assert(io.open(path, "r"))
  for line in file:lines() do
    local key, target = line:match("^(%S+)%s+(%S+)$")
    if key then
      count = count + 1
      requests[count] = wrk.format("GET", target, { ["Authorization"] = "Bearer " .. key })
    end
  end
  file:close()
  assert(count > 0, "no requests in " .. path)
  index = ((thread_number or 1) - 1) * 7919 % count + 1
end

function request()
  local r = requests[index]
  index = index % count + 1
  return r
end
