-- wrk script: draft saves from one connection per wrk thread, each on its own assignment,
-- carrying the version of its last answer (as the page does). Cross-check of felm_scale.py step 4
-- with a load generator that uses almost no CPU itself:
--   wrk -t20 -c20 -d10s --latency -s benchmarks/save_wrk.lua http://127.0.0.1:PORT -- ID:TOKEN,ID:TOKEN,...
-- (one assignment id and its annotator's API token per thread).
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("idx", counter)
end
function init(args)
  local specs = {}
  for spec in string.gmatch(args[1], "[^,]+") do table.insert(specs, spec) end
  local spec = specs[idx]
  aid, token = string.match(spec, "(%d+):(%w+)")
  version = 0
  segs = '{"segments": [{"label": true, "error_type": null, "comment": "", "refs": []},{"label": true, "error_type": null, "comment": "", "refs": []},{"label": false, "error_type": "knowledge_error", "comment": "wrong year", "refs": ["https://en.wikipedia.org/wiki/Example"]},{"label": true, "error_type": null, "comment": "", "refs": []},{"label": null, "error_type": null, "comment": "", "refs": []}]}'
end
function request()
  local body = '{"payload": ' .. segs .. ', "version": ' .. version .. ', "submit": false}'
  return wrk.format("PUT", "/api/assignments/" .. aid .. "/annotation/", {["Authorization"] = "Token " .. token, ["Content-Type"] = "application/json"}, body)
end
function response(status, headers, body)
  local v = string.match(body, '"version":%s*(%d+)')
  if v then version = tonumber(v) end
end
