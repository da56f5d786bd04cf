-- wrk: POST with an empty body; a response is right when it is 200 and its body ends with "OK\n" or
-- is "ok\n". The wrong ones are counted per thread and summed at the end (wrk's done() runs in its
-- own Lua state: thread:get reads each thread's count).
wrk.method = "POST"
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
wrong = 0
response = function(status, headers, body)
  if status ~= 200 or not (body == "ok\n" or string.sub(body, -3) == "OK\n") then wrong = wrong + 1 end
end
done = function(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("wrong") end
  io.write(string.format("wrong_responses %d\n", total))
  io.write(string.format("latency_p50_us %d\nlatency_p99_us %d\n", latency:percentile(50), latency:percentile(99)))
end
