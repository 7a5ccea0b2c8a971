/** API keys and secrets are URL-safe tokens; anything else is rejected before it reaches a store. */
const API_KEY = /^[A-Za-z0-9_-]{1,128}$/;

export function isValidApiKey(key: unknown): key is string {
  return typeof key === 'string' && API_KEY.test(key);
}
