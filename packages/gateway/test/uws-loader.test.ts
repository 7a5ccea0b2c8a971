import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SetupError } from '@switchboard/core';
import {
  NPM_BUILDS,
  chooseBuilds,
  currentRuntime,
  describeNoBuild,
  loadUws,
  type Runtime,
} from '../src/transport/uws-loader';

const TRUFFLE = '@trufflesuite/uws-js-unofficial';
const BTC = '@btc-vision/uwebsockets.js';

function runtime(node: string, abi: string, glibc: string | undefined, platform = 'linux'): Runtime {
  return { node, abi, glibc, platform, arch: 'x64' };
}

const names = (r: Runtime): string[] => chooseBuilds(r).map((build) => build.name);

describe('uWebSockets.js loader: which build for which runtime', () => {
  it('Node.js 20 takes the 20.30 build on any glibc from 2.27, and the 20.57 one from 2.38', () => {
    expect(names(runtime('v20.19.0', '115', '2.36'))).toEqual([TRUFFLE]);
    expect(names(runtime('v20.19.0', '115', '2.41'))).toEqual([TRUFFLE, BTC]);
    expect(names(runtime('v20.19.0', '115', '2.26'))).toEqual([]);
  });

  it('Node.js 22, 24 and 25 take the 20.57 build, only on glibc 2.38 or later', () => {
    for (const abi of ['127', '137', '141']) {
      expect(names(runtime('v24.0.0', abi, '2.41'))).toEqual([BTC]);
      expect(names(runtime('v24.0.0', abi, '2.38'))).toEqual([BTC]);
      expect(names(runtime('v24.0.0', abi, '2.36'))).toEqual([]);
    }
  });

  it('no build for Node.js 26 or for a Linux without glibc; glibc does not matter off Linux', () => {
    expect(names(runtime('v26.0.0', '147', '2.41'))).toEqual([]);
    expect(names(runtime('v24.0.0', '137', undefined))).toEqual([]);
    expect(names(runtime('v24.0.0', '137', undefined, 'darwin'))).toEqual([BTC]);
  });

  it('the start-up failure is one line naming the Node.js version, its ABI, the glibc and what works', () => {
    expect(describeNoBuild(runtime('v24.11.1', '137', '2.36'))).toBe(
      'uWebSockets.js has no native build for Node.js v24.11.1 (ABI 137, glibc 2.36, x64): run Node.js 20 with ' +
        'glibc 2.27 or later, Node.js 22, 24 or 25 with glibc 2.38 or later (Debian 13, Ubuntu 24.04), or ' +
        'install the official uWebSockets.js release (docs/operations.md, "Runtimes")',
    );
    expect(describeNoBuild(runtime('v24.11.1', '137', undefined))).toContain(
      '(ABI 137, glibc absent (musl?), x64)',
    );
    expect(describeNoBuild(runtime('v24.11.1', '137', undefined))).not.toContain('\n');
  });

  it('the matrix in the line follows the builds the gateway declares', () => {
    const declared = JSON.parse(readFileSync(join(__dirname, '../package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const build of NPM_BUILDS) expect(declared.dependencies[build.name]).toBeDefined();
  });
});

describe('uWebSockets.js loader: loading', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'uws-loader-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A `require` rooted in a directory whose node_modules holds `packages` (name → entry point source). */
  function requireWith(packages: Record<string, { name: string; main: string }>, linkNpmBuilds: boolean) {
    for (const [as, pkg] of Object.entries(packages)) {
      const at = join(dir, 'node_modules', as);
      mkdirSync(at, { recursive: true });
      writeFileSync(join(at, 'package.json'), JSON.stringify({ name: pkg.name, main: 'uws.js' }));
      writeFileSync(join(at, 'uws.js'), pkg.main);
    }
    if (linkNpmBuilds)
      for (const build of NPM_BUILDS) {
        const at = join(dir, 'node_modules', build.name);
        mkdirSync(dirname(at), { recursive: true });
        const installed = require.resolve
          .paths(build.name)!
          .map((p) => join(p, build.name))
          .find(existsSync);
        symlinkSync(installed!, at);
      }
    return createRequire(join(dir, 'index.js'));
  }

  it('loads a native build on the running Node.js (this machine runs a supported one)', () => {
    const loaded = loadUws();
    expect(chooseBuilds(currentRuntime()).map((build) => build.name)).toContain(loaded.from);
    expect(typeof loaded.uws.App).toBe('function');
    // The native addon, not the JavaScript fallback (whose App is a plain JS class).
    expect(Object.keys(loaded.uws)).toContain('us_listen_socket_close');
  });

  it('prefers the official release when it is installed under its own name', () => {
    const load = requireWith(
      { 'uWebSockets.js': { name: 'uWebSockets.js', main: 'module.exports = { official: true };' } },
      true,
    );
    const loaded = loadUws(currentRuntime(), load);
    expect(loaded.from).toBe('uWebSockets.js');
    expect(loaded.uws).toEqual({ official: true });
  });

  it('ignores another package installed under the official name, and an official release that fails', () => {
    const stale = requireWith(
      { 'uWebSockets.js': { name: TRUFFLE, main: 'module.exports = { fallback: true };' } },
      true,
    );
    expect(loadUws(currentRuntime(), stale).from).not.toBe('uWebSockets.js');
    rmSync(join(dir, 'node_modules'), { recursive: true });
    const failing = requireWith(
      { 'uWebSockets.js': { name: 'uWebSockets.js', main: "throw new Error('no binary for this ABI');" } },
      true,
    );
    expect(chooseBuilds(currentRuntime()).map((build) => build.name)).toContain(
      loadUws(currentRuntime(), failing).from,
    );
  });

  it('throws the one-line SetupError when no build has a binary for this runtime', () => {
    const newer = runtime('v26.1.0', '147', '2.41');
    const failure = (() => {
      try {
        loadUws(newer);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(failure).toBeInstanceOf(SetupError);
    expect((failure as Error).message).toBe(describeNoBuild(newer));
    // Chosen but not loadable (a binary for another ABI or glibc): the same failure, never a fallback.
    const load = requireWith({}, false);
    expect(() => loadUws(runtime('v24.11.1', '137', '2.41'), load)).toThrow(SetupError);
  });
});
