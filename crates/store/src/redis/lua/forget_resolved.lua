local forgotten = 0
for i = 1, #ARGV, 2 do
  local id, field = ARGV[i], ARGV[i + 1]
  local key = 2 + 3 * (i - 1) / 2
  if redis.call('HGET', KEYS[key], 'state') ~= 'pending' then
    redis.call('DEL', KEYS[key])
    redis.call('ZREM', KEYS[key + 1], id)
    if field ~= '' and redis.call('HGET', KEYS[key + 2], field) == id then
      redis.call('HDEL', KEYS[key + 2], field)
    end
  end
  forgotten = forgotten + redis.call('ZREM', KEYS[1], id)
end
return forgotten
