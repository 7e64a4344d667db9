/**
 * One consumer output line as the sandbox shows it: delivery decisions compactly, by event ID and
 * endpoint (`evt_42 → carrier-acme, notifications fanned out`, `evt_42 → carrier-acme delivered`,
 * `evt_42 → billing retry in 1 s (temporary, after temporary (503))`, `evt_43 unrouted (…)`,
 * `evt_44 → billing parked (…)`, `evt_45 → carrier-acme waiting (sequence 2, after 1)`),
 * warnings and errors always, metric documents never. Consumer lines carry event IDs and codes, no
 * payloads.
 */
export function describeWorkerLine(line: string, verbose: boolean): string | undefined {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null) return line;
  if ('_aws' in entry) return undefined;
  if (entry.message === 'delivery') return describeDecision(entry);
  if (verbose || entry.level === 'warn' || entry.level === 'error') return line;
  return undefined;
}

function describeDecision(entry: Record<string, unknown>): string {
  const endpoints =
    typeof entry.endpoint === 'string'
      ? [entry.endpoint]
      : Array.isArray(entry.endpoints)
        ? entry.endpoints.filter((name): name is string => typeof name === 'string')
        : [];
  const subject = `${String(entry.eventId ?? '(no id)')}${endpoints.length > 0 ? ` → ${endpoints.join(', ')}` : ''}`;
  const why = entry.why ?? entry.reason;
  if (entry.action === 'ack' && why === 'delivered') return `${subject} delivered`;
  // A producer's message: handed on as one message per endpoint, or wanted by no endpoint.
  if (entry.action === 'ack' && why === 'fanned-out') return `${subject} fanned out`;
  if (entry.action === 'ack' && why === 'unrouted') return `${subject} unrouted (no endpoint subscribes)`;
  // Endpoint health and ordering (docs/contract.md §12–13): nothing sent, nothing spent.
  if (entry.action === 'ack' && why === 'parked') return `${subject} parked (its endpoint is disabled)`;
  if (entry.action === 'ack' && why === 'waiting') return `${subject} waiting (sequence ${String(entry.sequence)}, after ${String(entry.waitingFor)})`;
  const wait = entry.action === 'retry' && typeof entry.afterSeconds === 'number' ? ` in ${entry.afterSeconds} s` : '';
  const detail = [why, entry.outcome ? `after ${String(entry.outcome)}` : undefined, entry.queueError ? 'the queue call failed' : undefined]
    .filter(Boolean)
    .join(', ');
  return `${subject} ${String(entry.action)}${wait}${detail ? ` (${detail})` : ''}`;
}
