import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SetupError, errorCode, fileSystemReason } from '../setup-error';
import type { ApiKey } from '../types';
import { assertValidAppId, isValidAppId } from '../names/app-id';
import { assertValidDomains } from './key-store';
import type { ApiKeyRecord, KeyStore } from './key-store';
import { webhookEvents } from '../webhooks/webhooks';
import type { WebhookEventName } from '../webhooks/webhooks';

/**
 * Keys of the in-memory engine. With a `file`, the keys persist there (mode 0600) so the
 * development key survives restarts and `switchboard keys …` can manage a running all-in-one
 * node: the file is re-read whenever its modification time changes. A file that cannot be read,
 * or that does not hold a list of keys, fails every call with a `SetupError` saying so; a missing
 * file is no keys.
 */
export class MemoryKeyStore implements KeyStore {
  private records = new Map<ApiKey, ApiKeyRecord>();
  private loadedMtimeMs = -1;

  constructor(private readonly file?: string) {}

  async get(key: ApiKey): Promise<ApiKeyRecord | null> {
    this.reload();
    return this.records.get(key) ?? null;
  }

  /**
   * The events of the key's webhook, or null without one: the memory engine's webhook switch,
   * read synchronously at each transition. A keys file that cannot be read counts as none.
   */
  webhookEventsOf(key: ApiKey): readonly WebhookEventName[] | null {
    try {
      this.reload();
    } catch {
      return null;
    }
    const webhook = this.records.get(key)?.webhook;
    return webhook ? webhookEvents(webhook) : null;
  }

  /**
   * Whether the key has a record, synchronously (the memory webhook queue forgets a deleted key's
   * events). A keys file that cannot be read counts as holding it: nothing is dropped on a guess.
   */
  has(key: ApiKey): boolean {
    try {
      this.reload();
    } catch {
      return true;
    }
    return this.records.has(key);
  }

  async list(): Promise<ApiKeyRecord[]> {
    this.reload();
    return [...this.records.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async listWebhooks(): Promise<ApiKeyRecord[]> {
    return (await this.list()).filter((r) => r.webhook !== undefined);
  }

  async put(record: ApiKeyRecord): Promise<void> {
    assertValidDomains(record);
    assertValidAppId(record);
    this.reload();
    this.records.set(record.key, { ...record, domains: [...record.domains] });
    this.save();
  }

  async delete(key: ApiKey): Promise<boolean> {
    this.reload();
    const existed = this.records.delete(key);
    if (existed) this.save();
    return existed;
  }

  private reload(): void {
    if (!this.file) return;
    let mtimeMs: number;
    let text: string;
    try {
      mtimeMs = statSync(this.file).mtimeMs;
      if (mtimeMs === this.loadedMtimeMs) return;
      text = readFileSync(this.file, 'utf8');
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return;
      throw new SetupError(
        `cannot read the keys file ${this.file}: ${fileSystemReason(error)}: make it readable by the user running Switchboard, or set SWITCHBOARD_DATA_DIR to another directory`,
        { cause: error },
      );
    }
    this.records = new Map(parseKeysFile(this.file, text).map((r) => [r.key, r]));
    this.loadedMtimeMs = mtimeMs;
  }

  private save(): void {
    if (!this.file) return;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const temp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(temp, JSON.stringify([...this.records.values()], null, 2), { mode: 0o600 });
      renameSync(temp, this.file);
      this.loadedMtimeMs = statSync(this.file).mtimeMs;
    } catch (error) {
      throw new SetupError(
        `cannot write the keys file ${this.file}: ${fileSystemReason(error)}: make its directory writable by the user running Switchboard, or set SWITCHBOARD_DATA_DIR to another directory`,
        { cause: error },
      );
    }
  }
}

/**
 * The records of a keys file. Only the shape is checked (a list of objects with a string `key`,
 * a string `secret`, a list of `domains` and, when present, a valid `appId`: files written before
 * app ids have none), enough to refuse a file that is not a keys file.
 * Parse errors are not quoted: their excerpt of the file could show a secret.
 */
function parseKeysFile(file: string, text: string): ApiKeyRecord[] {
  const fix = 'restore it from a backup, or move it away to start with no keys';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SetupError(`the keys file ${file} is not valid JSON: ${fix}`, { cause: error });
  }
  if (!Array.isArray(value))
    throw new SetupError(`the keys file ${file} does not hold a list of keys: ${fix}`);
  value.forEach((entry: unknown, index) => {
    const record = entry as Partial<Record<keyof ApiKeyRecord, unknown>> | null;
    const problem =
      typeof record !== 'object' || record === null
        ? 'is not an object'
        : typeof record.key !== 'string'
          ? 'has no "key"'
          : typeof record.secret !== 'string'
            ? 'has no "secret"'
            : !Array.isArray(record.domains)
              ? 'has no list of "domains"'
              : record.appId !== undefined && !isValidAppId(record.appId)
                ? 'has an invalid "appId"'
                : undefined;
    if (problem)
      throw new SetupError(`the keys file ${file} is damaged (entry ${index + 1} ${problem}): ${fix}`);
  });
  return value as ApiKeyRecord[];
}
