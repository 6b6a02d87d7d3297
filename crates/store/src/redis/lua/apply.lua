local results = {}
local key, arg = 12, 9
local records_limit, records_trimmed = tonumber(ARGV[4]), tonumber(ARGV[5])
local bytes_limit, bytes_trimmed = tonumber(ARGV[6]), tonumber(ARGV[7])
local function size(history, session, entry)
  if redis.call('HEXISTS', KEYS[6], session) == 1 then
    return redis.call('HINCRBY', KEYS[6], session, #entry)
  end
  local bytes = 0
  for _, item in ipairs(redis.call('XRANGE', history, '-', '+')) do
    bytes = bytes + #item[2][2]
  end
  redis.call('HSET', KEYS[6], session, bytes)
  return bytes
end
local function trim(history, session, records, bytes)
  local from, cut = '-', nil
  while records > 1 and (records > records_limit or bytes > bytes_limit) do
    local oldest = redis.call('XRANGE', history, from, '+', 'COUNT', 64)
    if #oldest == 0 then break end
    for _, item in ipairs(oldest) do
      if records <= 1 or (records <= records_limit and bytes <= bytes_limit) then break end
      cut = item[1]
      records = records - 1
      bytes = bytes - #item[2][2]
    end
    from = '(' .. cut
  end
  if cut then
    redis.call('XTRIM', history, 'MINID', '0-' .. (tonumber(string.sub(cut, 3)) + 1))
    redis.call('HSET', KEYS[6], session, bytes)
  end
end
local function log(session, entry)
  local change = '0-' .. redis.call('INCR', KEYS[2])
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], change, 'change', entry)
  local history = ARGV[2] .. session
  redis.call('XADD', history, change, 'change', entry)
  local records = redis.call('XLEN', history)
  local bytes = size(history, session, entry)
  if records > records_trimmed or bytes > bytes_trimmed then
    trim(history, session, records, bytes)
  end
  redis.call('ZADD', KEYS[4], ARGV[3], session)
end
local function insert(request, pending, calls, id, field, session, first, last, entry)
  if redis.call('EXISTS', request) == 1 then return 0 end
  redis.call('HSET', request, unpack(ARGV, first, last))
  redis.call('ZADD', pending, 0, id)
  if field ~= '' then redis.call('HSET', calls, field, id) end
  redis.call('HINCRBY', KEYS[5], session, 1)
  log(session, entry)
  return 1
end
-- Fails (on a key of the wrong type) before anything is written: the outbox's writes
-- below cannot fail after them.
local function outbox_ready()
  redis.call('ZCARD', KEYS[9])
  redis.call('ZCARD', KEYS[11])
end
local function enqueue(id, created, payload, first, last)
  outbox_ready()
  for i = first, last do
    local member = id .. '\t' .. ARGV[i]
    local delivery = ARGV[8] .. member
    if redis.call('EXISTS', delivery) == 0 then
      redis.call('ZADD', KEYS[9], created, member)
      redis.call('ZADD', KEYS[11], 0, member)
      redis.call('HSET', delivery, 'message', id, 'target', ARGV[i], 'payload', payload,
        'created', created, 'state', 'pending', 'attempts', 0, 'next', created)
    end
  end
  return 1
end
local function attempted(member, state, next_at, at, last)
  local delivery = ARGV[8] .. member
  local found = redis.call('HGET', delivery, 'state')
  if not found then return 'not_found' end
  -- A settled delivery stays settled (a sender whose lease ran out, late).
  if found ~= 'pending' then return 'appended' end
  if state == 'pending' then
    redis.call('ZADD', KEYS[9], next_at, member)
    redis.call('HSET', delivery, 'next', next_at)
  else
    redis.call('ZADD', KEYS[10], at, member)
    redis.call('ZREM', KEYS[9], member)
    redis.call('HDEL', delivery, 'next')
  end
  redis.call('HSET', delivery, 'state', state, 'last', last)
  redis.call('HINCRBY', delivery, 'attempts', 1)
  return 'appended'
end
local function resolve(request, pending, resolved, id, kind, state, outcome, at, by, audit,
    entry, message)
  local found = redis.call('HMGET', request, 'kind', 'state', 'session')
  if not found[1] or found[1] ~= kind then return 'not_found' end
  if found[2] ~= 'pending' then return found[2] end
  local targets = tonumber(ARGV[message])
  if targets then outbox_ready() end
  -- First: a script's writes are not undone when a later command fails, so an entry that
  -- cannot be appended must stop the resolution before anything of it is written.
  if string.sub(audit, 1, 1) == '+' then
    local seq = redis.call('INCR', KEYS[8])
    redis.call('XADD', KEYS[7], '0-' .. seq, 'draft', string.sub(audit, 2))
  end
  if targets then
    enqueue(ARGV[message + 1], ARGV[message + 2], ARGV[message + 3], message + 4,
      message + 3 + targets)
  end
  redis.call('HSET', request, 'state', state, 'outcome', outcome, 'resolved_at', at)
  if string.sub(by, 1, 1) == '+' then
    redis.call('HSET', request, 'decided_by', string.sub(by, 2))
  end
  redis.call('ZREM', pending, id)
  redis.call('ZADD', resolved, 0, id)
  redis.call('ZADD', KEYS[3], at, id)
  if redis.call('HINCRBY', KEYS[5], found[3], -1) <= 0 then
    redis.call('HDEL', KEYS[5], found[3])
  end
  log(found[3], entry)
  return 'resolved'
end
local function event(session, entry)
  log(session, entry)
  return 1
end
while arg <= #ARGV do
  local ok, result
  if ARGV[arg] == 'i' then
    local n = tonumber(ARGV[arg + 4])
    ok, result = pcall(insert, KEYS[key], KEYS[key + 1], KEYS[key + 2], ARGV[arg + 1],
      ARGV[arg + 2], ARGV[arg + 3], arg + 5, arg + 4 + n, ARGV[arg + 5 + n])
    arg = arg + 6 + n
    key = key + 3
  elseif ARGV[arg] == 'r' then
    ok, result = pcall(resolve, KEYS[key], KEYS[key + 1], KEYS[key + 2], ARGV[arg + 1],
      ARGV[arg + 2], ARGV[arg + 3], ARGV[arg + 4], ARGV[arg + 5], ARGV[arg + 6], ARGV[arg + 7],
      ARGV[arg + 8], arg + 9)
    local targets = tonumber(ARGV[arg + 9])
    arg = arg + 10 + (targets and 3 + targets or 0)
    key = key + 3
  elseif ARGV[arg] == 'q' then
    local targets = tonumber(ARGV[arg + 1])
    ok, result = pcall(enqueue, ARGV[arg + 2], ARGV[arg + 3], ARGV[arg + 4], arg + 5,
      arg + 4 + targets)
    arg = arg + 5 + targets
  elseif ARGV[arg] == 'a' then
    ok, result = pcall(attempted, ARGV[arg + 1], ARGV[arg + 2], ARGV[arg + 3], ARGV[arg + 4],
      ARGV[arg + 5])
    arg = arg + 6
  else
    ok, result = pcall(event, ARGV[arg + 1], ARGV[arg + 2])
    arg = arg + 3
  end
  if ok then
    results[#results + 1] = result
  else
    results[#results + 1] = { err = tostring(result) }
  end
end
return results
