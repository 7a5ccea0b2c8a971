interface Batch<T, V> {
  readonly target: T;
  readonly values: V[];
  /** Settles with the batch's write; every `add` of the batch returns it. */
  readonly written: Promise<void>;
  readonly settle: (write: Promise<unknown>) => void;
}

/**
 * Collects values per target during one event-loop turn and writes each target's values with
 * one call at the end of the turn (a busy node produces many per turn: one command instead of
 * one per value). Every `add` resolves, or rejects, with its target's write; values keep the
 * order they were added in. The adds of one batch share one promise: a burst of values costs
 * no promise each.
 */
export class TurnBatches<T, V> {
  private readonly pending = new Map<string, Batch<T, V>>();
  private scheduled = false;

  constructor(
    /** Identifies a target (values of one target are written together). */
    private readonly idOf: (target: T) => string,
    private readonly write: (target: T, values: V[]) => Promise<unknown>,
  ) {}

  add(target: T, value: V): Promise<void> {
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
    return batch.written;
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
  const written = new Promise<void>((resolve, reject) => {
    settle = (write) =>
      write.then(
        () => resolve(),
        (error: unknown) => reject(error ?? new Error('write failed')),
      );
  });
  return { target, values: [], written, settle };
}
