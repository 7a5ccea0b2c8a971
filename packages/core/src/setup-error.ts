/**
 * A problem with the machine or the files a process was given (a port already taken, a keys file
 * that cannot be read, a data directory that cannot be written), not a bug. Its message is one
 * line naming the cause and the fix; the CLI prints it alone and exits non-zero, with the cause's
 * stack trace only at `LOG_LEVEL=debug`.
 */
export class SetupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SetupError';
  }
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOTDIR: 'a part of the path is not a directory',
  EEXIST: 'it exists and is not a directory',
  EISDIR: 'it is a directory',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is used up',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'the path has a symbolic link loop',
};

/** The `code` of a Node system error (`EADDRINUSE`, `EACCES`…), if it is one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A file system failure in a few words: "permission denied", or the code and Node's message. */
export function fileSystemReason(error: unknown): string {
  const code = errorCode(error);
  const known = code === undefined ? undefined : REASONS[code];
  if (known) return known;
  return error instanceof Error ? error.message : String(error);
}
