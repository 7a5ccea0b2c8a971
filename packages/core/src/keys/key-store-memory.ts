import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ApiKey } from '../types';
import { assertValidDomains } from './key-store';
import type { ApiKeyRecord, KeyStore } from './key-store';

/**
 * Keys of the in-memory engine. With a `file`, the keys persist there (mode 0600) so the
 * development key survives restarts and `switchboard keys …` can manage a running all-in-one
 * node: the file is re-read whenever its modification time changes.
 */
export class MemoryKeyStore implements KeyStore {
  private records = new Map<ApiKey, ApiKeyRecord>();
  private loadedMtimeMs = -1;

  constructor(private readonly file?: string) {}

  async get(key: ApiKey): Promise<ApiKeyRecord | null> {
    this.reload();
    return this.records.get(key) ?? null;
  }

  async list(): Promise<ApiKeyRecord[]> {
    this.reload();
    return [...this.records.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async put(record: ApiKeyRecord): Promise<void> {
    assertValidDomains(record);
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
    try {
      mtimeMs = statSync(this.file).mtimeMs;
    } catch {
      return;
    }
    if (mtimeMs === this.loadedMtimeMs) return;
    const records = JSON.parse(readFileSync(this.file, 'utf8')) as ApiKeyRecord[];
    this.records = new Map(records.map((r) => [r.key, r]));
    this.loadedMtimeMs = mtimeMs;
  }

  private save(): void {
    if (!this.file) return;
    mkdirSync(dirname(this.file), { recursive: true });
    const temp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify([...this.records.values()], null, 2), { mode: 0o600 });
    renameSync(temp, this.file);
    this.loadedMtimeMs = statSync(this.file).mtimeMs;
  }
}
