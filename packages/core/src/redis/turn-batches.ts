/**
 * Collects values per target during one event-loop turn and writes each target's values with
 * one call at the end of the turn (a busy node produces many per turn: one command instead of
 * one per value). Every `add` resolves, or rejects, with its target's write; values keep the
 * order they were added in.
 */
export class TurnBatches<T, V> {
  private readonly pending = new Map<
    string,
    { target: T; values: V[]; settle: Array<(error?: unknown) => void> }
  >();
  private scheduled = false;

  constructor(
    /** Identifies a target (values of one target are written together). */
    private readonly idOf: (target: T) => string,
    private readonly write: (target: T, values: V[]) => Promise<unknown>,
  ) {}

  add(target: T, value: V): Promise<void> {
    return new Promise((resolve, reject) => {
      const id = this.idOf(target);
      let batch = this.pending.get(id);
      if (!batch) {
        batch = { target, values: [], settle: [] };
        this.pending.set(id, batch);
      }
      batch.values.push(value);
      batch.settle.push((error) => (error === undefined ? resolve() : reject(error)));
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
        () => settle.forEach((done) => done()),
        (error: unknown) => settle.forEach((done) => done(error ?? new Error('write failed'))),
      );
    }
  }
}
