import uPlot from 'uplot';
import { api, ApiError, credentials } from './api';
import type {
  ChannelCount,
  Credentials,
  HistoryAnswer,
  KeySettings,
  LogEntry,
  Member,
  MembersPage,
} from './api';
import { h, replace } from './dom';

/** The page polls the API this often: a change shows within 2 s. */
const POLL_MS = 1000;
/** The chart's window: the last five minutes. */
const CHART_POINTS = 300;
/** Members listed per protocol and page on a channel page. */
const MEMBERS_PER_PAGE = 50;
/** Recent messages listed on a channel page. */
const RECENT_MESSAGES = 50;

const main = document.getElementById('main') as HTMLElement;
const status = document.getElementById('status') as HTMLElement;
const who = document.getElementById('who') as HTMLElement;
const signOut = document.getElementById('sign-out') as HTMLButtonElement;

let stopView: () => void = () => undefined;

function showStatus(error: unknown): void {
  if (error === undefined) {
    replace(status);
    status.className = 'status';
    return;
  }
  const text =
    error instanceof ApiError && error.status === 503
      ? `The engine is unavailable (503): ${error.message}. Showing the last data read; retrying every second.`
      : error instanceof ApiError
        ? `${error.message} (${error.status === 0 ? 'network' : `HTTP ${error.status}`})`
        : String(error);
  replace(status, text);
  status.className = 'status error';
}

/** Runs `tick` now and every `POLL_MS` until the view changes; errors show in the status line. */
function poll(tick: () => Promise<void>): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = async (): Promise<void> => {
    try {
      await tick();
      if (!stopped) showStatus(undefined);
    } catch (error) {
      if (stopped) return;
      if (error instanceof ApiError && error.status === 401)
        return signInView('Your key or secret is no longer accepted.');
      showStatus(error);
    }
    if (!stopped) timer = setTimeout(() => void run(), POLL_MS);
  };
  void run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

function signInView(message?: string): void {
  stopView();
  stopView = () => undefined;
  credentials.clear();
  who.textContent = '';
  signOut.hidden = true;
  showStatus(undefined);
  const error = h('p', { id: 'sign-in-error', class: 'error', role: 'alert' }, message ?? '');
  const key = h('input', {
    id: 'key',
    name: 'key',
    autocomplete: 'username',
    required: true,
    spellcheck: 'false',
  });
  const secret = h('input', {
    id: 'secret',
    name: 'secret',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  });
  const form = h(
    'form',
    { class: 'card sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h2', { id: 'sign-in-title' }, 'Sign in with an API key'),
    h('label', { for: 'key' }, 'API key'),
    key,
    h('label', { for: 'secret' }, 'Secret'),
    secret,
    h('p', { class: 'hint' }, 'Kept in this tab only (sessionStorage) and sent as request headers.'),
    h('button', { type: 'submit' }, 'Sign in'),
    error,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const creds = { key: key.value.trim(), secret: secret.value };
    error.textContent = 'Signing in…';
    api<KeySettings>(creds, '/api/settings')
      .then(() => {
        credentials.save(creds);
        route();
      })
      .catch((failure: unknown) => {
        error.textContent =
          failure instanceof ApiError && failure.status === 401
            ? 'Wrong key or secret.'
            : failure instanceof Error
              ? failure.message
              : String(failure);
      });
  });
  replace(main, form);
  key.focus();
}

const table = (caption: string, head: string[], rows: Node[], empty: string): HTMLElement =>
  rows.length === 0
    ? h('p', { class: 'empty' }, empty)
    : h(
        'table',
        {},
        h('caption', {}, caption),
        h('thead', {}, h('tr', {}, ...head.map((name) => h('th', { scope: 'col' }, name)))),
        h('tbody', {}, ...rows),
      );

const identity = (member: Member): string =>
  member.user === undefined || member.user === null
    ? member.uuid
    : typeof member.user === 'string'
      ? member.user
      : JSON.stringify(member.user);

function settingsCard(settings: KeySettings): HTMLElement {
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'settings-title' },
    h('h2', { id: 'settings-title' }, 'Key settings (read-only)'),
    h('h3', {}, 'Allowed domains'),
    settings.domains.length === 0
      ? h('p', { class: 'empty' }, 'Any origin may connect (no domains set).')
      : h('ul', {}, ...settings.domains.map((d) => h('li', {}, d))),
    h('h3', {}, 'Webhook'),
    settings.webhook === null || settings.webhook === undefined
      ? h('p', { class: 'empty' }, 'No webhook set for this key.')
      : h('pre', {}, JSON.stringify(settings.webhook, null, 2)),
  );
}

function overviewView(creds: Credentials): void {
  const channels = h('div', { id: 'channels' }, h('p', {}, 'Loading channels…'));
  const chartBox = h('div', {
    class: 'chart',
    role: 'img',
    'aria-label': 'Connections and messages per second, last 5 minutes',
  });
  const totals = h('p', { id: 'totals' }, '');
  const settings = h('div', {}, h('p', {}, 'Loading settings…'));
  replace(
    main,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'live-title' },
      h('h2', { id: 'live-title' }, 'Live channels'),
      totals,
      chartBox,
      channels,
    ),
    settings,
  );
  const times: number[] = [];
  const connections: number[] = [];
  const rates: number[] = [];
  const chart = new uPlot(
    {
      width: Math.min(760, main.clientWidth - 40),
      height: 180,
      series: [
        {},
        { label: 'Connections', stroke: '#1f5fbf', width: 2 },
        { label: 'Messages/s', stroke: '#b3261e', width: 2, scale: 'rate' },
      ],
      axes: [{}, { label: 'connections' }, { side: 1, scale: 'rate', label: 'msg/s', grid: { show: false } }],
      scales: { x: { time: true } },
    },
    [times, connections, rates],
    chartBox,
  );
  let lastLogId: string | undefined;
  let lastTime: number | undefined;
  void api<KeySettings>(creds, '/api/settings').then(
    (value) => replace(settings, settingsCard(value)),
    (error: unknown) => replace(settings, h('p', { class: 'error' }, `Settings: ${String(error)}`)),
  );
  const stop = poll(async () => {
    // Only what the chart needs: the entries since the newest one seen, without their texts
    // (the whole log can weigh tens of megabytes).
    const logsPath =
      lastLogId === undefined
        ? '/api/logs?limit=1&messages=false'
        : `/api/logs?after=${encodeURIComponent(lastLogId)}&messages=false`;
    // PieSocket (V3 and V4) and Pusher connections are counted apart: one list and sum each.
    const [pieSocket, pusher, sum, pusherSum, logs] = await Promise.all([
      api<{ data: ChannelCount[]; total: number }>(creds, '/api/connections?page=1&limit=100'),
      api<{ data: ChannelCount[]; total: number }>(creds, '/api/connections?page=1&limit=100&family=pusher'),
      api<{ connection_count?: number; sum?: number }>(creds, '/api/connections/sum'),
      api<{ connection_count?: number }>(creds, '/api/connections/sum?family=pusher'),
      api<LogEntry[]>(creds, logsPath),
    ]);
    const list = {
      data: [...pieSocket.data, ...pusher.data].sort(
        (a, b) =>
          b.connection_count - a.connection_count ||
          (a.channel_id < b.channel_id ? -1 : a.channel_id > b.channel_id ? 1 : 0),
      ),
      total: pieSocket.total + pusher.total,
    };
    const now = Date.now() / 1000;
    const total =
      (Object.values(sum).find((v) => typeof v === 'number') ?? 0) + (pusherSum.connection_count ?? 0);
    const newMessages = lastLogId === undefined ? 0 : logs.length;
    const rate = lastTime === undefined ? 0 : newMessages / Math.max(now - lastTime, 0.001);
    lastLogId = logs[0]?.id ?? lastLogId;
    lastTime = now;
    times.push(now);
    connections.push(total);
    rates.push(Math.round(rate * 10) / 10);
    if (times.length > CHART_POINTS) [times, connections, rates].forEach((series) => series.shift());
    chart.setData([times, connections, rates]);
    totals.textContent = `${total} connection${total === 1 ? '' : 's'} in ${list.total} channel${list.total === 1 ? '' : 's'}`;
    replace(
      channels,
      table(
        'Channels by connections (most first)',
        ['Channel', 'Family', 'Connections'],
        list.data.map((c) =>
          h(
            'tr',
            {},
            h('td', {}, h('a', { href: `#/channel/${encodeURIComponent(c.channel_id)}` }, c.channel_id)),
            h('td', {}, c.family === 'pusher' ? 'Pusher' : 'PieSocket'),
            h('td', { class: 'num' }, String(c.connection_count)),
          ),
        ),
        'No live channels: no client is connected with this key right now.',
      ),
      list.total > list.data.length
        ? h('p', { class: 'hint' }, `Showing the ${list.data.length} busiest of ${list.total}.`)
        : null,
    );
  });
  stopView = () => {
    stop();
    chart.destroy();
  };
}

function channelView(creds: Credentials, channel: string): void {
  const members = h('div', {}, h('p', {}, 'Loading members…'));
  const messages = h('div', {}, h('p', {}, 'Loading messages…'));
  const history = h('div', {}, h('p', {}, 'Loading history…'));
  const result = h('p', { id: 'action-result', role: 'status' }, '');
  const act = <T>(label: string, action: Promise<T>, done: (answer: T) => string = () => 'done.'): void => {
    result.textContent = `${label}…`;
    action.then(
      (answer) => (result.textContent = `${label}: ${done(answer)}`),
      (error: unknown) =>
        (result.textContent = `${label} failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  };
  const kick = (selector: Record<string, string>, label: string): void =>
    act(label, api<KickAnswer>(creds, '/api/kicks', { channel, ...selector }), kickedText);

  const protocol = h(
    'select',
    { id: 'publish-protocol', name: 'protocol' },
    h('option', { value: 'v4' }, 'V4'),
    h('option', { value: 'v3' }, 'V3'),
    h('option', { value: 'pusher' }, 'Pusher'),
  );
  // Pusher clients act on events only: a publish to the Pusher family goes out as this event.
  const eventName = h('input', { id: 'publish-event', name: 'event', value: 'message', maxlength: '200' });
  const eventRow = h(
    'div',
    { hidden: true },
    h('label', { for: 'publish-event' }, 'Pusher event'),
    eventName,
  );
  protocol.addEventListener('change', () => (eventRow.hidden = protocol.value !== 'pusher'));
  const format = h(
    'select',
    { id: 'publish-format', name: 'format' },
    h('option', { value: 'json' }, 'JSON'),
    h('option', { value: 'text' }, 'Text'),
  );
  const message = h('textarea', { id: 'publish-message', name: 'message', rows: '4', required: true });
  message.value = '{"event":"hello","data":"from the console"}';
  const publishForm = h(
    'form',
    { class: 'publish', 'aria-labelledby': 'publish-title' },
    h('h3', { id: 'publish-title' }, 'Publish to this channel'),
    h('label', { for: 'publish-protocol' }, 'Protocol'),
    protocol,
    eventRow,
    h('label', { for: 'publish-format' }, 'Format'),
    format,
    h('label', { for: 'publish-message' }, 'Message'),
    message,
    h('button', { type: 'submit' }, 'Publish'),
  );
  publishForm.addEventListener('submit', (event) => {
    event.preventDefault();
    let body: unknown = message.value;
    if (format.value === 'json') {
      try {
        body = JSON.parse(message.value);
      } catch (error) {
        result.textContent = `Not valid JSON: ${(error as Error).message}. Choose "Text" to send it as is.`;
        return;
      }
    }
    const pusher = protocol.value === 'pusher' ? { event: eventName.value } : {};
    act(
      'Publish',
      api(creds, '/api/messages', { channel, protocol: protocol.value, message: body, ...pusher }),
    );
  });

  replace(
    main,
    h('p', {}, h('a', { href: '#/' }, '← All channels')),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'channel-title' },
      h('h2', { id: 'channel-title' }, `Channel ${channel}`),
      h(
        'button',
        { type: 'button', class: 'danger', onclick: () => kick({}, `Kick everyone in ${channel}`) },
        'Kick every connection of this channel',
      ),
      result,
      h('h3', {}, 'Members'),
      members,
      publishForm,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'messages-title' },
      h('h3', { id: 'messages-title' }, 'Recent messages'),
      messages,
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'history-title' },
      h('h3', { id: 'history-title' }, 'History (V4 stream)'),
      history,
    ),
  );

  const pages = { v4: 1, v3: 1, pusher: 1 };
  // Kicks by connection or user select V4 subscriptions only: a V3 row gets no button that
  // would answer "done" and kick nobody; V3 connections leave with the whole channel's kick.
  const memberRows = (list: Member[]): Node[] =>
    list.map((member) =>
      h(
        'tr',
        {},
        h('td', {}, member.protocol === 'pusher' ? 'Pusher' : member.protocol.toUpperCase()),
        h('td', {}, member.user === undefined ? '—' : identity(member)),
        h('td', { class: 'mono' }, member.uuid),
        member.protocol === 'v3'
          ? h('td', { class: 'hint' }, 'Kick the channel to close V3 connections')
          : member.protocol === 'pusher'
            ? h('td', { class: 'hint' }, "Pusher member: end a user's sockets with the Pusher HTTP API")
            : h(
                'td',
                {},
                h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Kick connection ${member.uuid}`,
                    onclick: () => kick({ uuid: member.uuid }, `Kick connection ${member.uuid}`),
                  },
                  'Kick connection',
                ),
                member.user === undefined
                  ? null
                  : h(
                      'button',
                      {
                        type: 'button',
                        'aria-label': `Kick user ${identity(member)}`,
                        onclick: () => kick({ user: identity(member) }, `Kick user ${identity(member)}`),
                      },
                      'Kick user',
                    ),
              ),
      ),
    );
  const pager = (protocol: 'v3' | 'v4' | 'pusher', page: MembersPage): Node | null =>
    page.totalPages > 1
      ? h(
          'p',
          { class: 'pager' },
          h(
            'button',
            { type: 'button', disabled: pages[protocol] <= 1, onclick: () => (pages[protocol] -= 1) },
            `Previous ${protocol.toUpperCase()} page`,
          ),
          ` page ${page.page} of ${page.totalPages} (${page.total} members) `,
          h(
            'button',
            {
              type: 'button',
              disabled: pages[protocol] >= page.totalPages,
              onclick: () => (pages[protocol] += 1),
            },
            `Next ${protocol.toUpperCase()} page`,
          ),
        )
      : null;
  const membersOf = (protocol: 'v3' | 'v4' | 'pusher'): Promise<MembersPage> =>
    api<MembersPage>(
      creds,
      `/api/channel-members?channel=${encodeURIComponent(channel)}&protocol=${protocol}&page=${pages[protocol]}&limit=${MEMBERS_PER_PAGE}`,
    );
  const stop = poll(async () => {
    const [v4, v3, pusher, logs, stream] = await Promise.all([
      membersOf('v4'),
      membersOf('v3'),
      membersOf('pusher'),
      api<LogEntry[]>(creds, `/api/logs?channel=${encodeURIComponent(channel)}&limit=${RECENT_MESSAGES}`),
      api<HistoryAnswer>(creds, `/api/history?channel=${encodeURIComponent(channel)}&protocol=v4&limit=20`),
    ]);
    replace(
      members,
      table(
        `Members of ${channel}: V4 and Pusher by user, V3 by connection, most recently active first`,
        ['Protocol', 'User', 'Connection', 'Actions'],
        [...memberRows(v4.data), ...memberRows(v3.data), ...memberRows(pusher.data)],
        'No presence members here (members appear for clients that join with presence).',
      ),
      pager('v4', v4),
      pager('v3', v3),
      pager('pusher', pusher),
    );
    replace(
      messages,
      table(
        `Recent messages in ${channel} (newest first)`,
        ['Time', 'Protocol', 'From', 'Message'],
        logs.map((entry) =>
          h(
            'tr',
            {},
            h('td', {}, new Date(entry.timestamp).toLocaleTimeString()),
            h('td', {}, entry.protocol === 'pusher' ? 'Pusher' : entry.protocol.toUpperCase()),
            h('td', {}, entry.source === 'api' ? 'API' : (entry.uuid ?? 'client')),
            h(
              'td',
              { class: 'mono' },
              entry.binary ? `(binary, base64) ${entry.message ?? ''}` : (entry.message ?? ''),
            ),
          ),
        ),
        'No recent messages in this channel.',
      ),
    );
    replace(
      history,
      table(
        `Stored publications (epoch ${stream.epoch}, offset ${stream.offset})`,
        ['Offset', 'Time', 'Message'],
        stream.publications
          .slice()
          .reverse()
          .map((p) =>
            h(
              'tr',
              {},
              h('td', { class: 'num' }, String(p.offset)),
              h('td', {}, new Date(p.timestamp).toLocaleTimeString()),
              h('td', { class: 'mono' }, p.message),
            ),
          ),
        "No stored history for this channel: nothing was published to it within the key's history window (HISTORY_SIZE publications, kept HISTORY_TTL_SECONDS after the latest), or the key keeps none (history size 0).",
      ),
    );
  });
  stopView = stop;
}

function route(): void {
  stopView();
  const creds = credentials.load();
  if (!creds) return signInView();
  who.textContent = `Key ${creds.key}`;
  signOut.hidden = false;
  const match = /^#\/channel\/(.+)$/.exec(location.hash);
  if (!match?.[1]) return overviewView(creds);
  let channel: string;
  try {
    channel = decodeURIComponent(match[1]);
  } catch {
    // A mangled link (cut in the middle of a %-escape): say so instead of stopping the page.
    return badLinkView(match[1]);
  }
  channelView(creds, channel);
}

function badLinkView(raw: string): void {
  stopView = () => undefined;
  replace(
    main,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'bad-link-title' },
      h('h2', { id: 'bad-link-title' }, 'This link does not name a channel'),
      h(
        'p',
        { class: 'error', role: 'alert' },
        `The channel part of the link, "${raw.length > 80 ? `${raw.slice(0, 80)}…` : raw}", is not valid percent-encoding (it may have been cut off).`,
      ),
      h('p', {}, h('a', { href: '#/' }, '← All channels')),
    ),
  );
}

signOut.addEventListener('click', () => signInView());
window.addEventListener('hashchange', route);
route();

/** `POST /api/kicks`' answer (docs/openapi.yaml, `KickResult`). */
interface KickAnswer {
  kicked: number;
  complete: boolean;
}

/** The kick's count across the cluster; a partial one says so (docs/protocol.md, "Kicks"). */
function kickedText({ kicked, complete }: KickAnswer): string {
  const sockets = `${kicked} connection${kicked === 1 ? '' : 's'} kicked`;
  return complete
    ? `${sockets}.`
    : `at least ${sockets} (a gateway did not answer in time; it still carries the kick out).`;
}
