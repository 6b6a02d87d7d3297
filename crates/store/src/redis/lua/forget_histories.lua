local forgotten = 0
for i = 2, #ARGV do
  local session = ARGV[i]
  local newest = tonumber(redis.call('ZSCORE', KEYS[1], session) or ARGV[1])
  if newest < tonumber(ARGV[1]) and not redis.call('HGET', KEYS[2], session) then
    redis.call('DEL', KEYS[i + 2])
    redis.call('ZREM', KEYS[1], session)
    redis.call('HDEL', KEYS[3], session)
    forgotten = forgotten + 1
  end
end
return forgotten
