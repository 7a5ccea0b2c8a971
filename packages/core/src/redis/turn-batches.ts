interface Batch<T, V> {
  readonly target: T;
  readonly values: V[];
  /** Settles with the batch's write; every `add` of the batch returns it. */
  readonly written: Promise<unknown>;
  readonly settle: (write: Promise<unknown>) => void;
}

/**
 * Collects values per target during one event-loop turn and writes each target's values with
 * one call at the end of the turn (a busy node produces many per turn: one command instead of
 * one per value). Values keep the order they were added in. `add` resolves, or rejects, with
 * its target's write, and the adds of one batch share one promise (a burst of values costs no
 * promise each); `request` resolves with the write's result at the value's own index.
 */
export class TurnBatches<T, V, R = void> {
  private readonly pending = new Map<string, Batch<T, V>>();
  private scheduled = false;

  constructor(
    /** Identifies a target (values of one target are written together). */
    private readonly idOf: (target: T) => string,
    /** Writes a batch; resolves with one result per value when values are `request`ed. */
    private readonly write: (target: T, values: V[]) => Promise<[R] extends [void] ? unknown : readonly R[]>,
  ) {}

  add(target: T, value: V): Promise<void> {
    return this.batchFor(target, value).written as Promise<void>;
  }

  request(target: T, value: V): Promise<R> {
    const batch = this.batchFor(target, value);
    const index = batch.values.length - 1;
    return batch.written.then((results) => (results as readonly R[])[index] as R);
  }

  private batchFor(target: T, value: V): Batch<T, V> {
    const id = this.idOf(target);
    let batch = this.pending.get(id);
    if (!batch) {
      batch = newBatch(target);
      this.pending.set(id, batch);
    }
    batch.values.push(value);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return batch;
  }

  private flush(): void {
    this.scheduled = false;
    const batches = [...this.pending.values()];
    this.pending.clear();
    for (const { target, values, settle } of batches) settle(this.write(target, values));
  }
}

function newBatch<T, V>(target: T): Batch<T, V> {
  let settle!: (write: Promise<unknown>) => void;
  const written = new Promise<unknown>((resolve, reject) => {
    settle = (write) => write.then(resolve, (error: unknown) => reject(error ?? new Error('write failed')));
  });
  return { target, values: [], written, settle };
}
