import { runStart } from './start';
import { runGateway } from './gateway';
import { runAccountApi } from './account-api';
import { runKeys } from './keys';

export type { Env } from '../env';
import type { Env } from '../env';

const USAGE = `Usage: switchboard <command>

Commands:
  start                       gateway and account API in one process (in-memory engine unless REDIS_URL is set)
  gateway                     one gateway node (WebSockets and the cluster API on PORT)
  account-api                 the account API service (on ACCOUNT_PORT)
  keys create [--domain D]... [--no-client-messages] [--force-auth]
  keys list [--show-secrets]
  keys delete KEY
  keys domains KEY [D]...

Configuration comes from environment variables; see README.md.`;

/** Runs one command; resolves an exit code for commands that finish, undefined for servers. */
export async function runCommand(argv: string[], env: Env): Promise<number | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start':
      return runStart(env);
    case 'gateway':
      return runGateway(env);
    case 'account-api':
      return runAccountApi(env);
    case 'keys':
      return runKeys(rest, env);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 1 : 0;
    default:
      process.stderr.write(`Unknown command "${command}"\n\n${USAGE}\n`);
      return 1;
  }
}
