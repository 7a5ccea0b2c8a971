import { LuaScript } from './clients';

/**
 * Presence scripts. Every key a script touches carries the API key's hash tag, so one script is
 * one slot on Redis Cluster. Scripts derive the per-topic keys from a topic base passed in KEYS
 * (`<base>:conns`, `:byconn`, `:byident`, `:identconn`, `:ident:<identity>`, see keys.ts) and node index keys
 * from a prefix in ARGV; both stay inside the tag.
 *
 * Scores are −(last active ms): ascending ZRANGE gives most recent first and, on equal scores,
 * members in ascending byte order (the contract's tie-break).
 */
const LIB = `
local function refreshIdentity(base, identity)
  local ik = base .. ':ident:' .. identity
  local first = redis.call('ZRANGE', ik, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', base .. ':byident', identity)
    redis.call('HDEL', base .. ':identconn', identity)
    return true
  end
  redis.call('ZADD', base .. ':byident', first[2], identity)
  redis.call('HSET', base .. ':identconn', identity, first[1])
  return false
end

local function leaveEntry(base, nodePrefix, channelsKey, topic, connId)
  local old = redis.call('HGET', base .. ':conns', connId)
  if not old then return false end
  local e = cjson.decode(old)
  redis.call('HDEL', base .. ':conns', connId)
  redis.call('ZREM', base .. ':byconn', connId)
  redis.call('ZREM', base .. ':ident:' .. e.i, connId)
  local last = refreshIdentity(base, e.i)
  redis.call('SREM', nodePrefix .. e.n, topic .. '|' .. connId)
  if redis.call('EXISTS', base .. ':conns') == 0 then redis.call('SREM', channelsKey, topic) end
  return {old, last and 1 or 0, redis.call('ZCARD', base .. ':byident')}
end
`;

const READ_LIB = `
local function hmgetAll(key, fields)
  local out = {}
  for i = 1, #fields, 1000 do
    local chunk = redis.call('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #chunk do out[#out + 1] = chunk[j] end
  end
  return out
end
`;

/** Values per write in `presenceWrites`' ARGV. */
export const WRITE_ARGS = 9;

/**
 * Joins and leaves of one API key, applied in the order given (as if run one by one).
 * KEYS[1] the key's channel index, KEYS[1 + j] the topic base of write j
 * ARGV[1] node index prefix; then WRITE_ARGS per write:
 * - a join: 'join', topic (`<protocol>|<channel>`), connId, nodeId, identity, entry JSON,
 *   score (−now), listing ('' none, 'entries', 'identities'), listing limit;
 * - a leave: 'leave', topic, connId, and six unused values.
 * Returns one reply per write. A join: {firstOfIdentity 0|1, identityCount, listed total,
 * {entry JSON…}}, listed right after itself (entries most recent first, or each listed
 * identity's most recent entry). A leave: nil when absent, else {entry JSON, lastOfIdentity
 * 0|1, identityCount}.
 */
export const presenceWrites = new LuaScript(`${LIB}${READ_LIB}
local function join(base, topic, connId, nodeId, identity, json, score, listing, limit)
  local old = redis.call('HGET', base .. ':conns', connId)
  local first = 0
  if old then
    local e = cjson.decode(old)
    redis.call('ZREM', base .. ':ident:' .. e.i, connId)
    refreshIdentity(base, e.i)
    if e.n ~= nodeId then redis.call('SREM', ARGV[1] .. e.n, topic .. '|' .. connId) end
  elseif not redis.call('ZSCORE', base .. ':byident', identity) then
    first = 1
  end
  redis.call('HSET', base .. ':conns', connId, json)
  redis.call('ZADD', base .. ':byconn', score, connId)
  redis.call('ZADD', base .. ':ident:' .. identity, score, connId)
  refreshIdentity(base, identity)
  redis.call('SADD', KEYS[1], topic)
  redis.call('SADD', ARGV[1] .. nodeId, topic .. '|' .. connId)
  local identities = redis.call('ZCARD', base .. ':byident')
  local total, entries = 0, {}
  if listing == 'entries' then
    total = redis.call('ZCARD', base .. ':byconn')
    if limit > 0 then entries = hmgetAll(base .. ':conns', redis.call('ZRANGE', base .. ':byconn', 0, limit - 1)) end
  elseif listing == 'identities' then
    total = identities
    if limit > 0 then
      local ids = redis.call('ZRANGE', base .. ':byident', 0, limit - 1)
      entries = hmgetAll(base .. ':conns', hmgetAll(base .. ':identconn', ids))
    end
  end
  return {first, identities, total, entries}
end

local out = {}
for j = 2, #KEYS do
  local a = 2 + (j - 2) * ${WRITE_ARGS}
  if ARGV[a] == 'join' then
    out[#out + 1] = join(KEYS[j], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5],
      ARGV[a + 6], ARGV[a + 7], tonumber(ARGV[a + 8]))
  else
    out[#out + 1] = leaveEntry(KEYS[j], ARGV[1], KEYS[1], ARGV[a + 1], ARGV[a + 2])
  end
end
return out
`);

/**
 * KEYS[1] topic base; ARGV[1] connId, ARGV[2] score (−now)
 * Returns 1 when the entry exists, else 0 (nothing written).
 */
export const presenceTouch = new LuaScript(`${LIB}
local base, connId = KEYS[1], ARGV[1]
local old = redis.call('HGET', base .. ':conns', connId)
if not old then return 0 end
local e = cjson.decode(old)
redis.call('ZADD', base .. ':byconn', ARGV[2], connId)
redis.call('ZADD', base .. ':ident:' .. e.i, ARGV[2], connId)
refreshIdentity(base, e.i)
return 1
`);

/**
 * KEYS[1] topic base; ARGV[1] limit
 * Returns {entry count, {entry JSON…}} most recent first.
 */
export const presenceRoster = new LuaScript(`${READ_LIB}
local base, limit = KEYS[1], tonumber(ARGV[1])
local out = {}
if limit > 0 then out = hmgetAll(base .. ':conns', redis.call('ZRANGE', base .. ':byconn', 0, limit - 1)) end
return {redis.call('ZCARD', base .. ':byconn'), out}
`);

/**
 * KEYS[1] topic base; ARGV[1] offset, ARGV[2] limit
 * Returns {identity count, {identity…}, {entry JSON of its most recent entry…}}.
 */
export const presenceIdentities = new LuaScript(`${READ_LIB}
local base, offset, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local ids, entries = {}, {}
if limit > 0 then ids = redis.call('ZRANGE', base .. ':byident', offset, offset + limit - 1) end
if #ids > 0 then entries = hmgetAll(base .. ':conns', hmgetAll(base .. ':identconn', ids)) end
return {redis.call('ZCARD', base .. ':byident'), ids, entries}
`);

/**
 * KEYS[1] the key's channel index; ARGV[1] topic base prefix, ARGV[2] protocol or ''
 * Returns {{topic, {entry JSON…}}…}, entries most recent first.
 */
export const presenceChannels = new LuaScript(`${READ_LIB}
local out = {}
for _, topic in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if ARGV[2] == '' or string.sub(topic, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
    local base = ARGV[1] .. topic
    out[#out + 1] = {topic, hmgetAll(base .. ':conns', redis.call('ZRANGE', base .. ':byconn', 0, -1))}
  end
end
return out
`);

/**
 * KEYS[1] the node's index in this API key, KEYS[2] the key's channel index
 * ARGV[1] topic base prefix, ARGV[2] node index prefix
 * Empties the node's index atomically, so concurrent callers each see an entry once at most.
 * Returns {{topic, entry JSON, lastOfIdentity 0|1, identityCount}…}.
 */
export const presenceRemoveNode = new LuaScript(`${LIB}
local entries = redis.call('SMEMBERS', KEYS[1])
redis.call('DEL', KEYS[1])
local out = {}
for _, item in ipairs(entries) do
  local sep1 = string.find(item, '|', 1, true)
  local sep2 = string.find(item, '|', sep1 + 1, true)
  local topic = string.sub(item, 1, sep2 - 1)
  local left = leaveEntry(ARGV[1] .. topic, ARGV[2], KEYS[2], topic, string.sub(item, sep2 + 1))
  if left then out[#out + 1] = {topic, left[1], left[2], left[3]} end
end
return out
`);
