import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** User-space instructions of one callgrind dump, by what the process was doing. */
export interface CostSplit {
  /** Everything. */
  total: number;
  /** V8's garbage collector (scavenges, marking, sweeping). */
  gc: number;
  /** V8's compilers (TurboFan, Maglev, Sparkplug, the parser): tiering up, not the work itself. */
  compile: number;
}

const COMPILE =
  /compiler::|OptimizedCompilationJob|[Mm]aglev|baseline::|Pipeline|RegisterAllocat|InstructionSelect|CodeGenerator|Assembler|Zone::|BytecodeGenerator|Parser|Scanner|AstNode|ScopeInfo|Compiler::/;
const GC =
  /Scaveng|Heap::|MarkCompact|Sweeper|IterateObjectCache|RootScavengeVisitor|EvacuationAllocator|heap::base|Marking|SemiSpace|MemoryChunk|MemoryAllocator|Evacuat|SizeFromMap|IteratePointers|BodyDescriptor|IterateRoots|GlobalHandles|ArrayBufferSweeper|GCTracer|LargeObjectSpace|PagedSpace|FreeList|RememberedSet|SlotSet|PretenuringHandler/;

/**
 * Calls `cost` with each self cost of a callgrind output file (`--dump-instr=no`) and the name of
 * the function it belongs to. Names are compressed (`fn=(12) name` once, `fn=(12)` after); the
 * line after `calls=` is the callee's inclusive cost and is not the caller's own.
 */
function eachSelfCost(file: string, cost: (name: string, instructions: number) => void): void {
  const names = new Map<string, string>();
  let current = '';
  let inclusiveNext = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('fn=') || line.startsWith('cfn=')) {
      const match = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (!match) continue;
      const [, id = '', given] = match;
      if (given !== undefined) names.set(id, given);
      if (line.startsWith('fn=')) current = names.get(id) ?? '';
    } else if (line.startsWith('calls=')) {
      inclusiveNext = true;
    } else if (/^[0-9+\-*]/.test(line)) {
      if (inclusiveNext) inclusiveNext = false;
      else cost(current, Number(line.split(' ')[1] ?? 0));
    }
  }
}

/** Reads a callgrind output file (`--dump-instr=no`) and splits its self costs by function name. */
export function splitCosts(file: string): CostSplit {
  const split: CostSplit = { total: 0, gc: 0, compile: 0 };
  const kinds = new Map<string, 'gc' | 'compile' | undefined>();
  eachSelfCost(file, (name, cost) => {
    let kind = kinds.get(name);
    if (kind === undefined && !kinds.has(name)) {
      kind = GC.test(name) ? 'gc' : COMPILE.test(name) ? 'compile' : undefined;
      kinds.set(name, kind);
    }
    split.total += cost;
    if (kind) split[kind] += cost;
  });
  return split;
}

/**
 * Runs callgrind_control with `args` against `pid` and waits for it (a Redis under callgrind answers
 * within 1/hz s).
 */
export function callgrindControl(pid: number, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('callgrind_control', [...args, String(pid)], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`callgrind_control ${args.join(' ')}: ${code}`)),
    );
  });
}

/** The instruction total of the dump callgrind wrote for `trigger` (its `summary:` line). */
export function dumpedInstructions(dir: string, trigger: string): number {
  for (const name of readdirSync(dir)) {
    const text = readFileSync(join(dir, name), 'utf8');
    if (!text.includes(`Trigger: dump ${trigger}`)) continue;
    const match = /^summary: (\d+)$/m.exec(text);
    if (match) return Number(match[1]);
  }
  throw new Error(`no callgrind dump for ${trigger} in ${dir}`);
}

/**
 * Self costs by function of one callgrind output file (`--dump-instr=no`), largest first. Code
 * callgrind has no symbol for (V8's JIT-compiled functions and builtins' copies) is named by
 * its address; `jitNames` (node's `--perf-basic-prof` map, `perfMap`) names it, else it stays a
 * hex address.
 */
export function selfCosts(file: string, jitNames?: PerfMap): Array<{ name: string; cost: number }> {
  const costs = new Map<string, number>();
  eachSelfCost(file, (name, cost) => costs.set(name, (costs.get(name) ?? 0) + cost));
  const named = new Map<string, number>();
  for (const [name, cost] of costs) {
    const label = /^0x[0-9a-f]+$/.test(name) && jitNames ? jitNames.nameOf(Number.parseInt(name, 16)) : name;
    named.set(label, (named.get(label) ?? 0) + cost);
  }
  return [...named].map(([name, cost]) => ({ name, cost })).sort((a, b) => b.cost - a.cost);
}

/** Address ranges of JIT-compiled code, from a `/tmp/perf-<pid>.map` (`start size name` a line, hex). */
export class PerfMap {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly labels: string[] = [];

  constructor(file: string) {
    const entries: Array<[number, number, string]> = [];
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
      if (!match) continue;
      const start = Number.parseInt(match[1]!, 16);
      entries.push([start, start + Number.parseInt(match[2]!, 16), match[3]!]);
    }
    // Stable: of code V8 moved or collected and whose address it reused, the last written comes last.
    entries.sort((a, b) => a[0] - b[0]);
    for (const [start, end, label] of entries) {
      this.starts.push(start);
      this.ends.push(end);
      this.labels.push(label);
    }
  }

  /** The name of the code holding `address`, or the address in hex. */
  nameOf(address: number): string {
    let lo = 0;
    let hi = this.starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid]! <= address) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found >= 0 && address < this.ends[found]! ? this.labels[found]! : `0x${address.toString(16)}`;
  }
}
