import { parseControlCommand, parseControlReply } from '../src/broker/broker';

/** Control commands are checked where they enter a node: anything else is a named problem, never a throw. */
describe('parseControlCommand', () => {
  it.each([
    [
      '{"type":"kick","selector":{"key":"k","reason":"r"}}',
      { type: 'kick', selector: { key: 'k', reason: 'r' } },
    ],
    [
      '{"type":"kick","selector":{"key":"k","uuid":"u","user":"{}","channel":"c","reason":"r"}}',
      { type: 'kick', selector: { key: 'k', uuid: 'u', user: '{}', channel: 'c', reason: 'r' } },
    ],
    ['{"type":"key-changed","key":"k"}', { type: 'key-changed', key: 'k' }],
    ['{"type":"node-dead","nodeId":"n1"}', { type: 'node-dead', nodeId: 'n1' }],
    // A newer node's extra fields are ignored, not refused.
    ['{"type":"key-changed","key":"k","since":3}', { type: 'key-changed', key: 'k' }],
    // A requested kick: the replying node reads where to answer.
    [
      '{"type":"kick","request":{"id":"r1","origin":"n1"},"selector":{"key":"k","reason":"r"}}',
      { type: 'kick', request: { id: 'r1', origin: 'n1' }, selector: { key: 'k', reason: 'r' } },
    ],
  ])('accepts %s', (text, command) => {
    expect(parseControlCommand(text)).toEqual({ command });
  });

  it.each([
    ['', 'not JSON'],
    ['{"type":', 'not JSON'],
    ['null', 'not a command'],
    ['"kick"', 'not a command'],
    ['[{"type":"kick"}]', 'not a command'],
    ['{}', 'not a command'],
    ['{"type":null}', 'not a command'],
    ['{"type":"resize-cluster"}', 'unknown type'],
    ['{"type":"kick"}', 'invalid kick'],
    ['{"type":"kick","selector":{"key":"k"}}', 'invalid kick'],
    ['{"type":"kick","selector":{"key":"","reason":"r"}}', 'invalid kick'],
    ['{"type":"kick","selector":{"key":"k","reason":"r","uuid":5}}', 'invalid kick'],
    ['{"type":"key-changed"}', 'invalid key-changed'],
    ['{"type":"node-dead","nodeId":""}', 'invalid node-dead'],
    ['{"type":"kick","request":{"id":"r1"},"selector":{"key":"k","reason":"r"}}', 'invalid kick'],
    [
      `{"type":"kick","request":{"id":"${'x'.repeat(65)}","origin":"n"},"selector":{"key":"k","reason":"r"}}`,
      'invalid kick',
    ],
  ])('refuses %s as %s', (text, problem) => {
    expect(parseControlCommand(text)).toEqual({ problem });
  });
});

describe('parseControlReply', () => {
  it('reads a reply', () => {
    expect(parseControlReply('{"id":"r1","node":"n2","count":3}')).toEqual({
      id: 'r1',
      node: 'n2',
      count: 3,
    });
  });

  it.each([
    '',
    'null',
    '{"id":"r1","node":"n2"}',
    '{"id":"r1","node":"n2","count":-1}',
    '{"id":"","node":"n","count":1}',
    '{"id":"r","node":"n","count":1.5}',
  ])('ignores %s', (text) => {
    expect(parseControlReply(text)).toBeUndefined();
  });
});
