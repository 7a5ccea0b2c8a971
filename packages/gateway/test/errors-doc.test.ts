/**
 * docs/errors.md and the error catalog (packages/core/src/errors.ts) agree: every HTTP error code
 * and every close code is documented with the same status, close code, text and reconnect class,
 * and the doc lists none the catalog lacks.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLOSE_CODES, HTTP_ERRORS, isReconnectable } from '@switchboard/core';

const doc = readFileSync(join(__dirname, '../../../docs/errors.md'), 'utf8');

/** The rows of the first table after the `## <heading>` line, as cell arrays (header and rule skipped). */
function tableAfter(heading: string): string[][] {
  const lines = doc.split('\n');
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`);
  if (start < 0) throw new Error(`docs/errors.md has no "## ${heading}" section`);
  const rows: string[][] = [];
  let inTable = false;
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('## ')) break;
    if (line.startsWith('|')) {
      inTable = true;
      rows.push(
        line
          .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
          .split('|')
          .map((cell) => cell.trim()),
      );
    } else if (inTable) break;
  }
  if (rows.length < 3) throw new Error(`no table under "## ${heading}"`);
  return rows.slice(2);
}

const unquote = (cell: string): string => cell.replace(/^`|`$/g, '');

describe('docs/errors.md', () => {
  describe('HTTP errors', () => {
    const rows = tableAfter('HTTP errors');
    const documented = new Map(
      rows.map(([code = '', status = '', text = '']) => [unquote(code), { status, text }]),
    );

    it('has one row per code', () => {
      expect(documented.size).toBe(rows.length);
    });

    it.each(Object.entries(HTTP_ERRORS))('documents %s with its status and catalog text', (code, spec) => {
      const row = documented.get(code);
      expect(row).toBeDefined();
      expect(Number(row!.status)).toBe(spec.status);
      expect(row!.text).toBe(spec.message);
    });

    it('documents no code the catalog lacks', () => {
      expect([...documented.keys()].filter((code) => !(code in HTTP_ERRORS))).toEqual([]);
    });
  });

  describe('WebSocket close codes', () => {
    const rows = tableAfter('WebSocket close codes');
    const documented = new Map(
      rows.map(([name = '', code = '', may = '', errorFirst = '', text = '']) => [
        unquote(name),
        { code, may, errorFirst, text },
      ]),
    );

    it('has one row per name', () => {
      expect(documented.size).toBe(rows.length);
    });

    it.each(Object.entries(CLOSE_CODES))('documents %s with its close code, class and text', (name, spec) => {
      const row = documented.get(name);
      expect(row).toBeDefined();
      expect(Number(row!.code)).toBe(spec.code);
      expect(row!.text).toBe(spec.message);
      const reconnect = isReconnectable(spec.code);
      expect(row!.may).toBe(reconnect ? 'reconnect' : 'not reconnect');
      // docs/errors.md: every terminal close is preceded by an error frame, and only those.
      expect(row!.errorFirst).toBe(reconnect ? 'no' : 'yes');
    });

    it('documents no close code the catalog lacks, and no number twice', () => {
      expect([...documented.keys()].filter((name) => !(name in CLOSE_CODES))).toEqual([]);
      const numbers = [...documented.values()].map((row) => row.code);
      expect(new Set(numbers).size).toBe(numbers.length);
    });

    it('uses the documented ranges: 4000–4499 reconnect, 4500–4999 terminal', () => {
      for (const spec of Object.values(CLOSE_CODES)) {
        expect(spec.code >= 4000 && spec.code <= 4999).toBe(true);
      }
      expect(isReconnectable(4499)).toBe(true);
      expect(isReconnectable(4500)).toBe(false);
    });

    it('states the error-frame rule', () => {
      expect(doc).toContain('**Every terminal close is preceded by an error frame**');
    });
  });
});
