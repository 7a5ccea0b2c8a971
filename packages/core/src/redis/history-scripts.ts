import { createHash } from 'node:crypto';
import { Cluster } from 'ioredis';
import type { RedisClient } from './clients';
import { LuaScript } from './clients';

/**
 * Topic stream scripts. Both keys and the fan-out channel carry the topic's hash tag, so each
 * script runs in the topic's slot, atomically: every node sees one order of offsets.
 *
 * The meta HASH holds `e` (epoch) and `o` (latest offset); the LIST holds the wire forms of the
 * latest publications, oldest first, so its last entry is offset `o` and entry `i` is offset
 * `o - LLEN + 1 + i` (each wire also carries its offset). A stream starts (new epoch, offset 0)
 * whenever its meta is missing: never published to, expired, or lost with Redis' data; its LIST
 * is deleted then, so entries of an older epoch (a meta evicted alone) are never served.
 *
 * A LIST rather than a STREAM: the same CPU per publish as `XADD MAXLEN` (measured), about a third
 * less memory per entry, and reads by offset are index arithmetic on a contiguous range.
 * Offsets are concatenated by Lua, which prints integers exactly below 10^14.
 */

/**
 * KEYS[1] meta HASH, KEYS[2] LIST, optionally KEYS[3] the API key's message log LIST
 * ARGV[1] wire head, ARGV[2] wire tail (publication-codec.ts), ARGV[3] size, ARGV[4] TTL seconds,
 * ARGV[5] epoch for a new stream, ARGV[6] fan-out channel, ARGV[7] `publish` or `spublish`;
 * with KEYS[3]: ARGV[8] the log record, ARGV[9] the length past which the log is trimmed,
 * ARGV[10] the length it is trimmed to (message-log-redis.ts: LPUSH, an LTRIM once in a while).
 * Returns { offset, epoch }.
 *
 * The log append rides in the script on a standalone server only (the log key is in another
 * slot than the topic's on a cluster): the publish then costs one command, one write and one
 * reply instead of two, and the record is in the log when the publish is answered.
 */
const PUBLISH_SOURCE = `
local e = redis.call('HGET', KEYS[1], 'e')
if not e then
  e = ARGV[5]
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'e', e)
end
local o = redis.call('HINCRBY', KEYS[1], 'o', 1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
local w = ARGV[1] .. o .. '|' .. e .. '|' .. ARGV[2]
local size = tonumber(ARGV[3])
if size == 0 then
  redis.call('DEL', KEYS[2])
else
  if redis.call('RPUSH', KEYS[2], w) > size then redis.call('LTRIM', KEYS[2], -size, -1) end
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call(ARGV[7], ARGV[6], w)
if KEYS[3] and redis.call('LPUSH', KEYS[3], ARGV[8]) > tonumber(ARGV[9]) then
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[10]) - 1)
end
return { o, e }
`;

/** The publish script's text, encoded once, and its SHA1 (what EVALSHA names it by). */
const PUBLISH_BODY = Buffer.from(PUBLISH_SOURCE);
const PUBLISH_SHA = createHash('sha1').update(PUBLISH_BODY).digest('hex');

/** Connections (their sockets: ioredis opens a new one on every reconnect) that loaded the script. */
const loadedOn = new WeakSet<object>();

/**
 * Runs the publish script. A publisher's publications must get offsets in their order, so a call
 * that finds the script missing must never be retried behind calls that overtook it (as EVALSHA
 * with an EVAL fallback would: the calls behind it may succeed meanwhile, once another node
 * loaded the script). On a standalone server the script is therefore loaded on each connection
 * (each socket of the command client) before its first EVALSHA, in the same pipeline: Redis runs
 * the SCRIPT LOAD first. A NOSCRIPT (the script cache flushed under a live connection) fails that
 * call like an unreachable engine (nobody received it), and the next call loads the script again.
 * That saves Redis a SHA1 of the body and the body's transfer on every publish.
 *
 * On a cluster ioredis spreads the calls over connections it opens and replaces itself, so the
 * script goes with every call (EVAL; Redis hashes it and finds it cached).
 */
export async function runHistoryPublish(
  client: RedisClient,
  keys: readonly [meta: string, list: string] | readonly [meta: string, list: string, log: string],
  args: readonly (string | number)[],
): Promise<unknown> {
  if (client instanceof Cluster) return client.eval(PUBLISH_SOURCE, keys.length, ...keys, ...args);
  const socket = client.stream as object | undefined;
  if (socket && !loadedOn.has(socket)) {
    loadedOn.add(socket);
    client.script('LOAD', PUBLISH_BODY).catch(() => loadedOn.delete(socket));
  }
  try {
    return await client.evalsha(PUBLISH_SHA, keys.length, ...keys, ...args);
  } catch (error) {
    if (socket && error instanceof Error && error.message.startsWith('NOSCRIPT')) loadedOn.delete(socket);
    throw error;
  }
}

/**
 * KEYS[1] meta HASH, KEYS[2] LIST
 * ARGV[1] epoch for a new stream, ARGV[2] its TTL seconds, ARGV[3] first offset wanted (empty:
 * the latest `limit`), ARGV[4] limit
 * Returns { offset, epoch, wires ascending }. A read of a topic without a stream starts one, so
 * the epoch it reports is the one the next publication carries.
 */
export const historyRead = new LuaScript(`
local meta = redis.call('HMGET', KEYS[1], 'e', 'o')
local e, o = meta[1], tonumber(meta[2]) or 0
if not e then
  e = ARGV[1]
  o = 0
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'e', e, 'o', 0)
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
local limit = tonumber(ARGV[4])
if limit == 0 then return { o, e, {} } end
local first = o - redis.call('LLEN', KEYS[2]) + 1
local from
if ARGV[3] ~= '' then from = math.max(tonumber(ARGV[3]), first) else from = math.max(o - limit + 1, first) end
if from > o then return { o, e, {} } end
return { o, e, redis.call('LRANGE', KEYS[2], from - first, from - first + limit - 1) }
`);
