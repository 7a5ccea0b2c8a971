import { loadUws } from '@switchboard/gateway';

interface WrappableApp {
  ws(pattern: string, behavior: { open?: (socket: unknown) => void }): unknown;
}

/**
 * Makes the upgrade bug of uWebSockets.js' `res.cork` certain instead of rare (docs/architecture.md,
 * "Upgrades that wait"): uWS's `open` of every socket first allocates `count` buffers filled with
 * 0x10 (the HTTP "connection: close" flag, without "response pending"), by wrapping the `App` of
 * the module the transport loads (the loader's `require` returns the same module object), so one
 * of them lands in the memory an upgrade gave up whenever `open` runs inside such a cork. Applies
 * to transports created afterwards; returns the undo.
 */
export function fillFreedMemoryInOpen(count: number): () => void {
  const native = loadUws().uws as unknown as { App: (...args: unknown[]) => WrappableApp };
  const App = native.App;
  native.App = (...args) => {
    const app = App(...args);
    const ws = app.ws.bind(app);
    app.ws = (pattern, behavior) =>
      ws(pattern, {
        ...behavior,
        open: (socket) => {
          const kept: Buffer[] = [];
          for (let i = 0; i < count; i++) kept.push(Buffer.allocUnsafeSlow(16 + ((i * 8) % 400)).fill(0x10));
          behavior.open?.(socket);
        },
      });
    return app;
  };
  return () => {
    native.App = App;
  };
}
