import { LuaScript } from './clients';
import { WEBHOOK_LIB } from './webhook-scripts';

/**
 * Connection count scripts; every key carries the API key's hash tag. The channel ZSET stores
 * −count so ascending ZRANGE orders by count descending, then channel ascending.
 */

/**
 * Lua: whether a channel has connections in another count family, whose channel ZSETs are
 * KEYS[from] to the last key (webhook events are per channel name, across the families).
 */
const elsewhere = (from: number): string => `
local function elsewhere(channel)
  for i = ${from}, #KEYS do
    if redis.call('ZSCORE', KEYS[i], channel) then return true end
  end
  return false
end
`;

/**
 * KEYS[1] channel ZSET, KEYS[2] total, KEYS[3] the node's HASH channel → count (all three of one
 * count family), KEYS[4] the key's webhook switch, KEYS[5] its event stream, KEYS[6…] the
 * channel ZSETs of the key's other count families
 * ARGV channel, delta pairs: each the net change of one event-loop turn to one channel (non-zero)
 * A decrement below the node's own share of its channel is ignored, so counts never go negative.
 * A channel's cluster-wide count going 0 → positive emits `channel_occupied`, back to 0
 * `channel_vacated` (webhook-scripts.ts), unless another family has connections in it.
 */
export const countsAdd = new LuaScript(`${WEBHOOK_LIB}${elsewhere(6)}
hooksOn(KEYS[4], KEYS[5])
local total = 0
for i = 1, #ARGV, 2 do
  local channel, delta = ARGV[i], tonumber(ARGV[i + 1])
  if delta > 0 or tonumber(redis.call('HGET', KEYS[3], channel) or '0') + delta >= 0 then
    if redis.call('HINCRBY', KEYS[3], channel, delta) <= 0 then redis.call('HDEL', KEYS[3], channel) end
    local score = tonumber(redis.call('ZINCRBY', KEYS[1], -delta, channel))
    if score >= 0 then redis.call('ZREM', KEYS[1], channel) end
    if HOOKS and (score < 0) ~= (score + delta < 0) and not elsewhere(channel) then
      if score < 0 then emit('channel_occupied', channel) else emit('channel_vacated', channel) end
    end
    total = total + delta
  end
end
if total ~= 0 and redis.call('INCRBY', KEYS[2], total) <= 0 then redis.call('DEL', KEYS[2]) end
return 1
`);

/**
 * KEYS[1] channel ZSET, KEYS[2] total, KEYS[3] the node's HASH (of one count family), KEYS[4]
 * socket HASH, KEYS[5] socket total, KEYS[6] webhook switch, KEYS[7] event stream, KEYS[8…] the
 * channel ZSETs of the key's other count families; ARGV[1] nodeId, ARGV[2] HSCAN cursor, ARGV[3]
 * HSCAN COUNT
 * Subtracts the channels of the node's share that one HSCAN step returns (about ARGV[3]; all of
 * a small hash) and its socket reservations, deleting what it subtracted: a concurrent caller
 * never subtracts the same share twice. The caller repeats with the returned cursor until it is
 * "0" (a whole scan: every channel present throughout is returned once at least), so no call
 * holds Redis long. Returns the next cursor.
 */
export const countsRemoveNode = new LuaScript(`${WEBHOOK_LIB}${elsewhere(8)}
hooksOn(KEYS[6], KEYS[7])
local sockets = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
if sockets > 0 then
  redis.call('HDEL', KEYS[4], ARGV[1])
  if redis.call('DECRBY', KEYS[5], sockets) <= 0 then redis.call('DEL', KEYS[5]) end
end
local step = redis.call('HSCAN', KEYS[3], ARGV[2], 'COUNT', ARGV[3])
local share = step[2]
local sum = 0
for i = 1, #share, 2 do
  local n = tonumber(share[i + 1])
  redis.call('HDEL', KEYS[3], share[i])
  local score = tonumber(redis.call('ZINCRBY', KEYS[1], n, share[i]))
  if score >= 0 then
    redis.call('ZREM', KEYS[1], share[i])
    if score - n < 0 and HOOKS and not elsewhere(share[i]) then emit('channel_vacated', share[i]) end
  end
  sum = sum + n
end
if sum > 0 and redis.call('INCRBY', KEYS[2], -sum) <= 0 then redis.call('DEL', KEYS[2]) end
return step[1]
`);

/**
 * KEYS[1] socket HASH nodeId → sockets, KEYS[2] socket total; ARGV[1] nodeId, ARGV[2] limit (0: none)
 * Returns 1 and counts the socket when fewer than the limit are reserved, else 0 (nothing written).
 */
export const socketsReserve = new LuaScript(`
local limit = tonumber(ARGV[2])
if limit > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') >= limit then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('INCR', KEYS[2])
return 1
`);

/** KEYS as `socketsReserve`; ARGV[1] nodeId. Gives back one of the node's sockets, if it holds any. */
export const socketsRelease = new LuaScript(`
if tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') <= 0 then return 0 end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
if redis.call('DECR', KEYS[2]) <= 0 then redis.call('DEL', KEYS[2]) end
return 1
`);
