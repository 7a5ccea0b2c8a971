import type { Env } from './index';

export async function runAccountApi(_env: Env): Promise<number | undefined> {
  process.stderr.write('account-api: not implemented yet\n');
  return 1;
}
