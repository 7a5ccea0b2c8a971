import type { Config, Engine, Logger, NodeId } from '@switchboard/core';

/** What most services of a gateway take: its configuration, engine, log and node id. */
export interface NodeDeps {
  readonly config: Config;
  readonly engine: Engine;
  readonly logger: Logger;
  readonly nodeId: NodeId;
}

/** The node's draining and admitting state, written by the lifecycle and read by admission and repairs. */
export interface NodeStatus {
  draining: boolean;
  admitting: number;
}
