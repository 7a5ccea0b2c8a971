import { dirname, join } from 'node:path';
import { SetupError } from '@switchboard/core';
import type * as Uws from '@btc-vision/uwebsockets.js';

/**
 * Loads a native uWebSockets.js for the running Node.js, or fails start-up. In the product only
 * `transport/uws.ts` uses it (the benchmark's ceiling server too, to run on the same build). Never the JavaScript fallback some builds switch to when their binary does not load: that
 * fallback answers HTTP (health says ok) but hangs every WebSocket upgrade and cannot publish.
 * The supported matrix and how to use the official release: docs/operations.md, "Runtimes".
 */
export type UwsModule = typeof Uws;

/** What decides which build can load: the running Node.js and the C library under it. */
export interface Runtime {
  /** `process.version`, such as `v24.11.1`. */
  readonly node: string;
  /** `process.versions.modules`: the ABI a native addon is built for. */
  readonly abi: string;
  readonly platform: string;
  readonly arch: string;
  /** The glibc version (`glibcVersionRuntime` of the process report); undefined on musl, macOS, Windows. */
  readonly glibc: string | undefined;
}

/** A build from the npm registry that ships prebuilt binaries, one per Node.js ABI. */
export interface UwsBuild {
  readonly name: string;
  /** The ABIs it has a binary for, each with its Node.js major version. */
  readonly abis: Readonly<Record<string, number>>;
  /** The oldest glibc its Linux binaries load on (the newest `GLIBC_x.y` symbol version they need). */
  readonly minGlibc: string;
  /** The file to require, relative to the package: the binary itself where the package's own entry
   * point would fall back to JavaScript, or undefined for its entry point (which throws instead). */
  binary(runtime: Runtime): string | undefined;
}

/** The official release (GitHub only); installed under its own name, it is tried first. */
export const OFFICIAL = 'uWebSockets.js';

/** The npm builds, both dependencies of the gateway, in the order they are tried. */
export const NPM_BUILDS: readonly UwsBuild[] = [
  {
    // 20.30: the Node.js 20 binary needs only glibc 2.27. Its entry point falls back to a JavaScript
    // implementation when the binary does not load, so the binary is required directly.
    name: '@trufflesuite/uws-js-unofficial',
    abis: { '115': 20 },
    minGlibc: '2.27',
    binary: (runtime) => `binaries/uws_${runtime.platform}_${runtime.arch}_${runtime.abi}.node`,
  },
  {
    // 20.57: Node.js 20, 22, 24 and 25; its Linux binaries need glibc 2.38 (Debian 13, Ubuntu 24.04).
    name: '@btc-vision/uwebsockets.js',
    abis: { '115': 20, '127': 22, '137': 24, '141': 25 },
    minGlibc: '2.38',
    binary: () => undefined,
  },
];

/** The running process, as the loader sees it. */
export function currentRuntime(): Runtime {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return {
    node: process.version,
    abi: process.versions.modules,
    platform: process.platform,
    arch: process.arch,
    glibc: report?.header?.glibcVersionRuntime,
  };
}

function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Whether the build's binaries can load on this C library (glibc matters only on Linux). */
function glibcFits(runtime: Runtime, build: UwsBuild): boolean {
  if (runtime.platform !== 'linux') return true;
  return runtime.glibc !== undefined && compareVersions(runtime.glibc, build.minGlibc) >= 0;
}

/** The npm builds that have a binary for this ABI and this glibc, in the order to try them. */
export function chooseBuilds(runtime: Runtime, builds: readonly UwsBuild[] = NPM_BUILDS): UwsBuild[] {
  return builds.filter((build) => build.abis[runtime.abi] !== undefined && glibcFits(runtime, build));
}

/** "20", "20 or 22", "22, 24 or 25". */
function listOr(items: readonly (string | number)[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/** The one line start-up fails with when no native build loads. */
export function describeNoBuild(runtime: Runtime, builds: readonly UwsBuild[] = NPM_BUILDS): string {
  // Each Node.js major version with the oldest glibc one of the builds loads on, grouped by glibc.
  const oldest = new Map<number, string>();
  for (const build of builds)
    for (const major of Object.values(build.abis)) {
      const known = oldest.get(major);
      if (known === undefined || compareVersions(build.minGlibc, known) < 0)
        oldest.set(major, build.minGlibc);
    }
  const byGlibc = new Map<string, number[]>();
  for (const [major, glibc] of [...oldest].sort((a, b) => a[0] - b[0]))
    byGlibc.set(glibc, [...(byGlibc.get(glibc) ?? []), major]);
  const works = [...byGlibc]
    .sort((a, b) => compareVersions(a[0], b[0]))
    .map(([glibc, majors]) => `Node.js ${listOr(majors)} with glibc ${glibc} or later`)
    .join(', ');
  const libc = runtime.platform === 'linux' ? `glibc ${runtime.glibc ?? 'absent (musl?)'}` : runtime.platform;
  return (
    `uWebSockets.js has no native build for Node.js ${runtime.node} (ABI ${runtime.abi}, ${libc}, ${runtime.arch}): ` +
    `run ${works} (Debian 13, Ubuntu 24.04), or install the official uWebSockets.js release (docs/operations.md, "Runtimes")`
  );
}

/** How the loader reaches packages; a parameter so the choice logic is testable with real files. */
export type RequireFn = NodeJS.Require;

/** The official package's directory when it is installed under its own name, else undefined. */
function officialDir(load: RequireFn): string | undefined {
  try {
    const manifest = load.resolve(`${OFFICIAL}/package.json`);
    // A tree installed before the npm builds got their own names may still hold one of them under
    // the official name: that is not the official release.
    return (load(manifest) as { name?: string }).name === OFFICIAL ? dirname(manifest) : undefined;
  } catch {
    return undefined;
  }
}

export interface LoadedUws {
  readonly uws: UwsModule;
  /** The package it came from. */
  readonly from: string;
}

/**
 * The official release when installed, else the first npm build for this ABI and glibc that loads.
 * Throws a `SetupError` carrying `describeNoBuild`'s line when none does.
 */
export function loadUws(runtime: Runtime = currentRuntime(), load: RequireFn = require): LoadedUws {
  const failures: unknown[] = [];
  // The official entry point throws (never falls back) when it has no binary for this runtime.
  const official = officialDir(load);
  const tries: { from: string; file: () => string }[] = official
    ? [{ from: OFFICIAL, file: () => official }]
    : [];
  for (const build of chooseBuilds(runtime)) {
    const binary = build.binary(runtime);
    const file =
      binary === undefined
        ? () => build.name
        : () => join(dirname(load.resolve(`${build.name}/package.json`)), binary);
    tries.push({ from: build.name, file });
  }
  for (const { from, file } of tries) {
    try {
      return { uws: load(file()) as UwsModule, from };
    } catch (error) {
      failures.push(error);
    }
  }
  throw new SetupError(describeNoBuild(runtime), { cause: new AggregateError(failures, 'no build loaded') });
}
