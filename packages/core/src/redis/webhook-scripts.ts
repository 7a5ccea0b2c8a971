import { MAX_WEBHOOK_QUEUE_EVENTS } from '../webhooks/webhooks';
import { LuaScript } from './clients';

/**
 * Stream entries kept per key at most (approximately: `MAXLEN ~`) by the counts and presence
 * scripts' events; `webhookAppend` applies the configured limits, which are at most this.
 */
export const WEBHOOK_STREAM_MAX = MAX_WEBHOOK_QUEUE_EVENTS;

/**
 * Lua shared by the scripts that produce webhook events. `hooksOn(switch, stream)` reads the
 * key's switch once per call (`webhookSwitch` in keys.ts: its events between spaces, absent
 * without a webhook); `emit` appends an event to the stream only when the switch lists it, so a
 * key without a webhook writes nothing.
 */
export const WEBHOOK_LIB = `
local HOOKS, HOOK_STREAM = false, nil
local function hooksOn(switch, stream)
  HOOKS = redis.call('GET', switch)
  HOOK_STREAM = stream
end
local function emit(name, channel, user)
  if HOOKS and string.find(HOOKS, ' ' .. name .. ' ', 1, true) then
    local e = {name = name, channel = channel}
    if user then e.user_id = user end
    redis.call('XADD', HOOK_STREAM, 'MAXLEN', '~', ${WEBHOOK_STREAM_MAX}, '*', 'e', cjson.encode(e))
  end
end
`;

/**
 * KEYS[1] lease; ARGV[1] owner, ARGV[2] ttl ms. Takes or renews the lease when it is free or
 * already the owner's; returns 1 then, else 0.
 */
export const webhookLease = new LuaScript(`
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`);

/**
 * Lua shared by the scripts that apply a key's limits. `trim(stream, counter, maxEvents,
 * maxBytes, addEvents, addBytes)` deletes the stream's oldest entries (pending ones included:
 * `webhookRead` acknowledges entries that are gone) until `addEvents` more events of `addBytes`
 * fit within the limits, counting down the `b` sizes of what it deletes; returns the number
 * deleted and the byte count left (0 for an empty stream, whatever the counter said). One call
 * deletes at most about `TRIM_MAX` entries, so a backlog far over a lowered limit is cut over
 * several calls rather than in one long script.
 */
const TRIM_MAX = 5000;
const TRIM_LIB = `
local function trim(stream, counter, maxEvents, maxBytes, addEvents, addBytes)
  local len = redis.call('XLEN', stream)
  local bytes = 0
  if len > 0 then bytes = tonumber(redis.call('GET', counter) or '0') end
  local dropped = 0
  while len > 0 and dropped < ${TRIM_MAX} and (len + addEvents > maxEvents or bytes + addBytes > maxBytes) do
    local ids = {}
    for _, entry in ipairs(redis.call('XRANGE', stream, '-', '+', 'COUNT', 100)) do
      if not (len + addEvents > maxEvents or bytes + addBytes > maxBytes) then break end
      local fields = entry[2]
      for i = 1, #fields, 2 do
        if fields[i] == 'b' then bytes = bytes - tonumber(fields[i + 1]) end
      end
      ids[#ids + 1] = entry[1]
      len = len - 1
    end
    if #ids == 0 then break end
    redis.call('XDEL', stream, unpack(ids))
    dropped = dropped + #ids
  end
  if bytes < 0 then bytes = 0 end
  return dropped, bytes
end
`;

/**
 * KEYS[1] a key's event stream, KEYS[2] its byte count (`webhookBytes`), KEYS[3] its switch
 * (`webhookSwitch`); ARGV[1] the event's JSON text, ARGV[2] max events, ARGV[3] max bytes, ARGV[4]
 * the event's name. Returns how many events were dropped.
 *
 * Stores nothing unless the switch lists the event, as the other scripts' `emit`. Stores an event
 * the gateway produces (`client_event`, `cache_miss`) (the only events carrying a client's data; channel and presence events
 * are a few hundred bytes and bounded by the count) with its size in field `b`, counted in
 * KEYS[2], after making room for it (`trim`). An event over max bytes by itself is dropped
 * instead (returns 1). The count restarts at 0 whenever the stream is empty, so an entry trimmed
 * by the other scripts' `MAXLEN ~` (never counted down) skews it only until the backlog has drained.
 */
export const webhookAppend = new LuaScript(`${TRIM_LIB}
local stream, counter = KEYS[1], KEYS[2]
local json, maxEvents, maxBytes = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local hooks = redis.call('GET', KEYS[3])
if not hooks or not string.find(hooks, ' ' .. ARGV[4] .. ' ', 1, true) then return 0 end
local size = #json
if size > maxBytes then return 1 end
local dropped, bytes = trim(stream, counter, maxEvents, maxBytes, 1, size)
redis.call('XADD', stream, '*', 'e', json, 'b', size)
redis.call('SET', counter, bytes + size)
return dropped
`);

/**
 * KEYS[1] a key's event stream, KEYS[2] its byte count; ARGV[1] max events, ARGV[2] max bytes.
 * Deletes the oldest entries while the stream is over either limit; returns how many. The
 * dispatcher holding the key runs it each second, so the channel and presence events the other
 * scripts store (without knowing the configured limits) are held to them too.
 */
export const webhookTrim = new LuaScript(`${TRIM_LIB}
local stream, counter = KEYS[1], KEYS[2]
local dropped, bytes = trim(stream, counter, tonumber(ARGV[1]), tonumber(ARGV[2]), 0, 0)
if dropped > 0 and redis.call('EXISTS', counter) == 1 then redis.call('SET', counter, bytes) end
return dropped
`);

/**
 * KEYS[1] a key's event stream, KEYS[2] its byte count; ARGV[1] consumer group, ARGV[2] consumer, ARGV[3] max events
 * (0: acknowledge only), ARGV[4] (optional) the ids to acknowledge first, separated by spaces.
 *
 * One round trip per batch for the dispatcher: acknowledges and deletes the given entries (the
 * batch it has just delivered or dropped; their `b` sizes counted down in KEYS[2]), then reads. Reading takes over every entry pending in
 * the group first (`XAUTOCLAIM` from 0, so a dead consumer's batch comes back whole), else reads
 * new ones (`XREADGROUP >`). The group is created (at 0, so a stream is read from its first entry)
 * on the first read of an existing stream; a missing stream is never created (a deleted key's
 * dispatcher leaves nothing behind). Pending entries trimmed away (`MAXLEN ~`), and any entry
 * without an `e` field, are acknowledged and deleted: there is nothing to deliver for them.
 * Returns { ids separated by spaces, event JSON texts separated by newlines } in stream order (the
 * `e` field of each entry; JSON text never holds a raw newline), both empty when there is none.
 *
 * Ids and events travel as one string each, not one argument or reply element per event: a batch
 * of 100 costs the gateway two strings to encode and parse instead of about 300 (docs/webhooks.md,
 * "Cost").
 */
export const webhookRead = new LuaScript(`
local stream, group, consumer, max = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local done, isDone, freed = {}, {}, 0
for id in string.gmatch(ARGV[4] or '', '%S+') do
  done[#done + 1] = id
  isDone[id] = true
end
-- Only keys that store client events have a byte count; a batch is one range of the stream.
if #done > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  local function before(a, b)
    local am, as = string.match(a, '^(%d+)-(%d+)$')
    local bm, bs = string.match(b, '^(%d+)-(%d+)$')
    if not (am and bm) then return false end
    if #am ~= #bm then return #am < #bm end
    if am ~= bm then return am < bm end
    return tonumber(as) < tonumber(bs)
  end
  local first, last = done[1], done[1]
  for _, id in ipairs(done) do
    if before(id, first) then first = id end
    if before(last, id) then last = id end
  end
  for _, entry in ipairs(redis.call('XRANGE', stream, first, last)) do
    if isDone[entry[1]] then
      for i = 1, #entry[2], 2 do
        if entry[2][i] == 'b' then freed = freed + tonumber(entry[2][i + 1]) end
      end
    end
  end
end
if #done > 0 then
  redis.call('XACK', stream, group, unpack(done))
  redis.call('XDEL', stream, unpack(done))
end
if freed > 0 then redis.call('DECRBY', KEYS[2], freed) end
if max == 0 or redis.call('EXISTS', stream) == 0 then return { '', '' } end
local claimed = redis.pcall('XAUTOCLAIM', stream, group, consumer, 0, '0-0', 'COUNT', max)
if claimed.err then
  if not string.find(claimed.err, 'NOGROUP', 1, true) then return claimed end
  redis.call('XGROUP', 'CREATE', stream, group, '0')
  claimed = redis.call('XAUTOCLAIM', stream, group, consumer, 0, '0-0', 'COUNT', max)
end
local ids, events, gone = {}, {}, claimed[3] or {}
local function take(entries)
  for _, entry in ipairs(entries) do
    local fields, json = entry[2], nil
    if type(fields) == 'table' then
      for i = 1, #fields, 2 do if fields[i] == 'e' then json = fields[i + 1] end end
    end
    if json then
      ids[#ids + 1] = entry[1]
      events[#events + 1] = json
    else
      gone[#gone + 1] = entry[1]
    end
  end
end
take(claimed[2])
if #ids == 0 then
  local read = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', max, 'STREAMS', stream, '>')
  if read then take(read[1][2]) end
end
if #gone > 0 then
  redis.call('XACK', stream, group, unpack(gone))
  redis.call('XDEL', stream, unpack(gone))
end
return { table.concat(ids, ' '), table.concat(events, '\\n') }
`);
