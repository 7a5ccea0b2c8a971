/**
 * Reads a gateway's Prometheus metrics (docs/operations.md, "Metrics"): prom-client's default
 * Node.js metrics give the heap and the event-loop lag from inside the process.
 */

/** Sum of every series of `name` in a Prometheus text exposition (labels ignored); undefined when absent. */
export function metricValue(text: string, name: string): number | undefined {
  let found = false;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const value = Number(rest.slice(rest.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) {
      found = true;
      sum += value;
    }
  }
  return found ? sum : undefined;
}

export async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!res.ok) throw new Error(`metrics on port ${port} answered ${res.status}`);
  return res.text();
}
