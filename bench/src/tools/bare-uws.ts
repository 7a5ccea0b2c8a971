import type * as uWS from '@btc-vision/uwebsockets.js';
import { loadUws } from '@switchboard/gateway';

/**
 * The idle-memory floor (`npm run bench:idle-memory`): a bare uWebSockets.js server on the
 * gateway's own native build, holding no per-socket state beyond what uWS keeps: an empty user
 * data object; with `topic`, each socket subscribes to the topic its URL names
 * (`/<anything>/<channel>`), as every idle subscriber of the product does, and keeps no string.
 * Env PORT, HOST. Not product code; never a test.
 */
const subscribe = process.argv[2] === 'topic';
const native = loadUws().uws;
const app = native.App();

interface Data {
  channel: string;
}

app.ws<Data>('/*', {
  compression: native.DISABLED,
  maxPayloadLength: 64 * 1024,
  idleTimeout: 120,
  upgrade: (res: uWS.HttpResponse, req: uWS.HttpRequest, context: uWS.us_socket_context_t) => {
    res.upgrade<Data>(
      { channel: subscribe ? (req.getUrl().split('/')[2] ?? 'none') : '' },
      req.getHeader('sec-websocket-key'),
      req.getHeader('sec-websocket-protocol'),
      req.getHeader('sec-websocket-extensions'),
      context,
    );
  },
  open: (ws) => {
    const data = ws.getUserData();
    if (subscribe) ws.subscribe(data.channel);
    data.channel = '';
  },
});

app.listen(process.env['HOST'] ?? '127.0.0.1', Number(process.env['PORT'] ?? 0), (socket) => {
  if (!socket) {
    console.error(JSON.stringify({ msg: 'listen failed' }));
    process.exit(1);
  }
  console.log(JSON.stringify({ msg: 'ready', port: native.us_socket_local_port(socket) }));
});

process.on('SIGTERM', () => process.exit(0));
