import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * The Chromium the browser tests drive through playwright-core (which downloads no browser):
 * `CHROMIUM_PATH`, else Debian's `chromium` (`.ci/run` installs it when missing).
 */
export function chromiumPath(): string {
  const candidates = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const found = candidates.find((path) => path && existsSync(path));
  if (found) return found;
  const which = spawnSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], {
    encoding: 'utf8',
  });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  throw new Error(
    'Chromium was not found: `apt-get install chromium` (.ci/run does it), or set CHROMIUM_PATH',
  );
}
