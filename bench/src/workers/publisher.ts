import { publishAtRate } from '../lib/publish-loop';
import type { PublishSpec } from '../lib/publish-loop';

/** Publisher process: runs `publishAtRate` for the harness over IPC. */
process.on('message', (message: { cmd: string; spec?: PublishSpec }) => {
  if (message.cmd === 'run' && message.spec) {
    publishAtRate(message.spec).then(
      (result) => process.send?.({ cmd: 'result', result }),
      (error: unknown) => process.send?.({ cmd: 'error', error: String(error) }),
    );
  } else if (message.cmd === 'exit') process.exit(0);
});
