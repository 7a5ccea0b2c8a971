/** Percent-decodes leniently: a malformed escape leaves the value as sent (SDKs append raw JSON). */
export function decodeLenient(value: string): string {
  // Nothing to decode without a `%` (the common `api_key=…`, channel names): no runtime call.
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Parses a raw query string; the first occurrence of a name wins. */
export function parseQuery(raw: string): Map<string, string> {
  const params = new Map<string, string>();
  if (!raw) return params;
  for (const part of raw.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const name = decodeLenient(eq < 0 ? part : part.slice(0, eq));
    if (!params.has(name)) params.set(name, eq < 0 ? '' : decodeLenient(part.slice(eq + 1)));
  }
  return params;
}

/** `notify_self`, `presence`: on when present and not `0`, `false` or `no` (a bare flag is on). */
export function isFlagOn(value: string | undefined): boolean {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  return v !== '0' && v !== 'false' && v !== 'no';
}
