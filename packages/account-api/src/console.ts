import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express from 'express';
import type { Express, RequestHandler } from 'express';
import { AppError } from '@switchboard/core';

/** Where `scripts/build-console.mjs` writes the console; the same place from `src` (tests) and `dist`. */
export const CONSOLE_DIR = join(__dirname, '..', 'dist', 'console');

/**
 * The console's headers: scripts and styles only from its own files (no inline script, no
 * `eval`), requests only to its own origin, never framed, no referrer sent anywhere.
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

const secured: RequestHandler = (_req, res, next) => {
  res.set(CONSOLE_HEADERS);
  next();
};

/**
 * Serves the web console (docs/console.md): its page at `/`, its assets under `/console/`, and
 * its icon at `/favicon.ico` too.
 * Static files only; the page signs in by sending the key and secret as headers to `/api`.
 */
export function serveConsole(app: Express, named: (route: string) => RequestHandler): void {
  const index = join(CONSOLE_DIR, 'index.html');
  app.get('/', named('/'), secured, (_req, res) => {
    if (!existsSync(index))
      throw new AppError('SB_NOT_FOUND', 'The console is not built: run "npm run build" and restart');
    res.type('html').sendFile(index);
  });
  // Browsers and tools ask for /favicon.ico whatever the page links: the console's own icon.
  const icon = join(CONSOLE_DIR, 'favicon.svg');
  app.get('/favicon.ico', named('/favicon.ico'), secured, (_req, res) => {
    if (!existsSync(icon)) {
      res.status(204).end();
      return;
    }
    res.type('image/svg+xml').sendFile(icon);
  });
  app.use(
    '/console',
    named('/console'),
    secured,
    express.static(CONSOLE_DIR, {
      index: false,
      redirect: false,
      etag: false,
      lastModified: false,
      fallthrough: true,
    }),
  );
}
