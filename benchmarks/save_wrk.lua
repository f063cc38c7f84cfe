-- wrk script: draft saves from one connection per wrk thread, each on its own assignment,
-- carrying the version of its last answer (as the page does; after a 409 the stored one).
-- Cross-check of saves.py's Python clients with a load generator that uses almost no CPU itself;
-- saves.py runs it (--client wrk):
--   wrk -t20 -c20 -d10s -s benchmarks/save_wrk.lua http://127.0.0.1:PORT -- ID:TOKEN:VERSION,... [PAUSE_MS]
-- (one assignment id, its annotator's API token and its stored version per thread; PAUSE_MS: each connection waits
-- that long after an answer, the browser's autosave rhythm). done() prints one line to parse.
local counter = 0
local threads = {}
function setup(thread)
  counter = counter + 1
  thread:set("idx", counter)
  table.insert(threads, thread)
end
function init(args)
  local specs = {}
  for spec in string.gmatch(args[1], "[^,]+") do table.insert(specs, spec) end
  local spec = specs[idx]
  local stored
  aid, token, stored = string.match(spec, "(%d+):(%w+):?(%d*)")
  pause = tonumber(args[2] or "0")
  version = tonumber(stored) or 0
  conflicts = 0
  segs = '{"segments": [{"label": true, "error_type": null, "comment": "", "refs": []},{"label": true, "error_type": null, "comment": "", "refs": []},{"label": false, "error_type": "knowledge_error", "comment": "wrong year", "refs": ["https://en.wikipedia.org/wiki/Example"]},{"label": true, "error_type": null, "comment": "", "refs": []},{"label": null, "error_type": null, "comment": "", "refs": []}]}'
end
function delay()
  return pause
end
function request()
  local body = '{"payload": ' .. segs .. ', "version": ' .. version .. ', "submit": false}'
  return wrk.format("PUT", "/api/assignments/" .. aid .. "/annotation/", {["Authorization"] = "Token " .. token, ["Content-Type"] = "application/json"}, body)
end
function response(status, headers, body)
  local v = string.match(body, '"stored_version":%s*(%d+)') or string.match(body, '"version":%s*(%d+)')
  if v then version = tonumber(v) end
  if status == 409 then conflicts = conflicts + 1 end
end
function done(summary, latency, requests)
  local conflicts = 0
  for _, thread in ipairs(threads) do conflicts = conflicts + (thread:get("conflicts") or 0) end
  io.write(string.format("WRK p50_us=%d p95_us=%d p99_us=%d max_us=%d requests=%d duration_us=%d non2xx=%d conflicts=%d\n",
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max,
    summary.requests, summary.duration, summary.errors.status, conflicts))
end
