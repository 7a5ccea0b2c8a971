import { isValidEpoch, MAX_EPOCH_LENGTH } from '@switchboard/core';

/** Where an opted-in subscription asks to resume: after `since`, in `epoch`. */
export interface Resume {
  readonly since: number;
  readonly epoch: string;
}

const DIGITS = /^\d{1,15}$/;

/**
 * `since` and `epoch` as a client sent them (URL strings, or JSON values in `system::subscribe`):
 * `undefined` when neither is given, `{ problem }` naming what is wrong when malformed. A
 * `since` ahead of the topic is not malformed: it is unrecoverable (`recovered: false`).
 */
export function parseResume(since: unknown, epoch: unknown): Resume | undefined | { problem: string } {
  const noSince = since === undefined || since === null || since === '';
  const noEpoch = epoch === undefined || epoch === null || epoch === '';
  if (noSince && noEpoch) return undefined;
  if (noSince) return { problem: 'epoch was given without since; resume with both' };
  if (noEpoch) return { problem: 'since was given without epoch; resume with both' };
  let offset: number;
  if (typeof since === 'number' && Number.isSafeInteger(since) && since >= 0) offset = since;
  else if (typeof since === 'string' && DIGITS.test(since)) offset = Number(since);
  else return { problem: `Invalid since ${JSON.stringify(since)}: must be a non-negative integer offset` };
  // Epochs are short opaque tokens; anything else cannot be one the engine handed out.
  if (!isValidEpoch(epoch))
    return {
      problem: `Invalid epoch ${JSON.stringify(epoch)}: must be the epoch of a system::position (1 to ${MAX_EPOCH_LENGTH} characters of A-Z a-z 0-9 _ -)`,
    };
  return { since: offset, epoch };
}

export const isResumeProblem = (value: Resume | { problem: string }): value is { problem: string } =>
  'problem' in value;
