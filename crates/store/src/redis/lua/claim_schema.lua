local found = tonumber(redis.call('GET', KEYS[1]) or '0')
if found < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return found
