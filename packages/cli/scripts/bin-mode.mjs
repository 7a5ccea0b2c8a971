// `tsc` writes packages/cli/dist/main.js without the executable bit, and npm links (and marks
// executable) a bin only if its file exists at install time, which on a fresh clone is before the
// build. `npx switchboard` runs that file directly, so the build marks it executable itself.
import { chmodSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

chmodSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'main.js'), 0o755);
