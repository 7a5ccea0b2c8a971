import { readFileSync } from 'node:fs';

export interface Instruction {
  keyword: string;
  /** The arguments as written, continuation lines joined. */
  args: string;
}

export interface Stage {
  image: string;
  name?: string;
  instructions: Instruction[];
}

/** A Dockerfile as stages of instructions; `ARG`s declared before the first FROM are substituted in FROM. */
export function parseDockerfile(file: string): Stage[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const logical: string[] = [];
  let current = '';
  for (const raw of lines) {
    const line = raw.trimEnd();
    if (current === '' && /^\s*(#|$)/.test(line)) continue;
    if (/^\s*#/.test(line)) continue; // comment inside a continuation
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push((current + line).trim());
    current = '';
  }
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const text of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(text) ?? [];
    const upper = keyword.toUpperCase();
    if (upper === 'FROM') {
      const [image = '', , name] = args
        .replace(/\$\{(\w+)\}|\$(\w+)/g, (_m, a?: string, b?: string) => globalArgs[(a ?? b) as string] ?? '')
        .split(/\s+/);
      stages.push({ image, ...(name ? { name } : {}), instructions: [] });
    } else if (stages.length === 0) {
      if (upper === 'ARG') {
        const [name = '', value = ''] = args.split('=');
        globalArgs[name] = value;
      }
    } else {
      stages[stages.length - 1]?.instructions.push({ keyword: upper, args });
    }
  }
  return stages;
}

/** The JSON (exec) form of an instruction's arguments, e.g. ENTRYPOINT ["node", "main.js"]. */
export function execForm(args: string): string[] {
  const parsed = JSON.parse(args) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string'))
    throw new Error(`not exec form: ${args}`);
  return parsed as string[];
}

/** Sources of a `COPY` from the build context (no `--from`), flags dropped. */
export function contextCopySources(instruction: Instruction): string[] {
  if (instruction.keyword !== 'COPY' || /--from=/.test(instruction.args)) return [];
  const words = instruction.args.split(/\s+/).filter((word) => !word.startsWith('--'));
  return words.slice(0, -1);
}

/**
 * Whether .dockerignore excludes a context path: the last pattern that matches the path or one of
 * its parent directories decides (`!` re-includes), with `*` within a segment and `**` across them.
 */
export function isDockerIgnored(path: string, dockerignore: string): boolean {
  const patterns = dockerignore
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const candidates = path.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const glob = (negated ? pattern.slice(1) : pattern).replace(/^\/+|\/+$/g, '');
    const segment = (part: string): string =>
      part
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]');
    const body = glob
      .split('**/')
      .map((piece) => piece.split('**').map(segment).join('.*'))
      .join('(?:.*/)?');
    const regex = new RegExp(`^${body}$`);
    if (candidates.some((candidate) => regex.test(candidate))) ignored = !negated;
  }
  return ignored;
}
