/**
 * Collects values per target during one event-loop turn and writes each target's values with
 * one call at the end of the turn (a busy node produces many per turn: one command instead of
 * one per value). Every `add` settles with its target's write: resolved with the write's result
 * at the value's index (nothing, for writes that return no per-value results), or rejected with
 * its error. Values keep the order they were added in.
 */
export class TurnBatches<T, V, R = void> {
  private readonly pending = new Map<
    string,
    { target: T; values: V[]; settle: Array<(error: unknown, result?: R) => void> }
  >();
  private scheduled = false;

  constructor(
    /** Identifies a target (values of one target are written together). */
    private readonly idOf: (target: T) => string,
    private readonly write: (target: T, values: V[]) => Promise<[R] extends [void] ? unknown : readonly R[]>,
  ) {}

  add(target: T, value: V): Promise<R> {
    return new Promise((resolve, reject) => {
      const id = this.idOf(target);
      let batch = this.pending.get(id);
      if (!batch) {
        batch = { target, values: [], settle: [] };
        this.pending.set(id, batch);
      }
      batch.values.push(value);
      batch.settle.push((error, result) => (error === undefined ? resolve(result as R) : reject(error)));
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batches = [...this.pending.values()];
    this.pending.clear();
    for (const { target, values, settle } of batches) {
      this.write(target, values).then(
        (results) =>
          settle.forEach((done, i) =>
            done(undefined, Array.isArray(results) ? (results[i] as R) : undefined),
          ),
        (error: unknown) => settle.forEach((done) => done(error ?? new Error('write failed'))),
      );
    }
  }
}
