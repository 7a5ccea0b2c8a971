import { createHash } from 'node:crypto';
import { Cluster } from 'ioredis';
import type { Redis } from 'ioredis';
import type { StreamPosition } from '../history/history';
import { EMPTY_EPOCH_CLOCK_TOLERANCE_MS } from '../history/empty-epochs';
import type { RedisClient } from './clients';
import { LuaScript } from './clients';
import { evalFlat } from './flat-command';

/**
 * Topic stream scripts. Both keys and the fan-out channel carry the topic's hash tag, so each
 * script runs in the topic's slot, atomically: every node sees one order of offsets. (The batch
 * script, standalone servers only, touches several topics in one call: there is one slot.)
 *
 * The meta HASH holds `e` (epoch), `o` (latest offset) and `c` (the master's `TIME` in ms when the
 * stream started, by which empty epochs are judged: empty-epochs.ts); the LIST holds the wire
 * forms of the latest publications, oldest first, so its last entry is offset `o` and entry `i`
 * is offset `o - LLEN + 1 + i` (each wire also carries its offset). Only a publication starts a
 * stream (new epoch, offset 1), whenever its meta is missing: never published to, expired, or
 * lost with Redis' data; its LIST is deleted then, so entries of an older epoch (a meta evicted
 * alone) are never served. Reads write nothing.
 *
 * A LIST rather than a STREAM: the same CPU per publish as `XADD MAXLEN` (measured), about a third
 * less memory per entry, and reads by offset are index arithmetic on a contiguous range.
 * Offsets are concatenated by Lua, which prints integers exactly below 10^14.
 */

/**
 * Appends wire `w` to a stream's LIST and keeps the LIST within `size` entries and `cap` bytes
 * (0: no byte cap), dropping the oldest; the newest entry always stays. The meta HASH's `b`
 * holds the LIST's bytes: set afresh when the LIST held nothing before (a new stream, history
 * turned back on, a LIST lost alone), moved by the difference otherwise. Returns the bytes dropped
 * for the cap (entries dropped for `size` are the normal turnover, not counted).
 *
 * Cost (the publish path is measured, docs/benchmarks.md): a full stream pays an LPOP and an
 * HINCRBY where it paid an LTRIM; the cap's loop runs only when the bytes pass it.
 */
const STORE_LIB = `
local function store(meta, list, w, size, cap)
  local n = redis.call('RPUSH', list, w)
  local gone = 0
  if n > size then
    for _, x in ipairs(redis.call('LPOP', list, n - size)) do gone = gone + #x end
    n = size
  end
  local b
  if n == 1 then
    b = #w
    redis.call('HSET', meta, 'b', b)
  else
    b = redis.call('HINCRBY', meta, 'b', #w - gone)
    if b <= #w then
      -- The LIST holds more than w (n > 1): a LIST stored before its bytes were counted. Once.
      b = 0
      for _, x in ipairs(redis.call('LRANGE', list, 0, -1)) do b = b + #x end
      redis.call('HSET', meta, 'b', b)
    end
  end
  local cut = 0
  while cap > 0 and b > cap and n > 1 do
    local x = #redis.call('LPOP', list)
    b, cut, n = b - x, cut + x, n - 1
  end
  if cut > 0 then redis.call('HINCRBY', meta, 'b', -cut) end
  return cut
end
`;

/**
 * KEYS[1] meta HASH, KEYS[2] LIST, optionally KEYS[3] the API key's message log LIST
 * ARGV[1] wire head, ARGV[2] wire tail (publication-codec.ts), ARGV[3] size, ARGV[4] TTL seconds,
 * ARGV[5] epoch for a new stream, ARGV[6] fan-out channel, ARGV[7] byte cap (0: none; see
 * `STORE_LIB`); with KEYS[3]: ARGV[8] the log record, ARGV[9] the length past which the log is
 * trimmed, ARGV[10] the length it is trimmed to (message-log-redis.ts: LPUSH, an LTRIM once in a
 * while).
 * Returns the position as the wire carries it, `<offset>|<epoch>|`, followed by the bytes the
 * byte cap dropped when it dropped some (`positionOf` and `trimmedOf` read it).
 *
 * The log append rides in the script on a standalone server only (the log key is in another
 * slot than the topic's on a cluster): the publish then costs one command, one write and one
 * reply instead of two, and the record is in the log when the publish is answered.
 *
 * What Redis spends on a call, counted in instructions (docs/performance.md, "What the publish
 * script costs Redis"): every string the script receives or builds is hashed whole by Redis' Lua,
 * each `redis.call` costs about as much as the command it runs, and a table reply is read back
 * field by field. Hence a string reply, and the channel's command in the source rather than
 * an argument.
 *
 * Exported for the benchmark, whose ceiling server runs this same script to show what storing a
 * publication costs at the least JavaScript around it (docs/benchmarks.md, "Publish cost").
 */
export const PUBLISH_SOURCE = `${STORE_LIB}
local e = redis.call('HGET', KEYS[1], 'e')
if not e then
  e = ARGV[5]
  redis.call('DEL', KEYS[2])
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'e', e, 'c', t[1] .. string.format('%03d', math.floor(t[2] / 1000)))
end
local o = redis.call('HINCRBY', KEYS[1], 'o', 1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
local p = o .. '|' .. e .. '|'
local w = ARGV[1] .. p .. ARGV[2]
local size = tonumber(ARGV[3])
local cut = 0
if size == 0 then
  redis.call('DEL', KEYS[2])
else
  cut = store(KEYS[1], KEYS[2], w, size, tonumber(ARGV[7]))
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call('PUBLISH', ARGV[6], w)
if KEYS[3] and redis.call('LPUSH', KEYS[3], ARGV[8]) > tonumber(ARGV[9]) then
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[10]) - 1)
end
if cut > 0 then return p .. cut end
return p
`;

/** The same on a Redis Cluster, where the fan-out channel is a shard channel. */
const SPUBLISH_SOURCE = PUBLISH_SOURCE.replace("redis.call('PUBLISH'", "redis.call('SPUBLISH'");

/**
 * `STORE_LIB`'s `store` for a run of k consecutive publications of one stream, appended in one
 * RPUSH: the LIST, its `b` and each publication's reply end exactly as k calls of `store` in a
 * row would leave them, for k redis.calls fewer each of RPUSH, LPOP, HINCRBY and EXPIRE.
 *
 * Why one trim is the same: each `store` keeps the longest suffix of what it holds within `size`
 * entries and `cap` bytes (or its newest entry alone), and a suffix that fits stays fitting when
 * its oldest entries go; so k appends each followed by a trim keep the same suffix as the k
 * appends followed by one trim. `b` moves by the bytes added less the bytes dropped either way; it
 * is set afresh when the run's wires are all the LIST holds (the LIST held nothing before, or all
 * it held was dropped: its bytes are then known without reading it), and counted in full when it
 * was missing (a LIST stored before its bytes were counted), as `store` does.
 *
 * The bytes dropped for the cap are reported per publication as k `store`s would have reported
 * them, so the trimmed-bytes metric does not depend on how publications were batched (one trim
 * drops for `size` some entries that k trims would have dropped earlier for the cap): from the
 * LIST's length and bytes before the run and the lengths of the entries dropped, oldest first,
 * the k trims are replayed in arithmetic only. Nothing can have been dropped for the cap when the
 * LIST's bytes before the run plus the run's stay within it (the common case, a cap far above
 * `size` entries), and the replay is skipped. Returns the cuts, or nil when all are 0.
 */
const STORE_RUN_LIB = `
local function storeRun(meta, list, wires, size, cap)
  local k = #wires
  local n = redis.call('RPUSH', list, unpack(wires))
  local before, sum = n - k, 0
  for i = 1, k do sum = sum + #wires[i] end
  local dropped, gone = {}, 0
  if n > size then
    for i, x in ipairs(redis.call('LPOP', list, n - size)) do
      dropped[i] = #x
      gone = gone + #x
    end
    n = size
  end
  local b
  local fresh = n <= k
  if fresh then
    b = 0
    for i = k - n + 1, k do b = b + #wires[i] end
  else
    b = redis.call('HINCRBY', meta, 'b', sum - gone)
    if b <= sum then
      b = 0
      for _, x in ipairs(redis.call('LRANGE', list, 0, -1)) do b = b + #x end
      redis.call('HSET', meta, 'b', b)
    end
  end
  local b0, cut = b - sum + gone, 0
  while cap > 0 and b > cap and n > 1 do
    local x = #redis.call('LPOP', list)
    dropped[#dropped + 1] = x
    b, cut, n = b - x, cut + x, n - 1
  end
  if fresh then
    redis.call('HSET', meta, 'b', b)
  elseif cut > 0 then
    redis.call('HINCRBY', meta, 'b', -cut)
  end
  if cap == 0 or b0 + sum <= cap then return nil end
  local cuts, m, d = {}, before, 1
  b = b0
  for i = 1, k do
    m, b = m + 1, b + #wires[i]
    while m > size do
      b, d, m = b - (dropped[d] or 0), d + 1, m - 1
    end
    local c = 0
    while b > cap and m > 1 do
      local x = dropped[d] or 0
      b, c, d, m = b - x, c + x, d + 1, m - 1
    end
    cuts[i] = c
  end
  return cuts
end
`;

/**
 * The same for N publications in one call (a standalone server only: on a cluster the topics'
 * keys are in different slots), in call order: `RedisBroker` gathers the stream publications of
 * one event-loop turn (stream-publishes.ts). Each call costs Redis a fixed share (the command
 * read, its tables set up, the reply written) and ioredis about 10 µs: one call carrying N
 * publications pays that once. A batch of one takes the single script above (its arguments are
 * fewer), so a quiet gateway's publish costs what it did.
 *
 * The publications come in runs: consecutive publications of one topic with the same retention,
 * fan-out channel and message log (a Pusher `batch_events` to one channel, a hot channel
 * published to several times in a turn; a run is often of one). A run pays the stream's work
 * once: one HGET of the epoch (and the new-stream path), one HINCRBY of the offset by k (its
 * publications take the k offsets in call order), the EXPIREs, and one RPUSH of its k wires with
 * one trim (`STORE_RUN_LIB`); then one PUBLISH per wire, in order, each wire exactly as the
 * single script builds it. A run of one takes `store`, as the batch did for each publication
 * before runs: the run's tables and loops cost more than they save there (docs/performance.md,
 * "Runs of one topic in a batch call"). What the script stores is what k single scripts would:
 * the same keys, types and values, so gateways of other versions publish beside it.
 *
 * KEYS: for run q (1-based) KEYS[2q-1] its meta HASH, KEYS[2q] its LIST; then the distinct
 * message log LISTs of the batch, log j at KEYS[2r+j].
 * ARGV[1] epoch for any stream the batch starts (a stream starts at most once per batch, and
 * epochs only need to differ within one topic), ARGV[2] r (runs), ARGV[3] m (log LISTs); then
 * each run in turn: its 6 arguments k (its publications), size, TTL seconds, fan-out channel,
 * byte cap, its log j (0: none), followed by each of its k publications' wire head and wire
 * tail, and with a log its log record; then log j's trim lengths: the length past which it is
 * trimmed, the length it is trimmed to.
 * Each log's records go out in one LPUSH in call order (the newest at the head, as one LPUSH per
 * record would leave them); the script is atomic, so nobody sees a publication without its record.
 * Returns each publication's position as the single script does, in call order.
 *
 * Exported for the benchmark's history floor, which runs it for a batch as the gateway does.
 */
export const PUBLISH_BATCH_SOURCE = `${STORE_LIB}${STORE_RUN_LIB}
local epoch, r, m = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out, records = {}, {}
for j = 1, m do records[tostring(j)] = {} end
local a = 3
for q = 1, r do
  local meta, list = KEYS[2 * q - 1], KEYS[2 * q]
  local k, size, ttl, channel = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4]
  local cap, log = tonumber(ARGV[a + 5]), records[ARGV[a + 6]]
  a = a + 6
  local e = redis.call('HGET', meta, 'e')
  if not e then
    e = epoch
    redis.call('DEL', list)
    local t = redis.call('TIME')
    redis.call('HSET', meta, 'e', e, 'c', t[1] .. string.format('%03d', math.floor(t[2] / 1000)))
  end
  local o = redis.call('HINCRBY', meta, 'o', k)
  redis.call('EXPIRE', meta, ttl)
  if k == '1' then
    local p = o .. '|' .. e .. '|'
    local w = ARGV[a + 1] .. p .. ARGV[a + 2]
    if log then
      log[#log + 1] = ARGV[a + 3]
      a = a + 3
    else
      a = a + 2
    end
    local cut = 0
    if size == 0 then
      redis.call('DEL', list)
    else
      cut = store(meta, list, w, size, cap)
      redis.call('EXPIRE', list, ttl)
    end
    redis.call('PUBLISH', channel, w)
    if cut > 0 then out[#out + 1] = p .. cut else out[#out + 1] = p end
  else
    k = tonumber(k)
    o = o - k
    local first, wires = #out, {}
    for i = 1, k do
      local p = (o + i) .. '|' .. e .. '|'
      out[first + i] = p
      wires[i] = ARGV[a + 1] .. p .. ARGV[a + 2]
      if log then
        log[#log + 1] = ARGV[a + 3]
        a = a + 3
      else
        a = a + 2
      end
    end
    if size == 0 then
      redis.call('DEL', list)
    else
      local cuts = storeRun(meta, list, wires, size, cap)
      redis.call('EXPIRE', list, ttl)
      if cuts then
        for i = 1, k do
          if cuts[i] > 0 then out[first + i] = out[first + i] .. cuts[i] end
        end
      end
    end
    for i = 1, k do redis.call('PUBLISH', channel, wires[i]) end
  end
end
for j = 1, m do
  local log = KEYS[2 * r + j]
  if redis.call('LPUSH', log, unpack(records[tostring(j)])) > tonumber(ARGV[a + 1]) then
    redis.call('LTRIM', log, 0, tonumber(ARGV[a + 2]) - 1)
  end
  a = a + 2
end
return out
`;

/**
 * A script run by EVALSHA on a standalone server, loaded on each connection before its first
 * call there (see `runHistoryPublish`). The body is encoded once.
 */
class ConnectionScript {
  private readonly body: Buffer;
  private readonly sha: string;
  /** Connections (their sockets: ioredis opens a new one on every reconnect) that loaded it. */
  private readonly loadedOn = new WeakSet<object>();

  constructor(readonly source: string) {
    this.body = Buffer.from(source);
    this.sha = createHash('sha1').update(this.body).digest('hex');
  }

  /** Not `async`: the EVALSHA's own promise is handed on with one `then` (see `guard`). */
  run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const socket = client.stream as object | undefined;
    if (socket && !this.loadedOn.has(socket)) {
      this.loadedOn.add(socket);
      client.script('LOAD', this.body).catch(() => this.loadedOn.delete(socket));
    }
    return evalFlat(client, 'evalsha', this.sha, keys, args).then(undefined, (error: unknown) => {
      if (socket && error instanceof Error && error.message.startsWith('NOSCRIPT'))
        this.loadedOn.delete(socket);
      throw error;
    });
  }
}

const publishScript = new ConnectionScript(PUBLISH_SOURCE);
const publishBatchScript = new ConnectionScript(PUBLISH_BATCH_SOURCE);

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
export function runHistoryPublish(
  client: RedisClient,
  keys: readonly [meta: string, list: string] | readonly [meta: string, list: string, log: string],
  args: readonly (string | number)[],
): Promise<unknown> {
  if (client instanceof Cluster) return evalFlat(client, 'eval', SPUBLISH_SOURCE, keys, args);
  return publishScript.run(client, keys, args);
}

/** A publish script's reply for one publication, `<offset>|<epoch>|[<bytes trimmed>]`, as a stream position. */
export function positionOf(reply: unknown): StreamPosition {
  const text = reply as string;
  const bar = text.indexOf('|');
  return { offset: Number(text.slice(0, bar)), epoch: text.slice(bar + 1, text.indexOf('|', bar + 1)) };
}

const trimListeners = new WeakMap<RedisClient, Array<(bytes: number) => void>>();

/** Calls `listener` with the bytes each publish on `client` dropped for a stream's byte cap (for metrics). */
export function onHistoryTrimmed(client: RedisClient, listener: (bytes: number) => void): void {
  trimListeners.set(client, [...(trimListeners.get(client) ?? []), listener]);
}

/** `positionOf` for a reply `client` received, reporting the bytes its byte cap dropped if it dropped some. */
export function positionFrom(client: RedisClient, reply: unknown): StreamPosition {
  const text = reply as string;
  if (!text.endsWith('|')) {
    const bytes = Number(text.slice(text.lastIndexOf('|') + 1));
    for (const listener of trimListeners.get(client) ?? []) listener(bytes);
  }
  return positionOf(text);
}

/**
 * Runs the batch publish script (standalone server only), loaded and failed on NOSCRIPT like the
 * single one: a NOSCRIPT fails the whole batch, none of whose publications was made.
 */
export function runHistoryPublishBatch(
  client: Redis,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  return publishBatchScript.run(client, keys, args);
}

/**
 * The read script's judgment of an empty epoch (empty-epochs.ts, `judgeEmptyEpoch`, which this
 * mirrors in the master's own clock). `stamp()` digests the master's generation (passed by the
 * reader, which names the meta key after it), its `evicted_keys` (an eviction could have dropped
 * a stream before its TTL: any eviction since a read makes its empty epoch unjudgeable) and the
 * TTL in ms; `now()` is the master's `TIME` in ms.
 */
const EMPTY_EPOCH_LIB = `
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function stamp(generation, ttl)
  local evicted = string.match(redis.call('INFO', 'stats'), 'evicted_keys:(%d+)') or '?'
  return string.sub(redis.sha1hex(generation .. '|' .. evicted .. '|' .. ttl), 1, 12)
end
local function judge(at, s, clock, ttl, created)
  local as, at0 = string.match(at, '^_e(${'%x'.repeat(12)})(${'%d'.repeat(13)})$')
  if not as or as ~= s then return nil end
  local t0 = tonumber(at0)
  if t0 > clock + ${EMPTY_EPOCH_CLOCK_TOLERANCE_MS} then return nil end
  if not created then
    if clock - t0 < ttl then return 'same' end
    return nil
  end
  if tonumber(created) - t0 < ttl then return 'follows' end
  return nil
end
`;

/**
 * KEYS[1] meta HASH, KEYS[2] LIST
 * ARGV[1] the epoch the reader holds (empty: none), ARGV[2] the key's TTL seconds, ARGV[3] first
 * offset wanted (empty: the latest `limit`), ARGV[4] limit, ARGV[5] the master's generation
 * Returns { offset, epoch, wires ascending, follows } (follows: ARGV[1] when the stream is the
 * first one created since that empty epoch was read, else empty). Writes nothing: a topic
 * without a stream answers offset 0 in an empty epoch, ARGV[1] itself when nothing can have been
 * published since it was read, else a new one (history.ts).
 */
export const historyRead = new LuaScript(`${EMPTY_EPOCH_LIB}
local meta = redis.call('HMGET', KEYS[1], 'e', 'o', 'c')
local e, o = meta[1], tonumber(meta[2]) or 0
local at, ttl = ARGV[1], tonumber(ARGV[2]) * 1000
if not e then
  local clock, s = now(), stamp(ARGV[5], ttl)
  if at ~= '' and judge(at, s, clock, ttl, nil) == 'same' then return { 0, at, {}, '' } end
  return { 0, '_e' .. s .. string.format('%013d', clock), {}, '' }
end
local follows = ''
if string.sub(at, 1, 2) == '_e' and meta[3] and judge(at, stamp(ARGV[5], ttl), now(), ttl, meta[3]) == 'follows' then
  follows = at
end
local limit = tonumber(ARGV[4])
if limit == 0 then return { o, e, {}, follows } end
local first = o - redis.call('LLEN', KEYS[2]) + 1
local from
if ARGV[3] ~= '' then from = math.max(tonumber(ARGV[3]), first) else from = math.max(o - limit + 1, first) end
if from > o then return { o, e, {}, follows } end
return { o, e, redis.call('LRANGE', KEYS[2], from - first, from - first + limit - 1), follows }
`);
