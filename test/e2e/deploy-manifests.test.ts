/**
 * Deployment artifacts, validated offline (no Docker engine, no Kubernetes cluster needed):
 * the Dockerfile and its healthcheck, docker-compose.yml against the Compose Specification schema,
 * the HAProxy configuration, k8s/ rendered like `kubectl kustomize` and validated against the
 * Kubernetes schemas, and the monitoring files against the metrics the code exports.
 * kubectl, haproxy and docker-compose run as extra checks: .ci/run installs them (Debian's
 * kubernetes-client is kubectl 1.20, whose built-in kustomize renders k8s/ exactly as current
 * kubectl does). Without one, its checks are reported as skipped on a developer machine and fail in
 * CI (`CI` set), never passed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { configSchema, createMetrics } from '@switchboard/core';
import { asModel, validateK8sObject } from './support/k8s-schemas';
import type { K8sObject } from './support/kustomize';
import { objectId, readKustomization, renderKustomization } from './support/kustomize';
import {
  composeDurationMs,
  composeSchemaErrors,
  interpolate,
  loadCompose,
  readDotEnv,
} from './support/compose';
import { contextCopySources, execForm, isDockerIgnored, parseDockerfile } from './support/dockerfile';
import { haproxyBinary, startHaproxy } from '@switchboard/harness';
import type { RunningHaproxy } from '@switchboard/harness';
import { NODE_FLAGS } from '@switchboard/cli';
import WebSocket, { WebSocketServer } from 'ws';

const ROOT = join(__dirname, '..', '..');
const at = (...parts: string[]): string => join(ROOT, ...parts);
const read = (...parts: string[]): string => readFileSync(at(...parts), 'utf8');

function hasCommand(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore' });
  return !result.error && result.status === 0;
}
/**
 * `it` for a check that needs `tool`: run when it is installed; otherwise skipped (and listed as
 * such) on a developer machine, and failed in CI, where .ci/run installs every tool.
 */
function itWith(tool: string, present: boolean): (name: string, check: jest.ProvidesCallback) => void {
  if (present) return it;
  if (!process.env.CI) return it.skip;
  return (name) =>
    it(name, () => {
      throw new Error(`${tool} is not installed; .ci/run installs it (Debian: apt-get install ${tool})`);
    });
}
const HAPROXY = haproxyBinary();

/** Resolves once `check` holds (polled every 20 ms); fails after 10 s. */
async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Listens on a free loopback port and resolves it; with `release`, closes again and hands the port on. */
async function listenOnFreePort(server: Server, release = false): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  if (release) await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const CONFIG_DEFAULTS = configSchema.parse({});
/** The start-up refusal of k8s/secret.yaml's placeholder key. */
const PLACEHOLDER_REFUSED = /^SWITCHBOARD_KEYS\.0: key "CHANGE-ME-key" has a placeholder name/;
/** Config errors of an environment, one line per problem (empty when valid). */
function configErrors(env: Record<string, string | undefined>): string[] {
  const result = configSchema.safeParse(env);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

/** The @switchboard/* workspace packages a package needs at run time, itself included. */
function runtimeWorkspaceClosure(name: string): string[] {
  const dirs = new Map<string, string>();
  for (const dir of readdirSync(at('packages'))) {
    const manifest = JSON.parse(read('packages', dir, 'package.json')) as { name: string };
    dirs.set(manifest.name, dir);
  }
  const seen = new Set<string>();
  const visit = (pkg: string): void => {
    if (seen.has(pkg)) return;
    seen.add(pkg);
    const manifest = JSON.parse(read('packages', dirs.get(pkg) ?? '', 'package.json')) as {
      dependencies?: Record<string, string>;
    };
    Object.keys(manifest.dependencies ?? {})
      .filter((dep) => dirs.has(dep))
      .forEach(visit);
  };
  visit(name);
  return [...seen].map((pkg) => dirs.get(pkg) ?? '');
}

describe('Dockerfile', () => {
  const stages = parseDockerfile(at('Dockerfile'));
  const final = stages[stages.length - 1]!;
  const of = (keyword: string) => final.instructions.filter((i) => i.keyword === keyword);
  const workspaces = (JSON.parse(read('package.json')) as { workspaces: string[] }).workspaces;

  it('builds in one stage and runs from node:24-trixie-slim in another', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    // Node.js 24 on glibc 2.41: its uWebSockets.js binary needs glibc 2.38 (docs/operations.md).
    for (const stage of stages) expect(stage.image).toBe('node:24-trixie-slim');
    const build = stages[0]!.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    expect(build.some((run) => /\bnpm ci\b/.test(run) && !/--omit=dev/.test(run))).toBe(true);
    expect(build.some((run) => /\btsc -b\b/.test(run))).toBe(true);
  });

  it('installs production dependencies only in the final stage and copies each runtime package dist', () => {
    const runs = of('RUN').map((i) => i.args);
    expect(runs.some((run) => /\bnpm ci\b.*--omit=dev/.test(run))).toBe(true);
    expect(runs.some((run) => /\btsc\b/.test(run))).toBe(false);
    const copied = of('COPY').map((i) => i.args);
    // npm ci needs every workspace's manifest, or it refuses the lockfile.
    for (const workspace of workspaces) {
      expect(copied).toContain(`${workspace}/package.json ${workspace}/`);
    }
    for (const dir of runtimeWorkspaceClosure('@switchboard/cli')) {
      expect(copied).toContain(`--from=${stages[0]!.name} /app/packages/${dir}/dist packages/${dir}/dist`);
    }
  });

  it('runs as a non-root user, one image for every role, with a node-based HEALTHCHECK', () => {
    const user = of('USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    expect(execForm(of('ENTRYPOINT').at(-1)!.args)).toEqual([
      'node',
      ...NODE_FLAGS,
      'packages/cli/dist/main.js',
    ]);
    expect(execForm(of('CMD').at(-1)!.args)).toEqual(['gateway']);
    const healthcheck = of('HEALTHCHECK').at(-1)!.args;
    const command = execForm(healthcheck.slice(healthcheck.indexOf('CMD') + 3).trim());
    expect(command[0]).toBe('node');
    expect(existsSync(at(command[1]!))).toBe(true);
  });

  it('copies only context paths that exist and that .dockerignore lets through', () => {
    const dockerignore = read('.dockerignore');
    const sources = stages.flatMap((stage) => stage.instructions.flatMap(contextCopySources));
    expect(sources.length).toBeGreaterThan(5);
    for (const source of sources) {
      expect({ source, exists: existsSync(at(source)) }).toEqual({ source, exists: true });
      expect({ source, ignored: isDockerIgnored(source.replace(/\/$/, ''), dockerignore) }).toEqual({
        source,
        ignored: false,
      });
    }
    for (const heavy of [
      'node_modules',
      'packages/core/node_modules',
      'packages/core/dist',
      '.git',
      '.env',
    ]) {
      expect({ heavy, ignored: isDockerIgnored(heavy, dockerignore) }).toEqual({ heavy, ignored: true });
    }
  });

  describe('healthcheck script', () => {
    const run = (args: string[], env: Record<string, string>): Promise<number | null> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [at('deploy', 'docker-healthcheck.js'), ...args], {
          env: { PATH: process.env.PATH ?? '', ...env },
          stdio: 'ignore',
        });
        child.on('exit', (code) => resolve(code));
      });

    let status = 200;
    let paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.writeHead(status, { 'Content-Type': 'application/json' }).end('{}');
    });
    let port = 0;
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    beforeEach(() => {
      status = 200;
      paths = [];
    });

    it('passes when the gateway answers 200 on PORT and fails on 503', async () => {
      expect(await run(['gateway'], { PORT: String(port) })).toBe(0);
      expect(paths).toEqual(['/api/health']);
      status = 503;
      expect(await run(['gateway'], { PORT: String(port) })).toBe(1);
    });

    it('checks ACCOUNT_PORT for the account API and PORT for start', async () => {
      expect(await run(['account-api'], { ACCOUNT_PORT: String(port), PORT: '1' })).toBe(0);
      expect(await run(['start'], { PORT: String(port), ACCOUNT_PORT: '1' })).toBe(0);
      expect(paths).toEqual(['/api/health', '/api/health']);
    });

    it('fails when nothing listens and passes for one-shot roles', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const freePort = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      expect(await run(['gateway'], { PORT: String(freePort) })).toBe(1);
      expect(await run(['keys'], {})).toBe(0);
    });
  });
});

describe('docker-compose.yml', () => {
  const compose = loadCompose(at('docker-compose.yml'));
  const services = compose.services as Record<string, Record<string, unknown>>;
  const dotEnv = readDotEnv(at('.env'));
  const gateways = ['gw1', 'gw2', 'gw3'];
  const switchboardServices = Object.keys(services).filter((name) => services[name]?.build !== undefined);
  const envOf = (name: string): Record<string, string> =>
    Object.fromEntries(
      Object.entries((services[name]?.environment ?? {}) as Record<string, string>).map(([k, v]) => [
        k,
        interpolate(String(v), { ...dotEnv }),
      ]),
    );

  it('validates against the Compose Specification schema', () => {
    expect(composeSchemaErrors(compose)).toEqual([]);
  });

  it('the schema check catches a broken file', () => {
    const broken = structuredClone(compose) as { services: Record<string, Record<string, unknown>> };
    broken.services.gw1!.stop_grace_period = 'twenty seconds';
    broken.services.gw2!.restart_policy = 'always';
    const errors = composeSchemaErrors(broken);
    expect(errors.join('\n')).toMatch(/gw1\/stop_grace_period/);
    expect(errors.join('\n')).toMatch(/restart_policy/);
  });

  it('runs Redis 7, three gateways gw1..gw3 and the account API from the one image', () => {
    expect(services.redis?.image).toMatch(/^redis:7/);
    for (const [index, name] of gateways.entries()) {
      const service = services[name]!;
      expect(service.command).toEqual(['gateway']);
      expect(service.image).toBe(services['account-api']?.image);
      expect(envOf(name)).toMatchObject({ NODE_ID: `gw${index + 1}`, REDIS_URL: 'redis://redis:6379' });
      expect(service.ports).toBeUndefined(); // reached only through HAProxy
    }
    expect(services['account-api']?.command).toEqual(['account-api']);
    expect(services['account-api']?.ports).toEqual(['4002:4002']);
    expect(envOf('account-api')).toMatchObject({ ACCOUNT_PORT: '4002', REDIS_URL: 'redis://redis:6379' });
  });

  it('gives every Switchboard container a configuration that passes the config schema', () => {
    expect(switchboardServices.sort()).toEqual(['account-api', ...gateways].sort());
    for (const name of switchboardServices) {
      expect({ name, errors: configErrors(envOf(name)) }).toEqual({ name, errors: [] });
    }
  });

  it('takes SWITCHBOARD_KEYS from the environment, with a development default in .env', () => {
    const raw = services.gw1?.environment as Record<string, string>;
    expect(raw.SWITCHBOARD_KEYS).toMatch(/^\$\{SWITCHBOARD_KEYS:?\?/);
    const custom = '[{"key":"prod-key","secret":"a-long-secret"}]';
    expect(interpolate(raw.SWITCHBOARD_KEYS!, { ...dotEnv, SWITCHBOARD_KEYS: custom })).toBe(custom);
    // The public development key starts only where compose says this is development.
    expect(envOf('gw1').SWITCHBOARD_ALLOW_DEV_KEYS).toBe('1');
    expect(
      configErrors({ SWITCHBOARD_KEYS: dotEnv.SWITCHBOARD_KEYS, SWITCHBOARD_ALLOW_DEV_KEYS: '1' }),
    ).toEqual([]);
    expect(configErrors({ SWITCHBOARD_KEYS: dotEnv.SWITCHBOARD_KEYS })).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0: key "dev-key" is the public development key of \.env/),
    ]);
  });

  it('refuses webhooks to private addresses in every gateway, unless the environment says otherwise', () => {
    for (const name of gateways) expect(configSchema.parse(envOf(name)).WEBHOOK_DENY_PRIVATE).toBe(true);
    const raw = services.gw1?.environment as Record<string, string>;
    expect(interpolate(raw.WEBHOOK_DENY_PRIVATE!, { ...dotEnv, WEBHOOK_DENY_PRIVATE: '0' })).toBe('0');
  });

  it('stops each Switchboard container later than its drain grace period', () => {
    for (const name of switchboardServices) {
      const drainMs = Number(envOf(name).DRAIN_GRACE_MS ?? CONFIG_DEFAULTS.DRAIN_GRACE_MS);
      const graceMs = composeDurationMs(String(services[name]?.stop_grace_period ?? '10s'));
      expect({ name, graceMs, exceedsDrain: graceMs >= drainMs + 5000 }).toEqual({
        name,
        graceMs,
        exceedsDrain: true,
      });
    }
  });

  it('puts HAProxy on 4001 in front of the gateways, checking /api/health, with WebSocket timeouts', () => {
    const haproxy = services.haproxy!;
    expect(haproxy.ports).toEqual(['4001:4001']);
    expect(haproxy.volumes).toContain('./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro');
    const cfg = read('deploy', 'haproxy.cfg');
    const lines = cfg.split('\n').map((line) => line.trim());
    expect(lines).toContain('bind :4001');
    expect(lines).toContain('balance leastconn');
    expect(lines).toContain('option httpchk');
    // uWS ignores HTTP/1.0 and Host-less requests, so the check must send HTTP/1.1 with a Host.
    expect(lines).toContain('http-check send meth GET uri /api/health ver HTTP/1.1 hdr Host switchboard');
    expect(lines.find((line) => line.startsWith('timeout tunnel'))).toMatch(
      /^timeout tunnel (\d+h|\d{4,}s)$/,
    );
    for (const name of gateways) expect(lines).toContain(`server ${name} ${name}:4001`);
    // The gateway drains its own sockets; HAProxy must not cut them when the health check turns 503.
    expect(lines.filter((line) => !line.startsWith('#')).join('\n')).not.toMatch(
      /on-marked-down\s+shutdown-sessions/,
    );
  });

  it('scrapes the metrics port of every Switchboard container in the Prometheus example', () => {
    const prometheus = parse(read('deploy', 'prometheus', 'prometheus.yml')) as {
      scrape_configs: { static_configs?: { targets: string[] }[] }[];
    };
    const targets = prometheus.scrape_configs
      .flatMap((job) => job.static_configs ?? [])
      .flatMap((s) => s.targets);
    for (const name of switchboardServices) expect(targets).toContain(`${name}:${envOf(name).METRICS_PORT}`);
  });

  itWith('docker-compose', hasCommand('docker-compose', ['version']))(
    'passes `docker-compose config` (needs docker-compose)',
    () => {
      const result = spawnSync(
        'docker-compose',
        ['-f', at('docker-compose.yml'), '--profile', 'monitoring', 'config', '-q'],
        {
          cwd: ROOT,
          encoding: 'utf8',
        },
      );
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
  );

  itWith('haproxy', HAPROXY !== undefined)('passes `haproxy -c` (needs haproxy)', () => {
    const result = spawnSync(HAPROXY ?? 'haproxy', ['-c', '-f', at('deploy', 'haproxy.cfg')], {
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toMatch(/Configuration file is valid/);
    expect(result.status).toBe(0);
  });
});

describe('HAProxy with the shipped configuration, in front of two stand-in gateways (needs haproxy)', () => {
  const present = HAPROXY !== undefined;
  const itHaproxy = itWith('haproxy', present);

  interface StandIn {
    name: string;
    port: number;
    healthy: boolean;
    server: Server;
    wss: WebSocketServer;
  }
  const standIns: StandIn[] = [];
  let haproxy: RunningHaproxy | undefined;

  async function standIn(name: string): Promise<StandIn> {
    const gateway = { name, port: 0, healthy: true } as StandIn;
    gateway.server = createServer((req, res) => {
      if (req.url !== '/api/health') return void res.writeHead(404).end();
      res.writeHead(gateway.healthy ? 200 : 503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ status: gateway.healthy ? 'ok' : 'draining' }));
    });
    gateway.wss = new WebSocketServer({ server: gateway.server });
    gateway.wss.on('connection', (socket) => socket.send(name));
    gateway.port = await listenOnFreePort(gateway.server);
    return gateway;
  }

  /** Opens a WebSocket through HAProxy and resolves with it and the name of the gateway it reached. */
  function connectThrough(): Promise<{ socket: WebSocket; gateway: string }> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(`ws://127.0.0.1:${haproxy!.port}/v3/room-1?api_key=k`);
      socket.once('message', (data: Buffer) => resolve({ socket, gateway: data.toString() }));
      socket.once('error', reject);
    });
  }

  beforeAll(async () => {
    if (!present) return;
    standIns.push(await standIn('gw1'), await standIn('gw2'));
    const listenPort = await listenOnFreePort(createServer(), true);
    haproxy = await startHaproxy({
      listenPort,
      backends: standIns.map(({ name, port }) => ({ name, port })),
      checkIntervalMs: 100,
    });
  });

  afterAll(async () => {
    await haproxy?.close();
    for (const gateway of standIns) {
      gateway.wss.clients.forEach((client) => client.terminate());
      gateway.wss.close();
      await new Promise<void>((resolve) => gateway.server.close(() => resolve()));
    }
  });

  itHaproxy('passes WebSocket upgrades through and balances them by open connections', async () => {
    const opened = await Promise.all([
      connectThrough(),
      connectThrough(),
      connectThrough(),
      connectThrough(),
    ]);
    const counts = opened.reduce<Record<string, number>>(
      (acc, { gateway }) => ({ ...acc, [gateway]: (acc[gateway] ?? 0) + 1 }),
      {},
    );
    expect(counts).toEqual({ gw1: 2, gw2: 2 });
    opened.forEach(({ socket }) => socket.close());
  });

  itHaproxy(
    'stops sending new clients to a gateway whose health turns 503, without cutting its sockets',
    async () => {
      const existing: WebSocket[] = [];
      while (!existing.some((s) => (s as WebSocket & { gateway?: string }).gateway === 'gw1')) {
        const { socket, gateway } = await connectThrough();
        Object.assign(socket, { gateway });
        existing.push(socket);
      }
      const onGw1 = existing.find((s) => (s as WebSocket & { gateway?: string }).gateway === 'gw1')!;
      standIns[0]!.healthy = false; // gw1 starts draining
      await waitFor('HAProxy marks gw1 down', async () =>
        (await haproxy!.servers()).some((server) => server.name === 'gw1' && server.status === 'DOWN'),
      );
      const after = await Promise.all([connectThrough(), connectThrough(), connectThrough()]);
      expect(after.map(({ gateway }) => gateway)).toEqual(['gw2', 'gw2', 'gw2']);
      // The draining gateway still reaches its existing client: closing it is the gateway's job.
      expect(onGw1.readyState).toBe(WebSocket.OPEN);
      const received = new Promise<string>((resolve) =>
        onGw1.once('message', (data: Buffer) => resolve(data.toString())),
      );
      standIns[0]!.wss.clients.forEach((client) => client.send('still here'));
      expect(await received).toBe('still here');
      [...existing, ...after.map(({ socket }) => socket)].forEach((socket) => socket.close());
      standIns[0]!.healthy = true;
    },
  );
});

describe('k8s/', () => {
  const objects = renderKustomization(at('k8s'));
  const find = (kind: string, name: string): K8sObject => {
    const object = objects.find((o) => o.kind === kind && o.metadata.name === name);
    if (!object) throw new Error(`${kind} ${name} is missing from k8s/`);
    return object;
  };
  const configMap = asModel('v1/ConfigMap', find('ConfigMap', 'switchboard-config'));
  const secret = asModel('v1/Secret', find('Secret', 'switchboard-keys'));
  const drainMs = Number(configMap.data?.DRAIN_GRACE_MS ?? CONFIG_DEFAULTS.DRAIN_GRACE_MS);

  it('refuses webhooks to private addresses (WEBHOOK_DENY_PRIVATE, shared by both roles)', () => {
    expect(configMap.data?.WEBHOOK_DENY_PRIVATE).toBe('1');
    expect(configSchema.parse({ ...configMap.data }).WEBHOOK_DENY_PRIVATE).toBe(true);
  });

  it('renders every manifest in k8s/ and every object validates against the Kubernetes schemas', () => {
    const listed = new Set(readKustomization(at('k8s')).resources);
    const files = readdirSync(at('k8s')).filter(
      (file) => /\.ya?ml$/.test(file) && file !== 'kustomization.yaml',
    );
    expect(files.filter((file) => !listed.has(file))).toEqual([]);
    expect(objects.length).toBeGreaterThanOrEqual(12);
    expect(new Set(objects.map(objectId)).size).toBe(objects.length);
    for (const object of objects) expect(() => validateK8sObject(object)).not.toThrow();
  });

  it('the schema check catches a broken object', () => {
    const broken = structuredClone(find('Deployment', 'switchboard-gateway')) as K8sObject & {
      spec: { template: { spec: { containers: { ports: { containerPort: unknown }[] }[] } } };
    };
    broken.spec.template.spec.containers[0]!.ports[0]!.containerPort = 'http';
    expect(() => validateK8sObject(broken)).toThrow(/containerPort must be integer/);
    expect(() => validateK8sObject({ ...broken, kind: 'Deploymnet' })).toThrow(/no schema model/);
  });

  itWith('kubectl', hasCommand('kubectl', ['version', '--client']))(
    '`kubectl kustomize k8s` renders exactly the objects validated above (needs kubectl)',
    () => {
      const result = spawnSync('kubectl', ['kustomize', at('k8s')], { encoding: 'utf8' });
      expect(result.stderr).toBe('');
      const rendered = parseAllDocuments(result.stdout)
        .map((doc) => doc.toJS() as K8sObject | null)
        .filter((object): object is K8sObject => object !== null);
      const byId = (list: K8sObject[]) =>
        Object.fromEntries(list.map((object) => [objectId(object), object]));
      expect(byId(rendered)).toEqual(byId(objects));
    },
  );

  it('puts every object in the switchboard namespace', () => {
    for (const object of objects.filter((o) => o.kind !== 'Namespace')) {
      expect(`${objectId(object)} ${object.metadata.namespace}`).toBe(`${objectId(object)} switchboard`);
    }
  });

  for (const [name, role, port] of [
    ['switchboard-gateway', 'gateway', 4001],
    ['switchboard-account-api', 'account-api', 4002],
  ] as const) {
    describe(`Deployment ${name}`, () => {
      const deployment = asModel('apps/v1/Deployment', find('Deployment', name));
      const pod = deployment.spec!.template;
      const podSpec = pod.spec!;
      const container = podSpec.containers[0]!;
      const portByName = (ref: string | number | undefined): number | undefined =>
        typeof ref === 'number' ? ref : container.ports?.find((p) => p.name === ref)?.containerPort;

      it(`runs the image with the ${role} role and selects its own pods`, () => {
        expect(container.image).toMatch(/switchboard(:|$)/);
        expect(container.args).toEqual([role]);
        expect(deployment.spec!.selector.matchLabels).toEqual(
          Object.fromEntries(
            Object.entries(deployment.spec!.selector.matchLabels ?? {}).map(([k]) => [
              k,
              pod.metadata?.labels?.[k],
            ]),
          ),
        );
        expect(deployment.spec!.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
      });

      it('is ready on /api/health and alive on a probe that does not depend on Redis', () => {
        expect(container.readinessProbe?.httpGet?.path).toBe('/api/health');
        expect(portByName(container.readinessProbe?.httpGet?.port)).toBe(port);
        const liveness = container.livenessProbe!;
        expect(liveness).toBeDefined();
        // /api/health is 503 while Redis is down: liveness on it would restart every node at once.
        expect(liveness.httpGet?.path).not.toBe('/api/health');
        expect(liveness.exec).toBeUndefined();
        expect(liveness.httpGet ?? liveness.tcpSocket).toBeDefined();
        expect(portByName((liveness.httpGet ?? liveness.tcpSocket)?.port)).toBe(port);
        expect((liveness.failureThreshold ?? 3) * (liveness.periodSeconds ?? 10)).toBeGreaterThanOrEqual(20);
      });

      it('waits in preStop, then gives the drain more time than DRAIN_GRACE_MS', () => {
        const command = container.lifecycle?.preStop?.exec?.command ?? [];
        expect(command[0]).toBe('sleep');
        const preStopSeconds = Number(command[1]);
        expect(preStopSeconds).toBeGreaterThanOrEqual(3);
        // The grace period counts from the preStop hook, so it must cover preStop + drain + exit.
        expect(podSpec.terminationGracePeriodSeconds! * 1000).toBeGreaterThanOrEqual(
          preStopSeconds * 1000 + drainMs + 5000,
        );
      });

      it('sets resource requests and limits', () => {
        expect(container.resources?.requests).toEqual(
          expect.objectContaining({ cpu: expect.anything(), memory: expect.anything() }),
        );
        expect(container.resources?.limits).toEqual(expect.objectContaining({ memory: expect.anything() }));
      });

      it('spreads its pods over hosts with pod anti-affinity', () => {
        const terms = [
          ...(podSpec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map(
            (t) => t.podAffinityTerm,
          ),
          ...(podSpec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
        ];
        const hostTerm = terms.find((term) => term.topologyKey === 'kubernetes.io/hostname');
        expect(hostTerm).toBeDefined();
        for (const [key, value] of Object.entries(hostTerm!.labelSelector?.matchLabels ?? {})) {
          expect(pod.metadata?.labels?.[key]).toBe(value);
        }
      });

      it('exposes METRICS_PORT as the metrics container port, announced for scraping', () => {
        const metricsPort = Number(configMap.data?.METRICS_PORT);
        expect(container.ports?.find((p) => p.name === 'metrics')?.containerPort).toBe(metricsPort);
        expect(pod.metadata?.annotations?.['prometheus.io/port']).toBe(String(metricsPort));
      });

      it('runs non-root with a configuration that passes the config schema', () => {
        expect(podSpec.securityContext?.runAsNonRoot).toBe(true);
        const env: Record<string, string> = { ...configMap.data, ...secret.stringData };
        for (const variable of container.env ?? []) {
          if (variable.value !== undefined) env[variable.name] = variable.value;
          else if (variable.valueFrom?.fieldRef?.fieldPath === 'metadata.name')
            env[variable.name] = `${name}-7d9f8c6b5-x2x9z`;
          else throw new Error(`${variable.name}: unexpected valueFrom`);
        }
        expect(
          container.envFrom?.map((source) => source.configMapRef?.name ?? source.secretRef?.name),
        ).toEqual(['switchboard-config', 'switchboard-keys']);
        expect(env.NODE_ID).toBeDefined();
        // The Secret's placeholder is refused at start until it is replaced; nothing else is.
        expect(configErrors(env)).toEqual([expect.stringMatching(PLACEHOLDER_REFUSED)]);
        expect(
          configErrors({ ...env, SWITCHBOARD_KEYS: '[{"key":"k","secret":"0f1e2d3c4b5a6978"}]' }),
        ).toEqual([]);
      });
    });
  }

  it('routes each Service to pods of a workload, on named container ports', () => {
    const templates = [
      ...objects
        .filter((o) => o.kind === 'Deployment')
        .map((o) => asModel('apps/v1/Deployment', o).spec!.template),
      ...objects
        .filter((o) => o.kind === 'StatefulSet')
        .map((o) => asModel('apps/v1/StatefulSet', o).spec!.template),
    ];
    for (const object of objects.filter((o) => o.kind === 'Service')) {
      const service = asModel('v1/Service', object);
      const selector = service.spec?.selector ?? {};
      const target = templates.find((template) =>
        Object.entries(selector).every(([key, value]) => template.metadata?.labels?.[key] === value),
      );
      expect({ service: service.metadata?.name, found: target !== undefined }).toEqual({
        service: service.metadata?.name,
        found: true,
      });
      const names = target!.spec!.containers.flatMap((c) => c.ports ?? []).map((p) => p.name);
      for (const port of service.spec?.ports ?? []) expect(names).toContain(port.targetPort);
    }
  });

  it('autoscales the gateway Deployment and limits voluntary disruption', () => {
    const hpa = asModel(
      'autoscaling/v2/HorizontalPodAutoscaler',
      find('HorizontalPodAutoscaler', 'switchboard-gateway'),
    );
    expect(hpa.spec?.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'switchboard-gateway',
    });
    expect(hpa.spec?.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec!.maxReplicas).toBeGreaterThan(hpa.spec!.minReplicas!);
    const pdb = asModel('policy/v1/PodDisruptionBudget', find('PodDisruptionBudget', 'switchboard-gateway'));
    const gatewayLabels = asModel('apps/v1/Deployment', find('Deployment', 'switchboard-gateway')).spec!
      .template.metadata!.labels!;
    expect(pdb.spec?.maxUnavailable ?? pdb.spec?.minAvailable).toBeDefined();
    for (const [key, value] of Object.entries(pdb.spec?.selector?.matchLabels ?? {}))
      expect(gatewayLabels[key]).toBe(value);
  });

  it('runs a dev Redis as a StatefulSet behind a headless Service that REDIS_URL points at', () => {
    const statefulSet = asModel('apps/v1/StatefulSet', find('StatefulSet', 'switchboard-redis'));
    const service = asModel('v1/Service', find('Service', statefulSet.spec!.serviceName!));
    expect(service.spec?.clusterIP).toBe('None');
    expect(statefulSet.spec?.template.spec?.containers[0]?.image).toMatch(/^redis:7/);
    expect(configMap.data?.REDIS_URL).toBe(`redis://${service.metadata?.name}:6379`);
  });

  it('keeps SWITCHBOARD_KEYS in a Secret with placeholder values that are clearly marked', () => {
    expect(secret.stringData?.SWITCHBOARD_KEYS).toContain('CHANGE-ME');
    expect(configErrors({ SWITCHBOARD_KEYS: secret.stringData?.SWITCHBOARD_KEYS })).toEqual([
      expect.stringMatching(PLACEHOLDER_REFUSED),
    ]);
    expect(read('k8s', 'secret.yaml')).toMatch(/PLACEHOLDER/);
  });

  it('has an Ingress example with WebSocket timeouts routed to existing Services', () => {
    const ingress = asModel('networking.k8s.io/v1/Ingress', find('Ingress', 'switchboard'));
    const annotations = ingress.metadata?.annotations ?? {};
    expect(Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThanOrEqual(
      3600,
    );
    expect(Number(annotations['nginx.ingress.kubernetes.io/proxy-send-timeout'])).toBeGreaterThanOrEqual(
      3600,
    );
    const backends = (ingress.spec?.rules ?? [])
      .flatMap((rule) => rule.http?.paths ?? [])
      .map((p) => p.backend.service);
    expect(backends.map((b) => b?.name).sort()).toEqual(['switchboard-account-api', 'switchboard-gateway']);
    for (const backend of backends) {
      const service = asModel('v1/Service', find('Service', backend!.name));
      expect(service.spec?.ports?.map((p) => p.name)).toContain(backend!.port?.name);
    }
  });

  it('documents `kubectl scale deployment/switchboard-gateway` as the way to scale', () => {
    expect(read('docs', 'deploy.md')).toContain('kubectl scale deployment/switchboard-gateway --replicas=');
  });
});

describe('monitoring files', () => {
  let exported: Set<string>;
  beforeAll(async () => {
    const text = await createMetrics({ service: 'gateway', nodeId: 'gw-test' }).render();
    exported = new Set(
      text
        .split('\n')
        .filter((line) => line && !line.startsWith('#'))
        .map((line) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? ''),
    );
    // Labelled series and histograms have no samples before first use: take their names from # TYPE.
    for (const [, name = '', type] of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
      exported.add(name);
      if (type === 'histogram')
        for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${name}${suffix}`);
    }
  });
  const metricNames = (expr: string): string[] =>
    [...expr.matchAll(/\b(?:switchboard|nodejs|process)_[a-z0-9_]+\b/g)].map((m) => m[0]);

  it('the Grafana dashboard queries only metrics the services export', () => {
    const dashboard = JSON.parse(read('deploy', 'grafana', 'dashboards', 'switchboard.json')) as {
      panels: { type: string; targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
    expect(exprs.length).toBeGreaterThan(10);
    const used = new Set(exprs.flatMap(metricNames));
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
    for (const name of [
      'switchboard_connections',
      'switchboard_delivery_latency_seconds_bucket',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      expect(used).toContain(name);
    }
  });

  it('the suggested alerts use only exported metrics and are documented', () => {
    const rules = (
      parse(read('deploy', 'prometheus', 'alerts.yml')) as {
        groups: { rules: { alert: string; expr: string }[] }[];
      }
    ).groups.flatMap((group) => group.rules);
    expect(rules.length).toBeGreaterThan(3);
    const operations = read('docs', 'operations.md');
    for (const rule of rules) {
      expect({
        alert: rule.alert,
        unknown: metricNames(rule.expr).filter((name) => !exported.has(name)),
      }).toEqual({
        alert: rule.alert,
        unknown: [],
      });
      expect(operations).toContain(rule.alert);
    }
  });

  it('docs/operations.md describes every switchboard_* metric', () => {
    const operations = read('docs', 'operations.md');
    const names = new Set(
      [...exported]
        .filter((name) => name.startsWith('switchboard_'))
        .map((n) => n.replace(/_(bucket|sum|count)$/, '')),
    );
    expect([...names].filter((name) => !operations.includes(name))).toEqual([]);
  });

  it('the Grafana provisioning files parse and load the dashboard folder', () => {
    const provider = parse(read('deploy', 'grafana', 'provisioning', 'dashboards', 'switchboard.yml')) as {
      providers: { options: { path: string } }[];
    };
    const compose = loadCompose(at('docker-compose.yml')) as {
      services: Record<string, { volumes?: string[] }>;
    };
    expect(compose.services.grafana?.volumes).toContain(
      `./deploy/grafana/dashboards:${provider.providers[0]?.options.path}:ro`,
    );
    for (const file of [
      'deploy/prometheus/prometheus.yml',
      'deploy/prometheus/alerts.yml',
      'deploy/grafana/provisioning/datasources/prometheus.yml',
      'deploy/grafana/provisioning/dashboards/switchboard.yml',
    ]) {
      expect(() => parse(read(file))).not.toThrow();
    }
  });
});
