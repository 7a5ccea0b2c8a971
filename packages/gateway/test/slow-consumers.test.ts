import { SlowConsumerSweeps } from '../src/ws/slow-consumers';

// The fan-out slow-consumer sweep visits every connection, so it runs only when a publish could
// have grown a send buffer (limits.test.ts closes a slow consumer through it).
describe('slow-consumer sweeps', () => {
  it('are skipped while nothing is published', () => {
    const sweeps = new SlowConsumerSweeps();
    expect([sweeps.takeDue(), sweeps.takeDue(), sweeps.takeDue()]).toEqual([false, false, false]);
  });

  it('are due for the next two sweeps after a publish, then skipped again', () => {
    const sweeps = new SlowConsumerSweeps();
    sweeps.noteFanOut();
    expect([sweeps.takeDue(), sweeps.takeDue(), sweeps.takeDue()]).toEqual([true, true, false]);
  });

  it('start over with a publish between two due sweeps', () => {
    const sweeps = new SlowConsumerSweeps();
    sweeps.noteFanOut();
    expect(sweeps.takeDue()).toBe(true);
    sweeps.noteFanOut();
    expect([sweeps.takeDue(), sweeps.takeDue(), sweeps.takeDue()]).toEqual([true, true, false]);
  });
});
