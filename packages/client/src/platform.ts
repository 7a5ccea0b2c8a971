/**
 * The few host facilities the client needs, typed here rather than through the DOM or Node
 * typings: the package compiles against plain ES2022 and runs wherever these exist (browsers,
 * Node 20+, workers, React Native).
 */

/** The parts of the WHATWG `WebSocket` the client uses; browsers, Node 22+ and `ws` provide them. */
export interface WebSocketLike {
  readonly readyState: number;
  binaryType: string;
  send(data: string | ArrayBuffer | ArrayBufferView): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/**
 * A WebSocket class: the browser's, Node 22's global one, or the `ws` package's
 * (`import WebSocket from 'ws'`). Only `new WebSocket(url)` is called.
 */
export type WebSocketConstructor = new (url: string) => object;

interface Host {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  WebSocket?: WebSocketConstructor;
  addEventListener?(type: string, listener: () => void): void;
  removeEventListener?(type: string, listener: () => void): void;
  atob(data: string): string;
  btoa(data: string): string;
  crypto?: { randomUUID?(): string };
  fetch(
    url: string,
    init: { method: string; body: unknown; credentials: string; headers: Record<string, string> },
  ): Promise<{ json(): Promise<unknown> }>;
  FormData: new () => { append(name: string, value: string): void };
}

export const host = globalThis as unknown as Host;

export type Timer = unknown;

export const OPEN = 1;

/** Base64 of bytes, for `system::binary` frames. */
export function toBytes(base64: string): Uint8Array {
  const text = host.atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

export function randomUuid(): string {
  if (host.crypto?.randomUUID) return host.crypto.randomUUID();
  return 'xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx'.replace(/[xy]/g, (c) => {
    const r = (Math.random() * 16) | 0;
    return (c === 'x' ? r : (r & 3) | 8).toString(16);
  });
}
