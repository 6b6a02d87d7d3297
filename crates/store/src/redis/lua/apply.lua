local results = {}
local key, arg = 12, 9
local records_limit, records_trimmed = tonumber(ARGV[4]), tonumber(ARGV[5])
local bytes_limit, bytes_trimmed = tonumber(ARGV[6]), tonumber(ARGV[7])
-- Within this call: the length of each history written, and the sessions whose time in
-- `histories` is set (to this call's time).
local lengths, dated = {}, {}
-- Each key a change writes is asked its type before the change writes anything: a key
-- of another type (set by hand, or by another program under this prefix) then fails the
-- change whole, where its write there would fail it halfway, its writes before made and
-- the change never logged. A key is asked once per call: what this call writes to it
-- keeps its type.
local typed = {}
-- The change and audit counters, each read at its first use in this call, counted here and
-- written back once at its end: one command per call instead of an `INCR` per change.
-- Nothing else runs during the call, so no reader sees them between. (A call that never
-- reached its end would leave a counter behind its streams: the next change is numbered
-- past them, as after a lost counter; see `log`.)
local counters = {}
local function next_number(counter)
  local number = counters[counter]
  if not number then
    local stored = redis.call('GET', counter)
    number = tonumber(stored or 0)
    if not number then error(counter .. ' holds ' .. stored .. ', not a count') end
  end
  counters[counter] = number + 1
  return number + 1
end
local function expect(name, kind)
  if typed[name] then return end
  local found = redis.call('TYPE', name)['ok']
  if found ~= 'none' and found ~= kind then
    error(name .. ' holds a ' .. found .. ', where askbus keeps a ' .. kind)
  end
  typed[name] = true
end
-- The keys that logging a change of `session` writes.
local function loggable(session)
  expect(KEYS[1], 'stream')
  expect(KEYS[2], 'string')
  expect(KEYS[4], 'zset')
  expect(KEYS[6], 'hash')
  expect(ARGV[2] .. session, 'stream')
end
-- The bytes of `history` with `entry`, its newest of `records` records, counted.
local function size(history, session, entry, records)
  local bytes = redis.call('HINCRBY', KEYS[6], session, #entry)
  -- Counted from this record on only: a history written before bytes were (schema 4),
  -- counted whole now.
  if bytes > #entry or records == 1 then return bytes end
  bytes = 0
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
  return records
end
-- The number of the last entry ever added to stream `key` (0 if there is none): no entry
-- can be added at or below it. Raises if the stream holds an id askbus does not write.
local function last_number(key)
  if redis.call('EXISTS', key) == 0 then return 0 end
  local info = redis.call('XINFO', 'STREAM', key)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      local number = string.match(info[i + 1], '^0%-(%d+)$')
      if not number then
        error(key .. ' holds the entry id ' .. info[i + 1] .. ', which askbus never writes')
      end
      return tonumber(number)
    end
  end
  error(key .. ' has no last id')
end
-- Adds `entry` to `history` and to the log as the change numbered `number`; answers whether
-- both took it (each that refused it added nothing).
local function add_change(history, number, entry)
  local change = '0-' .. number
  local recorded = redis.pcall('XADD', history, change, 'change', entry)
  if type(recorded) == 'table' and recorded.err then return false end
  local logged = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], change, 'change', entry)
  if type(logged) == 'table' and logged.err then
    redis.call('XDEL', history, change)
    return false
  end
  return true
end
local function log(session, entry)
  local history = ARGV[2] .. session
  local number = next_number(KEYS[2])
  if not add_change(history, number, entry) then
    -- The counter is behind a stream: its key was lost while they were kept (deleted by
    -- hand, evicted), and each change would be refused for good. The change takes the
    -- number past both streams' newest instead, and the counter follows. Past the log's
    -- newest, readers read on without a gap; past a history's newer one (the log was
    -- lost too), they find a gap and load the requests again, as after any loss.
    counters[KEYS[2]] = number - 1
    number = math.max(last_number(KEYS[1]), last_number(history)) + 1
    redis.log(redis.LOG_WARNING, 'askbus: the change counter ' .. KEYS[2] ..
      ' was behind its streams; the next change is numbered ' .. number)
    if not add_change(history, number, entry) then
      error('the change log ' .. KEYS[1] .. ' or history ' .. history .. ' refused change ' ..
        number)
    end
    counters[KEYS[2]] = number
  end
  local records = lengths[history]
  records = records and records + 1 or redis.call('XLEN', history)
  local bytes = size(history, session, entry, records)
  if records > records_trimmed or bytes > bytes_trimmed then
    records = trim(history, session, records, bytes)
  end
  lengths[history] = records
  if not dated[session] then
    redis.call('ZADD', KEYS[4], ARGV[3], session)
    dated[session] = true
  end
end
local function insert(request, pending, calls, id, field, session, first, last, entry)
  if redis.call('EXISTS', request) == 1 then return 0 end
  expect(pending, 'zset')
  if field ~= '' then expect(calls, 'hash') end
  expect(KEYS[5], 'hash')
  loggable(session)
  redis.call('HSET', request, unpack(ARGV, first, last))
  redis.call('ZADD', pending, 0, id)
  if field ~= '' then redis.call('HSET', calls, field, id) end
  redis.call('HINCRBY', KEYS[5], session, 1)
  log(session, entry)
  return 1
end
-- The outbox's sets that an enqueue writes.
local function outbox_ready()
  expect(KEYS[9], 'zset')
  expect(KEYS[11], 'zset')
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
  expect(KEYS[9], 'zset')
  expect(KEYS[10], 'zset')
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
-- The audit log's next entry, numbered from its counter: no gap, one order for every
-- instance.
-- A counter behind the log (its key lost while the log was kept) would have every entry
-- refused: the entry is numbered past the log's newest instead, and the counter follows.
local function append_audit(draft)
  expect(KEYS[7], 'stream')
  expect(KEYS[8], 'string')
  local seq = next_number(KEYS[8])
  local added = redis.pcall('XADD', KEYS[7], '0-' .. seq, 'draft', draft)
  if type(added) == 'table' and added.err then
    counters[KEYS[8]] = seq - 1
    seq = last_number(KEYS[7]) + 1
    redis.log(redis.LOG_WARNING, 'askbus: the audit counter ' .. KEYS[8] ..
      ' was behind its log; the next entry is numbered ' .. seq)
    redis.call('XADD', KEYS[7], '0-' .. seq, 'draft', draft)
    counters[KEYS[8]] = seq
  end
  return 1
end
local function resolve(request, pending, resolved, id, kind, state, outcome, at, by, audit,
    entry, message)
  local found = redis.call('HMGET', request, 'kind', 'state', 'session')
  if not found[1] or found[1] ~= kind then return 'not_found' end
  if found[2] ~= 'pending' then return found[2] end
  expect(pending, 'zset')
  expect(resolved, 'zset')
  expect(KEYS[3], 'zset')
  expect(KEYS[5], 'hash')
  loggable(found[3])
  local targets = tonumber(ARGV[message])
  if targets then outbox_ready() end
  -- First: a script's writes are not undone when a later command fails, so an entry that
  -- cannot be appended must stop the resolution before anything of it is written.
  if string.sub(audit, 1, 1) == '+' then
    append_audit(string.sub(audit, 2))
  end
  if targets then
    enqueue(ARGV[message + 1], ARGV[message + 2], ARGV[message + 3], message + 4,
      message + 3 + targets)
  end
  if string.sub(by, 1, 1) == '+' then
    redis.call('HSET', request, 'state', state, 'outcome', outcome, 'resolved_at', at,
      'decided_by', string.sub(by, 2))
  else
    redis.call('HSET', request, 'state', state, 'outcome', outcome, 'resolved_at', at)
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
  loggable(session)
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
  elseif ARGV[arg] == 'u' then
    ok, result = pcall(append_audit, ARGV[arg + 1])
    arg = arg + 2
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
for counter, number in pairs(counters) do
  redis.call('SET', counter, number)
end
return results
