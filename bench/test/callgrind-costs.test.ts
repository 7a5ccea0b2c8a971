import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { splitCosts } from '../src/tools/callgrind-costs';

/** A dump as callgrind writes it with `--dump-instr=no`: compressed names, calls with their inclusive cost. */
const DUMP = `version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 1000

ob=(1) /usr/bin/node
fl=(1) ???
fn=(1) Builtins_StringAdd_CheckNone
0 100
fn=(2) v8::internal::Heap::Scavenge()
0 200
cfn=(3) v8::internal::compiler::GraphReducer::ReduceTop()
calls=1 0
0 400
fn=(3)
0 300
fn=(1)
0 50
cfn=(2)
calls=2 0
0 9999
totals: 650
`;

describe('callgrind costs', () => {
  it('sum each function once, by self cost, and set garbage collection and compiling apart', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sb-callgrind-test-')), 'out.1');
    writeFileSync(file, DUMP);
    // Self costs: StringAdd 100 + 50, Scavenge 200, GraphReducer 300 (named once, then by id);
    // the lines after `calls=` are callees' inclusive costs, not counted again.
    expect(splitCosts(file)).toEqual({ total: 650, gc: 200, compile: 300 });
  });
});
