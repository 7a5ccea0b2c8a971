/** The outcome of a check: a value, or a message that names the problem (sent to the client as is). */
export type Checked<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

export const accept = <T>(value: T): Checked<T> => ({ ok: true, value });
export const refuse = <T = never>(message: string): Checked<T> => ({ ok: false, message });

/** A value quoted for an error text, cut so that a hostile input cannot make the answer large. */
export function quote(value: unknown, max = 64): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return `'${text.length > max ? `${text.slice(0, max)}…` : text}'`;
}
