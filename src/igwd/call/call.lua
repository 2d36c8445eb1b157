-- call.lua - the live group calls of igw's stand-in IM back end
-- (src/igwd/call/call.h; docs/talk.md "Redis keys").
--
-- Every operation on a call is one run of this script (EVALSHA), so each
-- check-and-write is atomic: Redis runs a script alone. The four keys of a
-- call share the hash tag {call:<callId>} and sit in one slot, so the script
-- runs unchanged on Redis Cluster:
--   KEYS[1] meta  HASH  ent, group, initiator, state (live|ended), started, ended
--   KEYS[2] live  ZSET  userId -> heartbeat deadline (Unix ms): the live members
--   KEYS[3] mem   HASH  e:<uid> memberEpoch, a:<uid> publishAllowed (0|1),
--                       r:<uid> audioRevision: kept across re-entries
--   KEYS[4] rcpt  HASH  receipt key -> the leave's result: no eviction
-- ARGV[1] is the operation, ARGV[2] the caller's enterprise (a call of
-- another enterprise does not exist for it), then the operation's own.
-- Time is the server's (TIME), one clock for every node. Nothing lives
-- forever: each write keeps every key alive for the heartbeat plus KEEP_MS,
-- and an ended call's keys (its receipts) for KEEP_MS.
-- Answers: {'OK', ...} or {word} where word names the refusal (call.c).
--
-- The stand-in's bounds on live calls (reserve, lease, release) are the
-- one exception to the four keys: KEYS[1] is the live calls of a group,
-- KEYS[2] those a user started, ZSETs callId -> lease (Unix ms), both under
-- the hash tag {im} (one slot). A start reserves its place before the call
-- exists (a call's keys are in another slot); each join or heartbeat
-- leases it until its new deadline, a call's end releases it, and a lease
-- that runs out (no member heartbeats any more) frees it too.
local meta, live, mem, rcpt = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, ent = ARGV[1], ARGV[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local KEEP_MS = 600000 -- receipts, and an ended call: at least 10 minutes
local RCPT_MAX = 256   -- leave receipts per call; full refuses new control
local LIVE_MAX = 256   -- live members of a call (call.h IGW_CALL_MEMBERS_MAX)
local GRANT_MS = 2000  -- an audio-access record is good for at most this

local function keep(ms)
  for _, k in ipairs(KEYS) do
    local cur = redis.call('PTTL', k)
    if cur == -1 or (cur >= 0 and cur < ms) then redis.call('PEXPIRE', k, ms) end
  end
end

local function notice(what, uid)
  redis.call('PUBLISH', 'igw:call', cjson.encode({callId = ARGV[#ARGV], op = what, userId = uid}))
end


local function member(uid)
  local v = redis.call('HMGET', mem, 'e:' .. uid, 'a:' .. uid, 'r:' .. uid)
  return tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0')
end

local function deadline(uid)
  local s = redis.call('ZSCORE', live, uid)
  if s then return tonumber(s) end
  return nil
end

local function end_call()
  redis.call('HSET', meta, 'state', 'ended', 'ended', now)
  redis.call('DEL', live)
  keep(KEEP_MS)
  notice('end', '')
end

-- The live call of the caller's enterprise, after lapsed heartbeats left
-- it: a departure that leaves fewer than two members ends the call (the
-- IM's head-count rule), a lapse as much as a leave.
local function the_call()
  local m = redis.call('HMGET', meta, 'ent', 'state', 'initiator', 'group')
  if not m[1] or m[1] ~= ent then return nil, 'NO_CALL' end
  if m[2] ~= 'live' then return nil, 'ENDED' end
  if redis.call('ZREMRANGEBYSCORE', live, '-inf', '(' .. now) > 0 then
    notice('lapse', '')
    if redis.call('ZCARD', live) < 2 then end_call(); return nil, 'ENDED' end
  end
  return m
end

if op == 'start' then -- ent group uid hb_ms callId
  local group, uid, hb = ARGV[3], ARGV[4], tonumber(ARGV[5])
  if redis.call('EXISTS', meta) == 1 then return {'EXISTS'} end
  redis.call('HSET', meta, 'ent', ent, 'group', group, 'initiator', uid, 'state', 'live', 'started', now)
  local e = redis.call('HINCRBY', mem, 'e:' .. uid, 1)
  redis.call('HSET', mem, 'a:' .. uid, 1, 'r:' .. uid, 1)
  redis.call('ZADD', live, now + hb, uid)
  keep(hb + KEEP_MS)
  return {'OK', e, now + hb}

elseif op == 'peek' then -- ent target callId: what a caller checks before the script that acts
  local m, err = the_call()
  if not m then return {err} end
  local e = member(ARGV[3])
  return {'OK', m[4], m[3], e, deadline(ARGV[3]) and 1 or 0}

elseif op == 'join' then -- ent uid hb_ms callId
  local uid, hb = ARGV[3], tonumber(ARGV[4])
  local m, err = the_call()
  if not m then return {err} end
  local e
  local fresh = 0
  if deadline(uid) then
    e = member(uid)
  else
    if redis.call('ZCARD', live) >= LIVE_MAX then return {'CALL_FULL'} end
    e = redis.call('HINCRBY', mem, 'e:' .. uid, 1) -- a new join instance
    redis.call('HSETNX', mem, 'a:' .. uid, 1)
    redis.call('HSETNX', mem, 'r:' .. uid, 1)
    fresh = 1
  end
  redis.call('ZADD', live, now + hb, uid)
  keep(hb + KEEP_MS)
  if fresh == 1 then notice('join', uid) end
  return {'OK', e, now + hb, fresh, m[4], m[3]}

elseif op == 'heartbeat' then -- ent uid hb_ms callId
  local uid, hb = ARGV[3], tonumber(ARGV[4])
  local m, err = the_call()
  if not m then return {err} end
  if not deadline(uid) then return {'NOT_LIVE'} end
  redis.call('ZADD', live, 'XX', now + hb, uid)
  keep(hb + KEEP_MS)
  return {'OK', (member(uid)), now + hb, 0, m[4], m[3]}

elseif op == 'hangup' then -- ent uid callId: the IM's own exit, no receipt
  local uid = ARGV[3]
  local m, err = the_call()
  if not m then return {err} end
  if not deadline(uid) then return {'NOT_LIVE'} end
  local e = member(uid)
  redis.call('ZREM', live, uid)
  notice('leave', uid)
  local rest = redis.call('ZRANGE', live, 0, -1)
  local ended = 0
  if #rest < 2 then end_call(); ended = 1 end
  return {'OK', e, ended, m[4], m[3]}

elseif op == 'roster' then -- ent callId: initiator, group, receipts held, then the live members,
  -- each {uid, epoch, allowed, revision, deadline}
  local m, err = the_call()
  if not m then return {err} end
  local out = {'OK', m[3], m[4], redis.call('HLEN', rcpt)}
  local ids = redis.call('ZRANGE', live, 0, -1, 'WITHSCORES')
  for i = 1, #ids, 2 do
    local e, a, r = member(ids[i])
    out[#out + 1] = {ids[i], e, a, r, tonumber(ids[i + 1])}
  end
  return out

elseif op == 'audio_read' then -- ent caller target callId
  local caller, target = ARGV[3], ARGV[4]
  local m, err = the_call()
  if not m then return {err} end
  local dc = deadline(caller)
  if not dc then return {'NOT_LIVE'} end
  local dt = deadline(target)
  if not dt then return {'TARGET_NOT_LIVE'} end
  local e, a, r = member(target)
  return {'OK', a, r, e, math.min(now + GRANT_MS, dc, dt)}

elseif op == 'audio_set' then -- ent caller target allowed expectedRevision memberEpoch callId
  local caller, target = ARGV[3], ARGV[4]
  local allowed, want_r, want_e = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  local m, err = the_call()
  if not m then return {err} end
  if m[3] ~= caller then return {'NOT_INITIATOR'} end
  local dc = deadline(caller)
  if not dc then return {'NOT_LIVE'} end
  local dt = deadline(target)
  if not dt then return {'TARGET_NOT_LIVE'} end
  local e, a, r = member(target)
  if e ~= want_e then return {'EPOCH'} end -- re-entered since it was read
  if r ~= want_r then return {'REVISION'} end
  local changed = 0
  if a ~= allowed then
    redis.call('HSET', mem, 'a:' .. target, allowed)
    r = redis.call('HINCRBY', mem, 'r:' .. target, 1)
    a = allowed
    changed = 1
    notice('audio', target)
  end
  return {'OK', a, r, e, math.min(now + GRANT_MS, dc, dt), changed}

elseif op == 'leave' then -- ent actor target expectedEpoch receiptKey hb_ms callId
  local actor, target, want_e, key, hb = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
  local done = redis.call('HGET', rcpt, key)
  if done then return {'REPLAY', done} end
  local m, err = the_call()
  if not m then return {err} end
  if not deadline(actor) then return {'NOT_LIVE'} end
  if target ~= actor and m[3] ~= actor then return {'NOT_INITIATOR'} end
  if not deadline(target) then return {'TARGET_NOT_LIVE'} end
  local e = member(target)
  if e ~= want_e then return {'EPOCH'} end
  if redis.call('HLEN', rcpt) >= RCPT_MAX then return {'FULL'} end
  redis.call('ZREM', live, target)
  notice('leave', target)
  local rest = redis.call('ZRANGE', live, 0, -1)
  local ended = false
  if #rest < 2 then ended = true end
  -- The receipt: "<memberEpoch> <ended 0|1> <uid,uid,...>" (call.c builds the result)
  local body = e .. ' ' .. (ended and '1' or '0') .. ' ' .. table.concat(rest, ',')
  redis.call('HSET', rcpt, key, body)
  if ended then end_call() else keep(hb + KEEP_MS) end
  return {'OK', body, m[4], m[3]}

elseif op == 'reserve' then -- ent maxGroup maxUser lease_ms callId (KEYS: the registry)
  local mg, mu, lease = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  for i = 1, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. now) end
  if redis.call('ZCARD', KEYS[2]) >= mu then return {'USER_CALLS'} end
  if redis.call('ZCARD', KEYS[1]) >= mg then return {'GROUP_CALLS'} end
  for i = 1, 2 do
    redis.call('ZADD', KEYS[i], now + lease, ARGV[#ARGV])
    redis.call('PEXPIRE', KEYS[i], lease + KEEP_MS)
  end
  return {'OK', now}

elseif op == 'lease' then -- ent until callId: a live call's place, kept while members heartbeat
  local upto = tonumber(ARGV[3])
  for i = 1, 2 do
    redis.call('ZADD', KEYS[i], 'XX', 'GT', upto, ARGV[#ARGV]) -- never revives a released one
    if redis.call('PTTL', KEYS[i]) < upto - now + KEEP_MS then redis.call('PEXPIRE', KEYS[i], upto - now + KEEP_MS) end
  end
  return {'OK', now}

elseif op == 'release' then -- ent callId: the call ended
  for i = 1, 2 do redis.call('ZREM', KEYS[i], ARGV[#ARGV]) end
  return {'OK', now}

elseif op == 'receipt' then -- ent receiptKey callId: a leave's result, if it ran
  local done = redis.call('HGET', rcpt, ARGV[3])
  if done then return {'OK', done} end
  return {'NONE'}
end
return {'BAD_OP'}
