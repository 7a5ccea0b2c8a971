/** A client text as a JSON object, or `undefined` when it is not one. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  if (text.charCodeAt(0) !== 123 /* { */) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The PieSocket SDKs' keep-alive text, which is never relayed. */
export const PING = 'cmd_ping';
