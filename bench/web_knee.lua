-- The mixed API load of bench/web_knee.py for wrk: per ten requests, two Agents lists, three
-- reads of one Agent, two Configurations lists, one Namespaces list and two Secret creates
-- (each a name of its own). Arguments: API key, Namespace id, Agent id, a tag unique to the
-- run of wrk (the Secrets' names start with it). At the end one line "KNEE {json}" with the
-- figures the benchmark reads and one refused response, if any, to say why.

local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("id", next_id)
  table.insert(threads, thread)
end

function init(args)
  key, namespace, agent, tag = args[1], args[2], args[3], args[4]
  counter = 0
  made = 0
  base = "/namespaces/" .. namespace
  headers = {["x-api-key"] = key, ["Content-Type"] = "application/json"}
end

function request()
  counter = counter + 1
  local slot = counter % 10
  if slot < 2 then
    return wrk.format("GET", base .. "/agents", headers)
  elseif slot < 5 then
    return wrk.format("GET", base .. "/agents/" .. agent, headers)
  elseif slot < 7 then
    return wrk.format("GET", base .. "/configurations", headers)
  elseif slot < 8 then
    return wrk.format("GET", "/namespaces", headers)
  end
  made = made + 1
  local name = string.format("knee-%s-%d-%d", tag, id, made)
  return wrk.format("POST", base .. "/secrets", headers,
                    string.format('{"name": "%s", "value": "bench-secret-value-%d"}', name, made))
end

function response(status, headers, body)
  if status >= 300 then
    refused = string.format("%d %s", status, string.sub(body or "", 1, 160))
  end
end

function done(summary, latency, requests)
  local errors = summary.errors
  local sample = ""
  for _, thread in ipairs(threads) do
    sample = thread:get("refused") or sample
  end
  io.write(string.format(
    'KNEE {"requests": %d, "seconds": %.3f, "p50_ms": %.3f, "p90_ms": %.3f, "p99_ms": %.3f, ' ..
    '"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d, "refused": %q}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
    latency:percentile(99) / 1e3, errors.connect, errors.read, errors.write, errors.status, errors.timeout, sample))
end
