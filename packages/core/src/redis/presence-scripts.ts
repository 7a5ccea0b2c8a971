import { LuaScript } from './clients';
import { WEBHOOK_LIB } from './webhook-scripts';

/**
 * Presence scripts. Every key a script touches comes in KEYS (none is built inside Lua), and all
 * carry the API key's hash tag, so one script is one slot on Redis Cluster.
 *
 * Shared KEYS of the write scripts: KEYS[1] the key's channel names (any family), KEYS[2] its
 * entries by node, KEYS[3] its webhook switch, KEYS[4] its webhook event stream; then
 * `writeTopicKeys(families)` keys per topic: the `TOPIC_KEYS` in `PRESENCE_TOPIC_SUFFIXES` order
 * (keys.ts: conns, byconn, byident, identconn, idententries), the key's channel names of the
 * topic's family, then for each other family of the deployment (`TOPIC_FAMILIES`) the key's
 * channel names of that family and the `byident` of the same channel's topic in it. The scripts
 * know how many other families there are (their text is built for that number), never which.
 *
 * Webhooks: an identity's first entry in a topic is `member_added` unless the identity has an
 * entry in the channel's topic of another family (and likewise its last entry and
 * `member_removed`): the channel's identities across families count together (webhook-scripts.ts).
 *
 * Scores are −(last active ms): ascending ZRANGE gives most recent first and, on equal scores,
 * members in ascending byte order (the contract's tie-break). `idententries` holds one member
 * per entry, `<identity length>:<identity>|<rank>|<connId>` with every score 0, where rank is
 * the activity time in fixed width with each digit complemented, so the lexicographic order of
 * one identity's members is its entries' roster order and the first is its most recent entry.
 */

/** Keys per topic in the scripts' KEYS. */
export const TOPIC_KEYS = 5;

/**
 * Keys per topic in the write scripts' KEYS, with `others` families besides the topic's: the
 * topic's own, its family's channel names, then two per other family.
 */
export const writeTopicKeys = (others: number): number => TOPIC_KEYS + 1 + 2 * others;

/** KEYS before the first topic's in the write scripts. */
export const SHARED_KEYS = 4;

/** The library of the write scripts, for `others` families besides a topic's. */
const lib = (others: number): string => `${WEBHOOK_LIB}
local function topicAt(i)
  local t = {conns = KEYS[i], byconn = KEYS[i + 1], byident = KEYS[i + 2], identconn = KEYS[i + 3],
    entries = KEYS[i + 4], channels = KEYS[i + 5], others = {}}
  for k = 1, ${others} do
    t.others[k] = {channels = KEYS[i + 4 + 2 * k], byident = KEYS[i + 5 + 2 * k]}
  end
  return t
end

-- Whether the identity has an entry in the channel's topic of another family.
local function elsewhere(t, identity)
  for k = 1, #t.others do
    if redis.call('ZSCORE', t.others[k].byident, identity) then return true end
  end
  return false
end

-- Whether the channel has entries in another family.
local function channelElsewhere(t, channel)
  for k = 1, #t.others do
    if redis.call('ZSCORE', t.others[k].channels, channel) then return true end
  end
  return false
end

local COMPLEMENT = {['0'] = '9', ['1'] = '8', ['2'] = '7', ['3'] = '6', ['4'] = '5', ['5'] = '4',
  ['6'] = '3', ['7'] = '2', ['8'] = '1', ['9'] = '0'}

local function rank(score)
  return (string.gsub(string.format('%018.4f', -tonumber(score)), '%d', COMPLEMENT))
end

local function identityPrefix(identity)
  return #identity .. ':' .. identity .. '|'
end

local function entryMember(identity, score, connId)
  return identityPrefix(identity) .. rank(score) .. '|' .. connId
end

local function refreshIdentity(t, identity)
  local p = identityPrefix(identity)
  local first = redis.call('ZRANGEBYLEX', t.entries, '[' .. p, '(' .. string.sub(p, 1, -2) .. '}', 'LIMIT', 0, 1)
  if #first == 0 then
    redis.call('ZREM', t.byident, identity)
    redis.call('HDEL', t.identconn, identity)
    return true
  end
  local connId = string.sub(first[1], #p + 20)
  redis.call('ZADD', t.byident, redis.call('ZSCORE', t.byconn, connId), identity)
  redis.call('HSET', t.identconn, identity, connId)
  return false
end

local function nodeItem(nodeId, protocol, channel, connId)
  return nodeId .. '|' .. protocol .. '|' .. channel .. '|' .. connId
end

local function leaveEntry(t, protocol, channel, connId)
  local old = redis.call('HGET', t.conns, connId)
  if not old then return false end
  local e = cjson.decode(old)
  redis.call('ZREM', t.entries, entryMember(e.i, redis.call('ZSCORE', t.byconn, connId), connId))
  redis.call('HDEL', t.conns, connId)
  redis.call('ZREM', t.byconn, connId)
  local last = refreshIdentity(t, e.i)
  if last and HOOKS and not elsewhere(t, e.i) then emit('member_removed', channel, e.i) end
  redis.call('ZREM', KEYS[2], nodeItem(e.n, protocol, channel, connId))
  if redis.call('EXISTS', t.conns) == 0 then
    redis.call('ZREM', t.channels, channel)
    if not channelElsewhere(t, channel) then redis.call('ZREM', KEYS[1], channel) end
  end
  return {old, last and 1 or 0, redis.call('ZCARD', t.byident)}
end
`;

/**
 * Pages of at least this many identities read `identconn` whole when it is a listpack (see
 * `READ_LIB`'s `identityConns`); smaller pages use HMGET. The crossover measured with callgrind
 * (docs/performance.md, "What a Pusher member listing costs Redis") lies between 25 and 50
 * identities whatever the hash's size: HMGET scans the listpack once per identity, HGETALL once
 * in all but converts every field into Lua.
 */
export const WHOLE_HASH_MIN_FIELDS = 40;

/**
 * The read library: `hmgetAll(key, fields)` is HMGET in chunks (Lua's unpack has a limit): the
 * values of `fields` in order, false for a missing field. `identityConns(key, ids)` gives the
 * same for `identconn`, picking the cheaper way per call: on a listpack (Redis < 7: ziplist)
 * HMGET compares each field with the hash's fields one by one, so a page of
 * `WHOLE_HASH_MIN_FIELDS` or more reads the hash once with HGETALL into a table instead. A hash
 * Redis made a hashtable (past `hash-max-listpack-entries`, which it never turns back) looks
 * fields up in O(1) and keeps HMGET. Reads only: the keys and their data are those of any
 * gateway version.
 */
const READ_LIB = `
local function hmgetAll(key, fields)
  local out = {}
  for i = 1, #fields, 1000 do
    local chunk = redis.call('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #chunk do out[#out + 1] = chunk[j] end
  end
  return out
end

local function identityConns(key, ids)
  if #ids >= ${WHOLE_HASH_MIN_FIELDS} then
    local encoding = redis.call('OBJECT', 'ENCODING', key)
    if encoding == 'listpack' or encoding == 'ziplist' then
      local all, byField, out = redis.call('HGETALL', key), {}, {}
      for i = 1, #all, 2 do byField[all[i]] = all[i + 1] end
      for i = 1, #ids do out[i] = byField[ids[i]] or false end
      return out
    end
  end
  return hmgetAll(key, ids)
end
`;

/** Values per write in `presenceWrites`' ARGV. */
export const WRITE_ARGS = 11;

/**
 * Joins and leaves of one API key, applied in the order given (as if run one by one), with
 * `others` families besides each topic's. KEYS: the `SHARED_KEYS`, then the
 * `writeTopicKeys(others)` keys of write j's topic.
 * ARGV, `WRITE_ARGS` per write:
 * - a join: 'join', protocol, channel, connId, nodeId, identity, entry JSON, score (−now),
 *   listing ('' none, 'entries', 'identities'), listing limit, max identities (0: none);
 * - a leave: 'leave', protocol, channel, connId, and seven unused values.
 * Returns one reply per write. A join: {firstOfIdentity 0|1, identityCount, listed total,
 * {entry JSON…}, refused 0|1}: refused (nothing written) when the identity is new to the topic
 * and the topic holds max identities already; else listed right after itself (entries most recent first, or each listed
 * identity's most recent entry). A leave: nil when absent, else {entry JSON, lastOfIdentity
 * 0|1, identityCount}.
 */
const presenceWrites = (others: number): LuaScript =>
  new LuaScript(`${lib(others)}${READ_LIB}
local function join(t, protocol, channel, connId, nodeId, identity, json, score, listing, limit, max)
  if max > 0 and not redis.call('ZSCORE', t.byident, identity) then
    local held = redis.call('ZCARD', t.byident)
    if held >= max then return {0, held, 0, {}, 1} end
  end
  local old = redis.call('HGET', t.conns, connId)
  local first = 0
  if old then
    local e = cjson.decode(old)
    redis.call('ZREM', t.entries, entryMember(e.i, redis.call('ZSCORE', t.byconn, connId), connId))
    local gone = refreshIdentity(t, e.i)
    if e.n ~= nodeId then redis.call('ZREM', KEYS[2], nodeItem(e.n, protocol, channel, connId)) end
    -- The connection now presents another identity: the old one may have left, the new one arrived.
    if HOOKS and e.i ~= identity then
      if gone and not elsewhere(t, e.i) then emit('member_removed', channel, e.i) end
      if not redis.call('ZSCORE', t.byident, identity) and not elsewhere(t, identity) then
        emit('member_added', channel, identity)
      end
    end
  elseif not redis.call('ZSCORE', t.byident, identity) then
    first = 1
    if HOOKS and not elsewhere(t, identity) then emit('member_added', channel, identity) end
  end
  redis.call('HSET', t.conns, connId, json)
  redis.call('ZADD', t.byconn, score, connId)
  redis.call('ZADD', t.entries, 0, entryMember(identity, score, connId))
  refreshIdentity(t, identity)
  redis.call('ZADD', KEYS[1], 0, channel)
  redis.call('ZADD', t.channels, 0, channel)
  redis.call('ZADD', KEYS[2], 0, nodeItem(nodeId, protocol, channel, connId))
  local identities = redis.call('ZCARD', t.byident)
  local total, entries = 0, {}
  if listing == 'entries' then
    total = redis.call('ZCARD', t.byconn)
    if limit > 0 then entries = hmgetAll(t.conns, redis.call('ZRANGE', t.byconn, 0, limit - 1)) end
  elseif listing == 'identities' then
    total = identities
    if limit > 0 then
      local ids = redis.call('ZRANGE', t.byident, 0, limit - 1)
      entries = hmgetAll(t.conns, identityConns(t.identconn, ids))
    end
  end
  return {first, identities, total, entries, 0}
end

hooksOn(KEYS[3], KEYS[4])
local out = {}
for j = 1, (#KEYS - ${SHARED_KEYS}) / ${writeTopicKeys(others)} do
  local t = topicAt(${SHARED_KEYS} + 1 + (j - 1) * ${writeTopicKeys(others)})
  local a = 1 + (j - 1) * ${WRITE_ARGS}
  if ARGV[a] == 'join' then
    out[#out + 1] = join(t, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5],
      ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], tonumber(ARGV[a + 9]), tonumber(ARGV[a + 10]))
  else
    out[#out + 1] = leaveEntry(t, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
  end
end
return out
`);

/**
 * KEYS the topic's `TOPIC_KEYS` keys; ARGV[1] connId, ARGV[2] score (−now)
 * Returns 1 when the entry exists, else 0 (nothing written).
 */
export const presenceTouch = new LuaScript(`${lib(0)}
local t = topicAt(1)
local connId, score = ARGV[1], ARGV[2]
local old = redis.call('HGET', t.conns, connId)
if not old then return 0 end
local e = cjson.decode(old)
redis.call('ZREM', t.entries, entryMember(e.i, redis.call('ZSCORE', t.byconn, connId), connId))
redis.call('ZADD', t.byconn, score, connId)
redis.call('ZADD', t.entries, 0, entryMember(e.i, score, connId))
refreshIdentity(t, e.i)
return 1
`);

/**
 * KEYS[1] conns, KEYS[2] byconn of one topic; ARGV[1] limit
 * Returns {entry count, {entry JSON…}} most recent first.
 */
export const presenceRoster = new LuaScript(`${READ_LIB}
local limit = tonumber(ARGV[1])
local out = {}
if limit > 0 then out = hmgetAll(KEYS[1], redis.call('ZRANGE', KEYS[2], 0, limit - 1)) end
return {redis.call('ZCARD', KEYS[2]), out}
`);

/**
 * KEYS[1] conns, KEYS[2] byident, KEYS[3] identconn of one topic; ARGV[1] offset, ARGV[2] limit
 * Returns {identity count, {identity…}, {entry JSON of its most recent entry…}}.
 */
export const presenceIdentities = new LuaScript(`${READ_LIB}
local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local ids, entries = {}, {}
if limit > 0 then ids = redis.call('ZRANGE', KEYS[2], offset, offset + limit - 1) end
if #ids > 0 then entries = hmgetAll(KEYS[1], identityConns(KEYS[3], ids)) end
return {redis.call('ZCARD', KEYS[2]), ids, entries}
`);

/** Values per entry in `presenceRemoveEntries`' ARGV. */
export const REMOVE_ARGS = 4;

/**
 * Removes some entries of one node (a bounded chunk of its `by-node` items; the caller repeats
 * until none is left), with `others` families besides each topic's. KEYS: the `SHARED_KEYS`,
 * then `writeTopicKeys(others)` keys per topic of the chunk.
 * ARGV[1] nodeId; then `REMOVE_ARGS` per entry: topic number (1-based, in KEYS order), protocol,
 * channel, connId. An entry is removed only by the call that takes its item out of `by-node`,
 * so concurrent callers each see an entry once at most.
 * Returns {{entry number (1-based), entry JSON, lastOfIdentity 0|1, identityCount}…}.
 */
const presenceRemoveEntries = (others: number): LuaScript =>
  new LuaScript(`${lib(others)}
hooksOn(KEYS[3], KEYS[4])
local out = {}
for j = 1, (#ARGV - 1) / ${REMOVE_ARGS} do
  local a = 2 + (j - 1) * ${REMOVE_ARGS}
  local protocol, channel, connId = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  if redis.call('ZREM', KEYS[2], nodeItem(ARGV[1], protocol, channel, connId)) == 1 then
    local t = topicAt(${SHARED_KEYS} + 1 + (tonumber(ARGV[a]) - 1) * ${writeTopicKeys(others)})
    local old = redis.call('HGET', t.conns, connId)
    if old and cjson.decode(old).n == ARGV[1] then
      local left = leaveEntry(t, protocol, channel, connId)
      out[#out + 1] = {j, left[1], left[2], left[3]}
    end
  end
end
return out
`);

/** The write scripts of a deployment with `others` families besides a topic's, made once per number. */
const writeScripts = new Map<number, { writes: LuaScript; removeEntries: LuaScript }>();

export function presenceWriteScripts(others: number): { writes: LuaScript; removeEntries: LuaScript } {
  let scripts = writeScripts.get(others);
  if (!scripts) {
    scripts = { writes: presenceWrites(others), removeEntries: presenceRemoveEntries(others) };
    writeScripts.set(others, scripts);
  }
  return scripts;
}
