import { LuaScript } from './clients';

/** Stream entries kept per key at most (approximately: `MAXLEN ~`). */
export const WEBHOOK_STREAM_MAX = 100_000;

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
