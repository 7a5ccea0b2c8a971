// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Handler = (...args: any[]) => void;

/**
 * A minimal event emitter; subclasses declare typed `on` overloads. A handler that throws does
 * not stop the others or the client's bookkeeping: its error is rethrown asynchronously, where
 * the host reports it (console, `unhandledRejection`).
 */
export class Emitter {
  private readonly handlers = new Map<string, Set<Handler>>();

  on(event: string, handler: Handler): () => void {
    let set = this.handlers.get(event);
    if (!set) this.handlers.set(event, (set = new Set()));
    set.add(handler);
    return () => this.off(event, handler);
  }

  /** Removes one handler, or every handler of the event. */
  off(event: string, handler?: Handler): void {
    if (handler) this.handlers.get(event)?.delete(handler);
    else this.handlers.delete(event);
  }

  /** Removes every handler. */
  protected clear(): void {
    this.handlers.clear();
  }

  protected emit(event: string, ...args: unknown[]): boolean {
    const set = this.handlers.get(event);
    if (!set?.size) return false;
    for (const handler of [...set]) {
      try {
        handler(...args);
      } catch (error) {
        void Promise.reject(error);
      }
    }
    return true;
  }
}
