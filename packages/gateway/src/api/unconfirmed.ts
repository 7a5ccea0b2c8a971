import { topicId } from '@switchboard/core';
import type { Publication } from '@switchboard/core';

/** How long a publication whose publish failed unconfirmed is waited for. */
export const UNCONFIRMED_WAIT_MS = 60_000;
/** Waited for at most; the oldest is forgotten first. */
const MAX_WAITING = 1000;

/**
 * This node's REST publications whose publish failed unconfirmed (sent to Redis, no answer, a
 * 503 that says it may have been carried out): Redis may still make them when it moves again,
 * and then hands them to every node subscribed to the channel, this one included. The other
 * nodes deliver them like any publication. The origin delivers its own publications itself when
 * they are accepted and ignores them when they come back, which would leave its own plain
 * subscribers without these: it delivers them when they come back instead (`claim`), once.
 */
export class UnconfirmedPublications {
  /** Identity → when it is no longer waited for (ms), oldest first. */
  private readonly waiting = new Map<string, number>();

  readonly add = (publication: Publication): void => {
    const now = Date.now();
    for (const [id, until] of this.waiting) {
      if (until > now && this.waiting.size < MAX_WAITING) break;
      this.waiting.delete(id);
    }
    this.waiting.set(identity(publication), now + UNCONFIRMED_WAIT_MS);
  };

  /** Whether `publication`, one of this node's own coming back from the engine, was waited for. */
  claim(publication: Publication): boolean {
    if (this.waiting.size === 0) return false;
    const id = identity(publication);
    const until = this.waiting.get(id);
    if (until === undefined) return false;
    this.waiting.delete(id);
    return until > Date.now();
  }
}

const identity = (p: Publication): string => `${topicId(p.topic)}\n${p.acceptedAt ?? ''}\n${p.body}`;
