import {
  APP_ID_RULE,
  appIdOf,
  ConfigError,
  DEFAULT_WEBHOOK_EVENTS,
  isWebhookUrl,
  resolvedWebhookUrlProblem,
  WEBHOOK_EVENTS,
  createLogger,
  domainProblem,
  generateKeyRecord,
  historyRetention,
  isValidAppId,
  keyLimits,
  loadConfig,
  MAX_HISTORY_SIZE,
  MAX_HISTORY_TTL_SECONDS,
} from '@switchboard/core';
import { createEngine } from '../engine';
import type {
  ApiKeyRecord,
  Config,
  Engine,
  HistoryOverride,
  KeyLimits,
  WebhookConfig,
  WebhookEventName,
} from '@switchboard/core';
import type { Env } from '../env';

export const KEYS_USAGE = `Usage: switchboard keys <command> [--json]

Commands:
  keys create [--domain D]... [--no-client-messages] [--force-auth] [--history-size N] [--history-ttl S]
              [--app-id ID] [--subscription-count]
                              create a key; prints its key and secret (the secret is shown only here)
  keys list [--show-secrets]  every key with its app id, domains, options, history and creation time
  keys delete KEY             delete a key: new connections and API calls with it are refused
  keys domains KEY [D]...     replace the key's allowed domains; none allows any origin
  keys app-id KEY ID          set the key's Pusher app id ("default": the key itself; docs/pusher.md)
  keys subscription-count KEY on|off
                              Pusher's subscription counting: subscribers of the key's public,
                              private and encrypted Pusher channels get subscription_count events
                              (default: off; docs/pusher.md)
  keys history KEY N S        keep the last N publications per channel for S seconds after the
                              latest (N 0: no history); "default" for either uses the configured
                              HISTORY_SIZE / HISTORY_TTL_SECONDS
  keys webhook KEY URL [--events E1,E2]
                              POST the key's channel and presence events to URL (http or https),
                              signed with the key's secret (docs/webhooks.md)
  keys webhook KEY --remove   stop sending the key's events
  keys limits KEY [--connections N] [--api-requests-per-second N] [--publishes-per-second N]
                  [--messages-per-day N]
                              set the key's quotas, counted across the cluster (0: unlimited;
                              "default": the configured MAX_CONNECTIONS_PER_KEY,
                              API_REQUESTS_PER_SECOND, PUBLISHES_PER_SECOND_PER_KEY,
                              MESSAGES_PER_DAY_PER_KEY); without options, shows them

Options:
  --domain D                  an allowed Origin host (subdomains included), e.g. example.com, or
                              example.com:8443 for that port only; repeatable
  --no-client-messages        clients may not publish to channels (default: they may)
  --force-auth                every channel needs a JWT, not only private-… ones
  --app-id ID                 the key's Pusher app id, ${APP_ID_RULE}
                              (default: the key itself)
  --subscription-count        turn Pusher's subscription counting on (keys subscription-count)
  --history-size N            publications kept per channel, 0 to ${MAX_HISTORY_SIZE} (default: HISTORY_SIZE)
  --history-ttl S             seconds history is kept after a channel's latest publication,
                              1 to ${MAX_HISTORY_TTL_SECONDS} (default: HISTORY_TTL_SECONDS)
  --events E1,E2              the webhook's events, of ${WEBHOOK_EVENTS.join(', ')}
                              (default: all but client_event and cache_miss)
  --json                      machine-readable output on stdout

The keys live in the configured engine: Redis when REDIS_URL or REDIS_CLUSTER_NODES is set,
otherwise the file <SWITCHBOARD_DATA_DIR>/keys.json of the in-memory engine.`;

/** Exit codes: 0 done, 1 the operation failed (unknown key, engine or config problem), 2 bad usage. */
const USAGE_ERROR = 2;

class UsageError extends Error {}

interface Parsed {
  positional: string[];
  domains: string[];
  /** Values of `--history-size` / `--history-ttl` as given (checked by `historyOption`). */
  history: { size?: string; ttl?: string };
  /** The value of `--events` as given (checked by `webhookEventList`). */
  events?: string;
  /** The value of `--app-id` as given (checked by `appIdValue`). */
  appId?: string;
  flags: Set<string>;
  /** `keys limits` options as given, by record field (checked by `requestedLimits`). */
  limits: Partial<Record<keyof KeyLimits, string>>;
}

/** `keys limits` options and the record fields they set. */
const LIMIT_OPTIONS: Record<string, keyof KeyLimits> = {
  '--connections': 'connections',
  '--api-requests-per-second': 'apiRequestsPerSecond',
  '--publishes-per-second': 'publishesPerSecond',
  '--messages-per-day': 'messagesPerDay',
};

const FLAGS_OF: Record<string, readonly string[]> = {
  create: [
    '--domain',
    '--no-client-messages',
    '--force-auth',
    '--history-size',
    '--history-ttl',
    '--app-id',
    '--subscription-count',
    '--json',
  ],
  list: ['--show-secrets', '--json'],
  delete: ['--json'],
  domains: ['--json'],
  'app-id': ['--json'],
  'subscription-count': ['--json'],
  history: ['--json'],
  webhook: ['--events', '--remove', '--json'],
  limits: [...Object.keys(LIMIT_OPTIONS), '--json'],
};

/** Options followed by a value (`--name V` or `--name=V`). */
const VALUE_OPTIONS = new Set([
  '--domain',
  '--history-size',
  '--history-ttl',
  '--events',
  '--app-id',
  ...Object.keys(LIMIT_OPTIONS),
]);

function parseArgs(command: string, args: readonly string[]): Parsed {
  const allowed = FLAGS_OF[command] ?? [];
  const parsed: Parsed = { positional: [], domains: [], history: {}, flags: new Set(), limits: {} };
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      parsed.positional.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--')) {
      parsed.positional.push(arg);
      continue;
    }
    const [name = '', inline] = arg.split(/=(.*)/s, 2);
    if (!allowed.includes(name)) throw new UsageError(`Unknown option ${name} for "keys ${command}"`);
    if (VALUE_OPTIONS.has(name)) {
      const value = inline ?? args[(i += 1)];
      if (value === undefined) throw new UsageError(`${name} needs a value, e.g. ${name} ${EXAMPLE[name]}`);
      if (name === '--domain') parsed.domains.push(value);
      else if (name === '--events') parsed.events = value;
      else if (name === '--app-id') parsed.appId = value;
      else if (LIMIT_OPTIONS[name]) parsed.limits[LIMIT_OPTIONS[name]] = value;
      else if (name === '--history-size') parsed.history.size = value;
      else parsed.history.ttl = value;
    } else if (inline !== undefined) {
      throw new UsageError(`${name} takes no value`);
    } else {
      parsed.flags.add(name);
    }
  }
  return parsed;
}

const EXAMPLE: Record<string, string> = {
  '--domain': 'example.com',
  '--history-size': '100',
  '--history-ttl': '120',
  '--events': 'member_added,member_removed',
  '--app-id': '1234567',
  '--connections': '1000',
  '--api-requests-per-second': '50',
  '--publishes-per-second': '100',
  '--messages-per-day': '1000000',
};

/**
 * The key's limits after `keys limits`: each option given sets its field (a non-negative integer,
 * 0 unlimited) or drops it ("default"); the others stay. `undefined` when none is left.
 */
function requestedLimits(parsed: Parsed, current: KeyLimits | undefined): KeyLimits | undefined {
  const next: Record<string, number> = { ...current };
  for (const [field, text] of Object.entries(parsed.limits)) {
    if (text === 'default') delete next[field];
    else if (/^\d{1,15}$/.test(text)) next[field] = Number(text);
    else {
      const option = Object.keys(LIMIT_OPTIONS).find((name) => LIMIT_OPTIONS[name] === field);
      throw new UsageError(`${option} must be a whole number (0: unlimited) or "default", got "${text}"`);
    }
  }
  return Object.keys(next).length > 0 ? (next as KeyLimits) : undefined;
}

/** The quotas the key gets, each marked when it is the configuration's default. */
function formatLimits(record: ApiKeyRecord, config: Config): string {
  const effective = keyLimits(record, config);
  return (Object.keys(effective) as Array<keyof KeyLimits>)
    .map((field) => {
      const value = effective[field] === 0 ? 'unlimited' : String(effective[field]);
      return `${field}=${value}${record.limits?.[field] === undefined ? ' (default)' : ''}`;
    })
    .join(' ');
}

/**
 * A history size (0 to MAX_HISTORY_SIZE) or TTL (1 to MAX_HISTORY_TTL_SECONDS) in decimal;
 * `default` (only where allowed) is undefined: the configuration's value applies.
 */
function historyValue(what: 'size' | 'ttl', text: string, allowDefault: boolean): number | undefined {
  if (allowDefault && text === 'default') return undefined;
  const [min, max] = what === 'size' ? [0, MAX_HISTORY_SIZE] : [1, MAX_HISTORY_TTL_SECONDS];
  const value = /^[0-9]{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) {
    const name = what === 'size' ? 'history size' : 'history TTL (seconds)';
    throw new UsageError(
      `"${text}" is not a ${name}; give a whole number from ${min} to ${max}${allowDefault ? ' or "default"' : ''}`,
    );
  }
  return value;
}

/** A history override from a size and a TTL, each absent for the configuration's value. */
function historyOverride(
  size: number | undefined,
  ttlSeconds: number | undefined,
): HistoryOverride | undefined {
  if (size === undefined && ttlSeconds === undefined) return undefined;
  return { ...(size !== undefined ? { size } : {}), ...(ttlSeconds !== undefined ? { ttlSeconds } : {}) };
}

/** The override `keys create` options ask for. */
function createdHistory(parsed: Parsed): HistoryOverride | undefined {
  const { size, ttl } = parsed.history;
  return historyOverride(
    size === undefined ? undefined : historyValue('size', size, false),
    ttl === undefined ? undefined : historyValue('ttl', ttl, false),
  );
}

/** The override `keys history KEY N S` asks for: `undefined` drops it (both "default"). */
function requestedHistory(positional: readonly string[]): HistoryOverride | undefined {
  const [, size, ttl, ...extra] = positional;
  if (size === undefined || ttl === undefined || extra.length > 0) {
    throw new UsageError('"keys history" takes a KEY, a size N and a TTL S, e.g. keys history KEY 100 120');
  }
  return historyOverride(historyValue('size', size, true), historyValue('ttl', ttl, true));
}

/**
 * An app id as `isValidAppId` takes it; `default` is undefined: the key itself (so no key can have
 * the app id "default", which would read as a reset).
 */
function appIdValue(text: string): string | undefined {
  if (text === 'default') return undefined;
  if (!isValidAppId(text)) {
    throw new UsageError(
      `"${text}" is not an app id; give ${APP_ID_RULE}, e.g. 1234567, or "default" for the key itself`,
    );
  }
  return text;
}

/** The app id `keys app-id KEY ID` asks for: `undefined` drops it ("default"). */
function requestedAppId(positional: readonly string[]): string | undefined {
  const [key, appId, ...extra] = positional;
  if (key === undefined || appId === undefined || extra.length > 0) {
    throw new UsageError('"keys app-id" takes a KEY and an app id, e.g. keys app-id KEY 1234567');
  }
  return appIdValue(appId);
}

/** The app id the key answers to, marked when it is the key itself by default. */
const formatAppId = (record: ApiKeyRecord): string =>
  `${appIdOf(record)}${record.appId === undefined ? ' (default)' : ''}`;

const withoutAppId = ({ appId: _appId, ...rest }: ApiKeyRecord): ApiKeyRecord => rest;

/** Whether `keys subscription-count KEY on|off` turns counting on. */
function requestedSubscriptionCount(positional: readonly string[]): boolean {
  const [key, value, ...extra] = positional;
  if (key === undefined || (value !== 'on' && value !== 'off') || extra.length > 0) {
    throw new UsageError(
      '"keys subscription-count" takes a KEY and on or off, e.g. keys subscription-count KEY on',
    );
  }
  return value === 'on';
}

const withoutSubscriptionCount = ({
  subscriptionCount: _subscriptionCount,
  ...rest
}: ApiKeyRecord): ApiKeyRecord => rest;

/** The events of `--events E1,E2`, each one of `WEBHOOK_EVENTS`, without repeats. */
function webhookEventList(text: string): WebhookEventName[] {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (names.length === 0)
    throw new UsageError(`--events lists no event; give some of ${WEBHOOK_EVENTS.join(', ')}`);
  for (const name of names) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(name)) {
      throw new UsageError(`"${name}" is not a webhook event; give some of ${WEBHOOK_EVENTS.join(', ')}`);
    }
  }
  return [...new Set(names as WebhookEventName[])];
}

/** The webhook `keys webhook KEY URL [--events …]` asks for; `null` for `--remove`. */
function requestedWebhook(parsed: Parsed): WebhookConfig | null {
  const [key, url, ...extra] = parsed.positional;
  const usage =
    '"keys webhook" takes a KEY and a URL, e.g. keys webhook KEY https://example.com/hooks, or KEY --remove';
  if (key === undefined || extra.length > 0) throw new UsageError(usage);
  if (parsed.flags.has('--remove')) {
    if (url !== undefined || parsed.events !== undefined) {
      throw new UsageError('"keys webhook KEY --remove" takes no URL and no --events');
    }
    return null;
  }
  if (url === undefined) throw new UsageError(usage);
  if (!isWebhookUrl(url)) {
    throw new UsageError(`"${url}" is not a webhook URL; give an http:// or https:// URL`);
  }
  return { url, ...(parsed.events !== undefined ? { events: webhookEventList(parsed.events) } : {}) };
}

const formatWebhook = (webhook: WebhookConfig | undefined): string =>
  webhook ? `${webhook.url} (${(webhook.events ?? DEFAULT_WEBHOOK_EVENTS).join(',')})` : '(none)';

const withoutWebhook = ({ webhook: _webhook, ...rest }: ApiKeyRecord): ApiKeyRecord => rest;

/**
 * A domain is a host as browsers send it in `Origin` (optionally with a port): the gateway compares
 * it with the Origin's host, so a scheme or path could never match and is refused here.
 */
/** A domain as core validates it everywhere (names/domain.ts), or a usage error naming it. */
function checkDomain(domain: string): string {
  const problem = domainProblem(domain);
  if (problem) throw new UsageError(problem);
  return domain.toLowerCase();
}

const formatDomains = (domains: readonly string[]): string =>
  domains.length === 0 ? '(any origin)' : domains.join(',');

/** The key's options; `subscriptionCount` (off by default) only when on. */
const formatOptions = (record: ApiKeyRecord): string =>
  `clientMessages=${record.clientMessages} forceAuth=${record.forceAuth}${
    record.subscriptionCount ? ' subscriptionCount=true' : ''
  }`;

/** The retention the key's channels get, marked when it is the configuration's. */
function formatHistory(record: ApiKeyRecord, config: Config): string {
  const { size, ttlSeconds } = historyRetention(record, config);
  return `size=${size} ttl=${ttlSeconds}s${record.history ? '' : ' (default)'}`;
}

const withoutSecret = ({ secret: _secret, ...rest }: ApiKeyRecord): Omit<ApiKeyRecord, 'secret'> => rest;

const withoutHistory = ({ history: _history, ...rest }: ApiKeyRecord): ApiKeyRecord => rest;

const withoutLimits = ({ limits: _limits, ...rest }: ApiKeyRecord): ApiKeyRecord => rest;

function table(rows: string[][]): string {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

interface Io {
  out(text: string): void;
  err(text: string): void;
}

/**
 * Tells every gateway to drop its cached record of `key` at once; without it they notice within
 * `KEY_CACHE_MS`. Losing it is not an error: the change itself is stored.
 */
async function announce(engine: Engine, key: string, io: Io): Promise<void> {
  try {
    await engine.broker.publishControl({ type: 'key-changed', key });
  } catch (error) {
    if (engine.kind === 'memory') return;
    const reason = error instanceof Error ? error.message : String(error);
    io.err(
      `warning: gateways were not told about the change (${reason}); they pick it up within KEY_CACHE_MS`,
    );
  }
}

async function run(command: string, parsed: Parsed, engine: Engine, config: Config, io: Io): Promise<number> {
  const json = parsed.flags.has('--json');
  const print = (value: unknown, text: string) => io.out(json ? JSON.stringify(value, null, 2) : text);
  const { positional } = parsed;
  switch (command) {
    case 'create': {
      if (positional.length > 0)
        throw new UsageError(`"keys create" takes no arguments, got "${positional[0]}"`);
      const history = createdHistory(parsed);
      const appId = parsed.appId === undefined ? undefined : appIdValue(parsed.appId);
      const record = generateKeyRecord({
        ...(appId !== undefined ? { appId } : {}),
        domains: [...new Set(parsed.domains.map(checkDomain))],
        clientMessages: !parsed.flags.has('--no-client-messages'),
        forceAuth: parsed.flags.has('--force-auth'),
        ...(parsed.flags.has('--subscription-count') ? { subscriptionCount: true as const } : {}),
        ...(history ? { history } : {}),
      });
      await engine.keys.put(record);
      await announce(engine, record.key, io);
      print(
        record,
        [
          `key:      ${record.key}`,
          `secret:   ${record.secret}`,
          `app id:   ${formatAppId(record)}`,
          `domains:  ${formatDomains(record.domains)}`,
          `options:  ${formatOptions(record)}`,
          `history:  ${formatHistory(record, config)}`,
          '',
          'Keep the secret now: "keys list" does not show it unless asked with --show-secrets.',
        ].join('\n'),
      );
      return 0;
    }
    case 'list': {
      if (positional.length > 0)
        throw new UsageError(`"keys list" takes no arguments, got "${positional[0]}"`);
      const showSecrets = parsed.flags.has('--show-secrets');
      const records = await engine.keys.list();
      const header = [
        'KEY',
        ...(showSecrets ? ['SECRET'] : []),
        'APP ID',
        'DOMAINS',
        'OPTIONS',
        'HISTORY',
        'CREATED',
      ];
      const rows = records.map((r) => [
        r.key,
        ...(showSecrets ? [r.secret] : []),
        formatAppId(r),
        formatDomains(r.domains),
        formatOptions(r),
        formatHistory(r, config),
        r.createdAt,
      ]);
      print(
        showSecrets ? records : records.map(withoutSecret),
        records.length === 0
          ? 'No API keys. Create one with: switchboard keys create'
          : table([header, ...rows]),
      );
      return 0;
    }
    case 'delete': {
      const [key, ...extra] = positional;
      if (key === undefined || extra.length > 0) throw new UsageError('"keys delete" takes exactly one KEY');
      if (!(await engine.keys.delete(key))) {
        io.err(`Unknown API key "${key}"; "switchboard keys list" shows the existing ones`);
        return 1;
      }
      await announce(engine, key, io);
      print({ deleted: key }, `Deleted API key ${key}`);
      return 0;
    }
    case 'domains': {
      const [key, ...domains] = positional;
      if (key === undefined)
        throw new UsageError('"keys domains" needs a KEY, then the domains (none: any origin)');
      const checked = [...new Set(domains.map(checkDomain))];
      const record = await engine.keys.get(key);
      if (!record) {
        io.err(`Unknown API key "${key}"; "switchboard keys list" shows the existing ones`);
        return 1;
      }
      const updated: ApiKeyRecord = { ...record, domains: checked };
      await engine.keys.put(updated);
      await announce(engine, key, io);
      print(withoutSecret(updated), `Domains of ${key}: ${formatDomains(checked)}`);
      return 0;
    }
    case 'app-id': {
      const [key] = positional;
      const appId = requestedAppId(positional);
      const record = key === undefined ? null : await engine.keys.get(key);
      if (!record || key === undefined) {
        io.err(`Unknown API key "${key}"; "switchboard keys list" shows the existing ones`);
        return 1;
      }
      const updated: ApiKeyRecord = appId !== undefined ? { ...record, appId } : withoutAppId(record);
      await engine.keys.put(updated);
      await announce(engine, key, io);
      print(withoutSecret(updated), `App id of ${key}: ${formatAppId(updated)}`);
      return 0;
    }
    case 'subscription-count': {
      const [key] = positional;
      const on = requestedSubscriptionCount(positional);
      const record = key === undefined ? null : await engine.keys.get(key);
      if (!record || key === undefined) {
        io.err(`Unknown API key "${key}"; "switchboard keys list" shows the existing ones`);
        return 1;
      }
      const updated: ApiKeyRecord = on
        ? { ...record, subscriptionCount: true }
        : withoutSubscriptionCount(record);
      await engine.keys.put(updated);
      await announce(engine, key, io);
      print(withoutSecret(updated), `Subscription counting of ${key}: ${on ? 'on' : 'off'}`);
      return 0;
    }
    case 'history': {
      const [key] = positional;
      const history = requestedHistory(positional);
      const record = key === undefined ? null : await engine.keys.get(key);
      if (!record || key === undefined) {
        io.err(`Unknown API key "${key}"; "switchboard keys list" shows the existing ones`);
        return 1;
      }
      const updated: ApiKeyRecord = history ? { ...record, history } : withoutHistory(record);
      await engine.keys.put(updated);
      await announce(engine, key, io);
      print(withoutSecret(updated), `History of ${key}: ${formatHistory(updated, config)}`);
      return 0;
    }
    case 'webhook': {
      const [key] = positional;
      const webhook = requestedWebhook(parsed);
      // Resolved now as well as checked at every connection (docs/security.md, "Webhooks and SSRF").
      const refused =
        webhook && config.webhooks.denyPrivate ? await resolvedWebhookUrlProblem(webhook.url) : undefined;
      if (refused) {
        io.err(`${refused}; give a public address, or unset WEBHOOK_DENY_PRIVATE`);
        return 1;
      }
      const record = key === undefined ? null : await engine.keys.get(key);
      if (!record || key === undefined) {
        io.err(`Unknown API key "${key}"; "switchboard keys list" shows the existing ones`);
        return 1;
      }
      const updated: ApiKeyRecord = webhook ? { ...record, webhook } : withoutWebhook(record);
      await engine.keys.put(updated);
      await announce(engine, key, io);
      print(withoutSecret(updated), `Webhook of ${key}: ${formatWebhook(updated.webhook)}`);
      return 0;
    }
    case 'limits': {
      const [key, ...extra] = positional;
      if (key === undefined || extra.length > 0)
        throw new UsageError('"keys limits" takes one KEY, e.g. keys limits KEY --connections 1000');
      const record = await engine.keys.get(key);
      if (!record) {
        io.err(`Unknown API key "${key}"; "switchboard keys list" shows the existing ones`);
        return 1;
      }
      let updated = record;
      if (Object.keys(parsed.limits).length > 0) {
        const limits = requestedLimits(parsed, record.limits);
        updated = limits ? { ...record, limits } : withoutLimits(record);
        await engine.keys.put(updated);
        await announce(engine, key, io);
      }
      print(withoutSecret(updated), `Limits of ${key}: ${formatLimits(updated, config)}`);
      return 0;
    }
    default:
      throw new UsageError(`Unknown keys command "${command}"`);
  }
}

/** Where the engine points, for messages: host and port only, never a password from the URL. */
function redisTarget(config: Config): string {
  const redis = config.redis;
  if (!redis) return 'memory';
  if (redis.kind === 'cluster') return redis.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  if (redis.kind === 'sentinel')
    return `master ${redis.name} of ${redis.sentinels.map((n) => `${n.host}:${n.port}`).join(',')}`;
  try {
    return new URL(redis.url).host;
  } catch {
    return 'REDIS_URL';
  }
}

/** Quieter than the servers: only warnings reach stderr unless LOG_LEVEL asks for more detail. */
const cliLogLevel = (config: Config): string =>
  ['debug', 'trace', 'silent', 'error', 'fatal'].includes(config.logLevel) ? config.logLevel : 'warn';

/** `switchboard keys …` against the configured engine; resolves the exit code. */
export async function runKeys(argv: string[], env: Env): Promise<number> {
  const io: Io = {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  };
  const [command, ...args] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    io.out(KEYS_USAGE);
    return 0;
  }
  let parsed: Parsed;
  try {
    if (command === undefined || !Object.hasOwn(FLAGS_OF, command)) {
      throw new UsageError(
        command === undefined ? 'Missing keys command' : `Unknown keys command "${command}"`,
      );
    }
    parsed = parseArgs(command, args);
    // Domains are checked before the engine is opened, so a typo never half-applies.
    parsed.domains.forEach(checkDomain);
    if (command === 'domains') parsed.positional.slice(1).forEach(checkDomain);
    if (command === 'create') createdHistory(parsed);
    if (command === 'create' && parsed.appId !== undefined) appIdValue(parsed.appId);
    if (command === 'app-id') requestedAppId(parsed.positional);
    if (command === 'subscription-count') requestedSubscriptionCount(parsed.positional);
    if (command === 'history') requestedHistory(parsed.positional);
    if (command === 'webhook') requestedWebhook(parsed);
    if (command === 'limits') requestedLimits(parsed, undefined);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`${error.message}\n\n${KEYS_USAGE}`);
    return USAGE_ERROR;
  }

  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    error.problems.forEach((problem) => io.err(problem));
    return 1;
  }
  const logger = createLogger({ level: cliLogLevel(config) }, process.stderr);
  let engine: Engine;
  try {
    engine = await createEngine(config, { logger });
  } catch (error) {
    io.err(`Cannot open the engine: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  if (!engine.isAvailable()) {
    io.err(`Cannot reach Redis at ${redisTarget(config)}; nothing was changed`);
    await engine.close().catch(() => undefined);
    return 1;
  }
  try {
    return await run(command, parsed, engine, config, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n\n${KEYS_USAGE}`);
      return USAGE_ERROR;
    }
    io.err(`keys ${command} failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await engine.close().catch(() => undefined);
  }
}
