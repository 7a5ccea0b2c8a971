import { Buffer } from 'node:buffer';
import { Command } from 'ioredis';
import type { Cluster, Redis } from 'ioredis';

/** A command connection: standalone or cluster; the ports only use what both offer. */
export type RedisClient = Redis | Cluster;

/**
 * ioredis' `Command` flattens its arguments with `Array.prototype.flat`, which V8 runs element by
 * element through its generic runtime path: about 1,300 instructions an argument, 18,000 for the
 * publish script's call, more than ioredis spends encoding and writing it (counted with callgrind,
 * docs/performance.md, "What the gateway's JavaScript costs"). The product's calls always hand
 * over flat arrays, so they are given to the command after it is built: the same command, reply,
 * timeout and error handling, without the flattening.
 */
class FlatCommand extends Command {
  private readonly text: boolean;

  constructor(name: string, args: Array<string | number | Buffer>) {
    super(name, [], { replyEncoding: 'utf8' });
    this.args = args;
    // What the constructor does to the arguments it is given: numbers become strings, a Buffer
    // sends the command in binary mode.
    this.stringifyArguments();
    this.text = args.every((arg) => typeof arg === 'string');
  }

  /**
   * The command in RESP, the same text ioredis writes for a command of strings, without ioredis'
   * read of the global `Buffer` (a getter in Node) for every argument: about 2,400 instructions
   * fewer for the publish script's call.
   */
  override toWritable(socket: object): string | Buffer {
    if (!this.text) return super.toWritable(socket);
    const args = this.args as string[];
    let resp = `*${args.length + 1}\r\n$${Buffer.byteLength(this.name)}\r\n${this.name}\r\n`;
    for (const arg of args) resp += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    return resp;
  }
}

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
