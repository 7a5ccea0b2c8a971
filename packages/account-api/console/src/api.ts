/** The account API as the console uses it: credentials in headers, never in a URL or cookie. */

const STORE_KEY = 'switchboard.console.key';
const STORE_SECRET = 'switchboard.console.secret';

export interface Credentials {
  key: string;
  secret: string;
}

/** Kept in sessionStorage only: gone when the tab closes, never sent anywhere but as headers. */
export const credentials = {
  load(): Credentials | undefined {
    const key = sessionStorage.getItem(STORE_KEY);
    const secret = sessionStorage.getItem(STORE_SECRET);
    return key && secret ? { key, secret } : undefined;
  },
  save(value: Credentials): void {
    sessionStorage.setItem(STORE_KEY, value.key);
    sessionStorage.setItem(STORE_SECRET, value.secret);
  },
  clear(): void {
    sessionStorage.removeItem(STORE_KEY);
    sessionStorage.removeItem(STORE_SECRET);
  },
};

/** An error answer of the API (`{error, code}`), or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(creds: Credentials, path: string, body?: object): Promise<T> {
  const headers: Record<string, string> = { key: creds.key, secret: creds.secret };
  if (body) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, {
      method: body ? 'POST' : 'GET',
      headers,
      credentials: 'omit',
      cache: 'no-store',
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The account API cannot be reached (is the server running?)');
  }
  const payload = (await response.json().catch(() => ({}))) as { error?: string; code?: string };
  if (!response.ok)
    throw new ApiError(
      response.status,
      payload.code ?? 'UNKNOWN',
      payload.error ?? `HTTP ${response.status}`,
    );
  return payload as T;
}

export interface ChannelCount {
  channel_id: string;
  connection_count: number;
  /** `pusher` on the Pusher family's rows; absent on PieSocket (V3 and V4) rows. */
  family?: 'pusher';
}
export interface LogEntry {
  id: string;
  channel: string;
  protocol: 'v3' | 'v4' | 'pusher';
  source: 'api' | 'client';
  /** Left out when asked with `messages=false`. */
  message?: string;
  binary?: true;
  uuid?: string;
  user?: unknown;
  timestamp: string;
}
/** `/api/channel-members`' member: V4 and Pusher members are users (`uuid` their latest connection's). */
export interface Member {
  uuid: string;
  user?: unknown;
  /** A Pusher member's `user_info`. */
  info?: unknown;
  protocol: 'v3' | 'v4' | 'pusher';
}
export interface MembersPage {
  data: Member[];
  total: number;
  page: number;
  limit: number;
  totalPages: number;
}
export interface HistoryAnswer {
  epoch: string;
  offset: number;
  publications: Array<{ offset: number; message: string; timestamp: string }>;
}
export interface KeySettings {
  key: string;
  domains: string[];
  webhook: unknown;
}
