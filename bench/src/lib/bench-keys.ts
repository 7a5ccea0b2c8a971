/** Where every server of a benchmark listens, and the API key (with its secret) every system serves. */
export const HOST = '127.0.0.1';
export const KEY = 'benchkey';
export const SECRET = 'bench-secret-123';
