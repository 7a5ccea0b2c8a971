import { Buffer } from 'node:buffer';
import { Command } from 'ioredis';
import type { RedisClient } from './clients';

/**
 * ioredis' `Command` flattens its arguments with `Array.prototype.flat`, which V8 runs element by
 * element through its generic runtime path: about 1,300 instructions an argument, 18,000 for the
 * publish script's call, more than ioredis spends encoding and writing it (counted with callgrind,
 * docs/architecture.md, "What the gateway's JavaScript costs"). The product's calls always hand
 * over flat arrays, so they are given to the command after it is built: the same command, reply,
 * timeout and error handling, without the flattening.
 */
class FlatCommand extends Command {
  private readonly text: boolean;
  /** The reply timeout ioredis asked for (`commandTimeout`), once it is watched. */
  timeoutMs = 0;

  constructor(name: string, args: Array<string | number | Buffer>) {
    super(name, [], { replyEncoding: 'utf8' });
    this.args = args;
    // What the constructor does to the arguments it is given: numbers become strings, a Buffer
    // sends the command in binary mode.
    this.stringifyArguments();
    this.text = args.every((arg) => typeof arg === 'string');
  }

  /**
   * The command in RESP, as ioredis writes it, for a command of strings: ioredis reads the global
   * `Buffer` (a getter in Node) once an argument and joins with `+`; about a third of its cost.
   */
  /**
   * ioredis arms a timer per command for its `commandTimeout` and clears it on the reply: about
   * 4,000 instructions a command. The command joins the `deadlines` watch instead, which fails
   * it the same way ("Command timed out": the command stays in ioredis' queue, so later replies
   * still meet their commands), within `TICK_MS` after the timeout.
   */
  override setTimeout(ms: number): void {
    if (this.timeoutMs > 0) return;
    this.timeoutMs = ms;
    deadlines.watch(this);
  }

  override toWritable(socket: object): string | Buffer {
    if (!this.text) return super.toWritable(socket);
    const args = this.args as string[];
    let resp = `*${args.length + 1}\r\n$${Buffer.byteLength(this.name)}\r\n${this.name}\r\n`;
    for (const arg of args) resp += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    return resp;
  }
}

/** How often unanswered commands are checked against their timeout. */
const TICK_MS = 250;

/**
 * The unanswered commands by the tick they were sent in; a timer runs only while some wait.
 * Each tick fails the commands whose timeout has passed and forgets the answered ones.
 */
class Deadlines {
  private current: FlatCommand[] = [];
  private readonly older: Array<{ tick: number; commands: FlatCommand[] }> = [];
  private tick = 0;
  private timer: NodeJS.Timeout | undefined;

  watch(command: FlatCommand): void {
    this.current.push(command);
    if (!this.timer) this.timer = setTimeout(this.onTick, TICK_MS).unref();
  }

  private readonly onTick = (): void => {
    this.timer = undefined;
    this.tick += 1;
    if (this.current.length > 0) {
      this.older.push({ tick: this.tick, commands: this.current });
      this.current = [];
    }
    for (let i = 0; i < this.older.length;) {
      const bucket = this.older[i]!;
      // Sent at most `age` ticks ago (between the tick before `bucket.tick` and it).
      const elapsedMs = (this.tick - bucket.tick) * TICK_MS;
      bucket.commands = bucket.commands.filter((command) => {
        if (command.isResolved) return false;
        if (elapsedMs < command.timeoutMs) return true;
        command.reject(new Error('Command timed out'));
        return false;
      });
      if (bucket.commands.length === 0) this.older.splice(i, 1);
      else i += 1;
    }
    if (this.older.length > 0 || this.current.length > 0)
      this.timer = setTimeout(this.onTick, TICK_MS).unref();
  };
}

const deadlines = new Deadlines();

/**
 * Sends `name` with `args` (a fresh array the command takes over) on `client` and answers its
 * reply, strings decoded as UTF-8, as `client[name](...args)` would.
 */
export function sendFlat(
  client: RedisClient,
  name: string,
  args: Array<string | number | Buffer>,
): Promise<unknown> {
  return client.sendCommand(new FlatCommand(name, args)) as Promise<unknown>;
}

/** EVALSHA (or, with the script's source, EVAL) of `script` with `keys` and `args`. */
export function evalFlat(
  client: RedisClient,
  command: 'evalsha' | 'eval',
  script: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  const all: Array<string | number> = [script, keys.length];
  for (const key of keys) all.push(key);
  for (const arg of args) all.push(arg);
  return sendFlat(client, command, all);
}
