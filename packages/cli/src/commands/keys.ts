import type { Env } from './index';

export async function runKeys(_argv: string[], _env: Env): Promise<number> {
  process.stderr.write('keys: not implemented yet\n');
  return 1;
}
