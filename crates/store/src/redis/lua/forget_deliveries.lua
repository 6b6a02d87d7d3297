local settled = redis.call('ZRANGE', KEYS[1], '-inf', '(' .. ARGV[1], 'BYSCORE', 'LIMIT', 0,
  ARGV[2])
for _, member in ipairs(settled) do
  redis.call('DEL', ARGV[3] .. member)
  redis.call('ZREM', KEYS[1], member)
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
end
return #settled
