import { ResumeRecorder } from '@switchboard/harness';
import { callsBetween, commandCalls } from '../src/lib/redis-info';

// The recovery scenario's verdict (every client has every publication, exactly once, in order)
// rests on how a client reads its frames and resumes: pinned here on the frames of
// docs/protocol.md "History and recovery".

const position = (data: object): string => JSON.stringify({ event: 'system::position', data });
const publication = (n: number, offset: number): string => `{"n":${n},"system::offset":${offset}}`;

describe('bench: a recovering client', () => {
  it('resumes after its latest publication in the epoch of its position', () => {
    const c = new ResumeRecorder();
    c.onFrame(position({ channel: 'r', epoch: 'e1', offset: 40, missed: 0 }), 1);
    expect(c.resumeUrl('ws://b/v3/r?api_key=k&recover=1')).toBe(
      'ws://b/v3/r?api_key=k&recover=1&since=40&epoch=e1',
    );
    c.onFrame(publication(1, 41), 2);
    c.onFrame('{"event":"system::message","data":"plain","system::offset":42}', 3);
    expect(c.resumeUrl('u')).toBe('u&since=42&epoch=e1');
  });

  it('keeps its offset across a recovered position, whose missed publications follow', () => {
    const c = new ResumeRecorder();
    c.onFrame(position({ channel: 'r', epoch: 'e1', offset: 2, missed: 0 }), 1);
    c.onReconnect(5);
    c.onFrame(position({ channel: 'r', epoch: 'e1', offset: 4, recovered: true, missed: 2 }), 10);
    expect(c.resumeUrl('u')).toBe('u&since=2&epoch=e1');
    c.onFrame(publication(3, 3), 11);
    c.onFrame(publication(4, 4), 12);
    expect(c.completedAt(3, 4)).toBe(12);
    expect(c).toMatchObject({ recovered: 1, reconnects: 1, outOfOrder: 0, duplicates: 0, lastResumedUs: 10 });
  });

  it('continues from the position when it was not recovered', () => {
    const c = new ResumeRecorder();
    c.onFrame(position({ channel: 'r', epoch: 'e1', offset: 2, missed: 0 }), 1);
    c.onFrame(position({ channel: 'r', epoch: 'e2', offset: 9, recovered: false, missed: 0 }), 2);
    expect(c.resumeUrl('u')).toBe('u&since=9&epoch=e2');
    expect(c).toMatchObject({ unrecovered: 1, epochChanges: 1 });
  });

  it('is complete only with every offset of the range, and counts duplicates and gaps', () => {
    const c = new ResumeRecorder();
    c.onFrame(position({ channel: 'r', epoch: 'e1', offset: 0, missed: 0 }), 1);
    c.onFrame(publication(1, 1), 2);
    c.onFrame(publication(3, 3), 3);
    expect(c.completedAt(1, 3)).toBeUndefined();
    c.onFrame(publication(2, 2), 4);
    c.onFrame(publication(2, 2), 5);
    expect(c.completedAt(1, 3)).toBe(4);
    expect(c).toMatchObject({ duplicates: 1, outOfOrder: 3 });
  });

  it('records offsets beyond its first buffer', () => {
    const c = new ResumeRecorder();
    c.onFrame(position({ channel: 'r', epoch: 'e1', offset: 999, missed: 0 }), 1);
    c.onFrame(publication(1, 1000), 7);
    expect(c.completedAt(1000, 1000)).toBe(7);
  });

  it('sums clients: complete ones and the last arrival among them', () => {
    const done = new ResumeRecorder();
    done.onFrame(position({ channel: 'r', epoch: 'e1', offset: 0, missed: 0 }), 1);
    done.onFrame(publication(1, 1), 20);
    const missing = new ResumeRecorder();
    missing.onFrame(position({ channel: 'r', epoch: 'e1', offset: 0, missed: 0 }), 1);
    const a = ResumeRecorder.summarize([done, missing], 1, 1);
    expect(a).toMatchObject({ clients: 2, complete: 1, lastArrivalUs: 20 });
    const b = ResumeRecorder.summarize([done], 1, 1);
    expect(ResumeRecorder.merge([a, b])).toMatchObject({ clients: 3, complete: 2, lastArrivalUs: 20 });
  });
});

describe('bench: Redis commands from INFO commandstats', () => {
  const info = (evalsha: number, hmget: number): string =>
    `# Commandstats\r\ncmdstat_evalsha:calls=${evalsha},usec=10,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n` +
    `cmdstat_hmget:calls=${hmget},usec=3,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n`;

  it('reads calls per command and their increase', () => {
    const before = commandCalls(info(3, 0).replace(/cmdstat_hmget[^\n]*\n/, ''));
    const after = commandCalls(info(1003, 1000));
    expect(before).toEqual({ evalsha: 3 });
    expect(callsBetween(before, after)).toEqual({ evalsha: 1000, hmget: 1000 });
  });
});
