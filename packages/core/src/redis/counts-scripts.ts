import { LuaScript } from './clients';

/**
 * Connection count scripts; every key carries the API key's hash tag. The channel ZSET stores
 * −count so ascending ZRANGE orders by count descending, then channel ascending.
 */

/**
 * KEYS[1] channel ZSET, KEYS[2] total, KEYS[3] the node's HASH channel → count
 * ARGV channel, delta pairs: each the net change of one event-loop turn to one channel (non-zero)
 * A decrement below the node's own share of its channel is ignored, so counts never go negative.
 */
export const countsAdd = new LuaScript(`
local total = 0
for i = 1, #ARGV, 2 do
  local channel, delta = ARGV[i], tonumber(ARGV[i + 1])
  if delta > 0 or tonumber(redis.call('HGET', KEYS[3], channel) or '0') + delta >= 0 then
    if redis.call('HINCRBY', KEYS[3], channel, delta) <= 0 then redis.call('HDEL', KEYS[3], channel) end
    if tonumber(redis.call('ZINCRBY', KEYS[1], -delta, channel)) >= 0 then redis.call('ZREM', KEYS[1], channel) end
    total = total + delta
  end
end
if total ~= 0 and redis.call('INCRBY', KEYS[2], total) <= 0 then redis.call('DEL', KEYS[2]) end
return 1
`);

/**
 * KEYS[1] channel ZSET, KEYS[2] total, KEYS[3] the node's HASH
 * Subtracts the node's whole share and deletes it, atomically: a second caller finds nothing.
 */
export const countsRemoveNode = new LuaScript(`
local share = redis.call('HGETALL', KEYS[3])
local sum = 0
for i = 1, #share, 2 do
  local n = tonumber(share[i + 1])
  if tonumber(redis.call('ZINCRBY', KEYS[1], n, share[i])) >= 0 then redis.call('ZREM', KEYS[1], share[i]) end
  sum = sum + n
end
redis.call('DEL', KEYS[3])
if sum > 0 and redis.call('INCRBY', KEYS[2], -sum) <= 0 then redis.call('DEL', KEYS[2]) end
return sum
`);
