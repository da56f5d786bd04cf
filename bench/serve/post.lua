-- wrk: POST with an empty body, and count responses that are not "ok\n".
wrk.method = "POST"
local wrong = 0
response = function(status, headers, body)
  if status ~= 200 or body ~= "ok\n" then wrong = wrong + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("wrong_responses %d\n", wrong))
end
