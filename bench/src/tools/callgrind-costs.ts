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
 * Reads a callgrind output file (`--dump-instr=no`) and splits its self costs by function name.
 * Names are compressed (`fn=(12) name` once, `fn=(12)` after); the line after `calls=` is the
 * callee's inclusive cost and is not the caller's own.
 */
export function splitCosts(file: string): CostSplit {
  const names = new Map<string, string>();
  const split: CostSplit = { total: 0, gc: 0, compile: 0 };
  let kind: 'gc' | 'compile' | undefined;
  let inclusiveNext = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('fn=') || line.startsWith('cfn=')) {
      const match = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (!match) continue;
      const [, id = '', given] = match;
      if (given !== undefined) names.set(id, given);
      if (line.startsWith('fn=')) {
        const name = names.get(id) ?? '';
        kind = GC.test(name) ? 'gc' : COMPILE.test(name) ? 'compile' : undefined;
      }
    } else if (line.startsWith('calls=')) {
      inclusiveNext = true;
    } else if (/^[0-9+\-*]/.test(line)) {
      if (inclusiveNext) {
        inclusiveNext = false;
        continue;
      }
      const cost = Number(line.split(' ')[1] ?? 0);
      split.total += cost;
      if (kind) split[kind] += cost;
    }
  }
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
