-- wrk script for the benchmark: sends the requests of a plan file (written by bench/wrk.py)
-- in rotation, and prints the run's figures as one JSON line starting "BENCH-RESULT ".
--
-- Arguments after "--": PLAN STOP_AFTER TOKEN
--   PLAN        a file of tab-separated lines:
--                 request METHOD PATH   starts a request (requests rotate in file order)
--                 header NAME VALUE     a header of that request
--                 body TEXT             its body, one line
--                 unique NAME           a header given a fresh value on every request
--                 weight N              turns it takes in each rotation (default 1)
--   STOP_AFTER  each thread stops after this many responses; 0 runs for wrk's -d
--   TOKEN       a run-unique word: fresh values are TOKEN-THREAD-COUNTER, so no two
--               requests of any run share one (an Idempotency-Key is 1 to 255 printable
--               ASCII characters)
--
-- A thread that stops early writes "BENCH-STOPPED" on stderr: wrk itself waits for its
-- whole -d, so the driver interrupts it once every thread has stopped.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("thread_id", #threads)
end

local MARKER = "@@bench-unique@@"
local rotation = {} -- one entry per turn: {whole = text} or {prefix, suffix}
local turn = 0
local sent = 0
local stop_after = 0
local token = ""
received = 0
statuses = {} -- status code -> responses, read by done() through thread:get

local function fields(line)
  local out = {}
  for field in (line .. "\t"):gmatch("([^\t]*)\t") do
    table.insert(out, field)
  end
  return out
end

local function read_plan(path)
  local requests = {}
  for line in io.lines(path) do
    local f = fields(line)
    if f[1] == "request" then
      table.insert(requests, { method = f[2], path = f[3], headers = {}, weight = 1 })
    elseif #requests == 0 then
      error("plan line before any request: " .. line)
    elseif f[1] == "header" then
      requests[#requests].headers[f[2]] = f[3]
    elseif f[1] == "body" then
      requests[#requests].body = f[2]
    elseif f[1] == "unique" then
      requests[#requests].unique = f[2]
    elseif f[1] == "weight" then
      requests[#requests].weight = tonumber(f[2])
    else
      error("unknown plan line: " .. line)
    end
  end
  return requests
end

local function prepared(r)
  if r.unique then
    r.headers[r.unique] = MARKER
  end
  local text = wrk.format(r.method, r.path, r.headers, r.body)
  if not r.unique then
    return { whole = text }
  end
  local from, to = text:find(MARKER, 1, true)
  return { prefix = text:sub(1, from - 1), suffix = text:sub(to + 1) }
end

function init(args)
  stop_after = tonumber(args[2]) or 0
  token = args[3] or "run"
  for _, r in ipairs(read_plan(args[1])) do
    local ready = prepared(r)
    for _ = 1, r.weight do
      table.insert(rotation, ready)
    end
  end
end

function request()
  turn = turn % #rotation + 1
  local r = rotation[turn]
  if r.whole then
    return r.whole
  end
  sent = sent + 1
  return r.prefix .. token .. "-" .. thread_id .. "-" .. sent .. r.suffix
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  received = received + 1
  if received == stop_after then
    io.stderr:write("BENCH-STOPPED\n")
    io.stderr:flush()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local counts = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses") or {}) do
      counts[status] = (counts[status] or 0) + n
    end
  end
  local status_fields = {}
  for status, n in pairs(counts) do
    table.insert(status_fields, string.format('"%d": %d', status, n))
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH-RESULT {"requests": %d, "duration_us": %d, "statuses": {%s}, '
      .. '"errors": {"connect": %d, "read": %d, "write": %d, "timeout": %d, "status": %d}, '
      .. '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "max": %d, "mean": %.1f}}\n',
    summary.requests, summary.duration, table.concat(status_fields, ", "),
    e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean
  ))
end
