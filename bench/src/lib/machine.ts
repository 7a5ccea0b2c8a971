import { execSync } from 'node:child_process';
import { cpus, loadavg, totalmem, release } from 'node:os';
import { readFileSync } from 'node:fs';

export interface Machine {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  kernel: string;
  loadAverage: number[];
}

export function machine(): Machine {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    const match = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (match) cpuModel = match[1]!.trim();
  } catch {
    // keep os.cpus()
  }
  let nproc = cpus().length;
  try {
    nproc = Number(execSync('nproc', { encoding: 'utf8' }).trim()) || nproc;
  } catch {
    // keep os.cpus()
  }
  return {
    nproc,
    cpuModel,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    kernel: release(),
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

export function gitCommit(dir: string): string {
  try {
    return readFileSync(`${dir}/.commit`, 'utf8').trim();
  } catch {
    try {
      const head = execSync('git rev-parse HEAD', { cwd: dir, encoding: 'utf8' }).trim();
      const dirty = execSync('git status --porcelain packages', { cwd: dir, encoding: 'utf8' }).trim();
      return dirty ? `${head} + uncommitted changes in packages/` : head;
    } catch {
      return 'unknown';
    }
  }
}
