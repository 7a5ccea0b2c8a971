/**
 * The client side of docs/protocol.md "History and recovery" as a recorder of one socket's
 * frames (the benchmark's `recovery` scenario feeds it; it opens no socket itself, unlike
 * RecoveringClient): remember the epoch of the latest `system::position` and the offset of the
 * latest publication, resume with both. It records when each offset arrived (and duplicates and
 * out-of-order arrivals), so the harness can tell when every client had every publication.
 */
export interface ResumeStatus {
  clients: number;
  /** Clients that received every offset of [first, last] of the stream's epoch. */
  complete: number;
  /** The latest arrival among the complete clients' offsets of [first, last] (µs, monotonic clock). */
  lastArrivalUs: number;
  reconnects: number;
  /** Position frames that answered a resume with `recovered: true` / `false`. */
  recovered: number;
  unrecovered: number;
  duplicates: number;
  /** Publications whose offset was not the one after the previous publication's. */
  outOfOrder: number;
  /** A client that saw more than one epoch (history lost: recovery cannot be complete). */
  epochChanges: number;
  /** When the first reconnect started and the last one received its position (µs), 0 if none. */
  firstReconnectUs: number;
  lastResumedUs: number;
}

interface Position {
  event: 'system::position';
  data: { epoch: string; offset: number; recovered?: boolean; missed?: number };
}

const OFFSET_FIELD = '"system::offset":';

export class ResumeRecorder {
  epoch: string | undefined;
  /** Offset of the latest publication, or of a position frame none came after. */
  offset = 0;
  /** Position frames received so far (one per connection). */
  positions = 0;
  reconnects = 0;
  recovered = 0;
  unrecovered = 0;
  duplicates = 0;
  outOfOrder = 0;
  epochChanges = 0;
  firstReconnectUs = 0;
  lastResumedUs = 0;
  private awaitingResume = false;
  /** Arrival time (µs) of each offset, 0 = not received. */
  private arrivals = new Float64Array(256);

  get positioned(): boolean {
    return this.positions > 0;
  }

  /** One text frame of the socket, at `atUs`. */
  onFrame(text: string, atUs: number): void {
    const at = text.lastIndexOf(OFFSET_FIELD);
    if (at >= 0) {
      this.onPublication(Number(text.slice(at + OFFSET_FIELD.length, text.length - 1)), atUs);
      return;
    }
    if (!text.startsWith('{"event":"system::position"')) return;
    const { data } = JSON.parse(text) as Position;
    this.positions++;
    if (this.awaitingResume) {
      this.awaitingResume = false;
      this.lastResumedUs = Math.max(this.lastResumedUs, atUs);
    }
    if (this.epoch !== undefined && data.epoch !== this.epoch) this.epochChanges++;
    this.epoch = data.epoch;
    if (data.recovered === true) {
      // The missed publications follow; until they do, resuming again starts from the same offset.
      this.recovered++;
      return;
    }
    if (data.recovered === false) this.unrecovered++;
    this.offset = data.offset;
  }

  private onPublication(offset: number, atUs: number): void {
    if (!Number.isSafeInteger(offset) || offset < 1) return;
    if (offset !== this.offset + 1) this.outOfOrder++;
    this.offset = offset;
    if (offset >= this.arrivals.length) {
      const grown = new Float64Array(Math.max(offset + 1, this.arrivals.length * 2));
      grown.set(this.arrivals);
      this.arrivals = grown;
    }
    if (this.arrivals[offset]) this.duplicates++;
    else this.arrivals[offset] = atUs;
  }

  /** The socket closed and is being reopened with `since` and `epoch`. */
  onReconnect(atUs: number): void {
    this.reconnects++;
    this.awaitingResume = true;
    if (!this.firstReconnectUs) this.firstReconnectUs = atUs;
  }

  /** `base` (a URL with a query) resuming after this client's offset in its epoch. */
  resumeUrl(base: string): string {
    return this.epoch === undefined ? base : `${base}&since=${this.offset}&epoch=${this.epoch}`;
  }

  /** The latest arrival among offsets [first, last], or undefined if one of them is missing. */
  completedAt(first: number, last: number): number | undefined {
    let latest = 0;
    for (let o = first; o <= last; o++) {
      const t = this.arrivals[o];
      if (!t) return undefined;
      if (t > latest) latest = t;
    }
    return latest;
  }

  static summarize(clients: readonly ResumeRecorder[], first: number, last: number): ResumeStatus {
    const s: ResumeStatus = {
      clients: clients.length,
      complete: 0,
      lastArrivalUs: 0,
      reconnects: 0,
      recovered: 0,
      unrecovered: 0,
      duplicates: 0,
      outOfOrder: 0,
      epochChanges: 0,
      firstReconnectUs: 0,
      lastResumedUs: 0,
    };
    for (const c of clients) {
      const done = c.completedAt(first, last);
      if (done !== undefined) {
        s.complete++;
        s.lastArrivalUs = Math.max(s.lastArrivalUs, done);
      }
      s.reconnects += c.reconnects;
      s.recovered += c.recovered;
      s.unrecovered += c.unrecovered;
      s.duplicates += c.duplicates;
      s.outOfOrder += c.outOfOrder;
      s.epochChanges += c.epochChanges;
      if (c.firstReconnectUs && (!s.firstReconnectUs || c.firstReconnectUs < s.firstReconnectUs))
        s.firstReconnectUs = c.firstReconnectUs;
      s.lastResumedUs = Math.max(s.lastResumedUs, c.lastResumedUs);
    }
    return s;
  }

  /** Several processes' summaries as one (their clocks are shared). */
  static merge(parts: readonly ResumeStatus[]): ResumeStatus {
    const firsts = parts.map((p) => p.firstReconnectUs).filter((t) => t > 0);
    return {
      clients: sum(parts, 'clients'),
      complete: sum(parts, 'complete'),
      lastArrivalUs: Math.max(0, ...parts.map((p) => p.lastArrivalUs)),
      reconnects: sum(parts, 'reconnects'),
      recovered: sum(parts, 'recovered'),
      unrecovered: sum(parts, 'unrecovered'),
      duplicates: sum(parts, 'duplicates'),
      outOfOrder: sum(parts, 'outOfOrder'),
      epochChanges: sum(parts, 'epochChanges'),
      firstReconnectUs: firsts.length ? Math.min(...firsts) : 0,
      lastResumedUs: Math.max(0, ...parts.map((p) => p.lastResumedUs)),
    };
  }
}

const sum = (parts: readonly ResumeStatus[], field: keyof ResumeStatus): number =>
  parts.reduce((total, p) => total + p[field], 0);
