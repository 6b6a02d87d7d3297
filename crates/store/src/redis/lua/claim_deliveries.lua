local claimed, unreadable = {}, {}
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3])
for _, member in ipairs(due) do
  local delivery = ARGV[4] .. member
  if redis.pcall('HGET', delivery, 'state') == 'pending' then
    redis.call('ZADD', KEYS[1], ARGV[2], member)
    redis.call('HSET', delivery, 'next', ARGV[2])
    claimed[#claimed + 1] = redis.call('HGETALL', delivery)
  else
    redis.call('ZREM', KEYS[1], member)
    unreadable[#unreadable + 1] = member
  end
end
return { claimed, unreadable }
