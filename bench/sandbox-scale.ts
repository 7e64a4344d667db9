/**
 * The sandbox at platform scale (docs/contract.md §20): `npm start` with an endpoints file of
 * 10,000 endpoints beside one of 10, each figure side by side. Measured per size: the time from
 * spawning the sandbox to its READY line (seeding the registry included), the whole process
 * tree's CPU while idle (the sandbox, its workers and emulators: user + system time from /proc over
 * `idleSeconds`, after `settleSeconds` for start-up work to end: the seeding's changes leave the
 * workers' 30-s look-back of the change index by then), and a delivery check: events
 * that each match one endpoint (by `data.merchant`) arrive there and nowhere else.
 *
 * Endpoint i subscribes to one status's event type and matches `data.merchant` = `m-i`, so an
 * event goes to exactly one endpoint: routing must find it among all of them. Every endpoint's URL
 * is one loopback receiver's, its path naming the endpoint, so the receiver sees who got what.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EndpointFields } from '../lib/endpoints/endpoint';
import { SHIPMENT_STATUSES } from '../lib/event';
import { SandboxClients } from '../test/helpers/sandbox-clients';
import { startSandboxProcess } from '../test/helpers/sandbox';
import { startReceiver } from './harness';
import { fixed, table } from './report';

const [f1, f2] = [fixed(1), fixed(2)];

export const SANDBOX_SCALE_DEFAULTS = { sizes: [10, 10_000], settleSeconds: 40, idleSeconds: 60, events: 20 };
export type SandboxScaleOptions = typeof SANDBOX_SCALE_DEFAULTS;
export type SandboxScaleRun = Awaited<ReturnType<typeof runSandboxAt>>;
/** The issue's bounds: READY within a minute at 10,000 endpoints; idle CPU at most 1.5x the 10-endpoint sandbox's. */
export const SANDBOX_SCALE_TARGETS = { readySeconds: 60, idleCpuRatio: 1.5 };

/** The endpoints file's entries for `count` endpoints on one receiver. Pure. */
export function scaleEndpoints(count: number, receiverUrl: string): EndpointFields[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `merchant-${i}`,
    url: `${receiverUrl}/merchant-${i}`,
    eventTypes: [`shipment.${SHIPMENT_STATUSES[i % SHIPMENT_STATUSES.length]}`],
    match: { 'data.merchant': [`m-${i}`] },
  }));
}

/** An event for endpoint i alone (its type and its merchant). Pure. */
export function eventFor(i: number, id: string): string {
  return JSON.stringify({
    id,
    shipmentId: `SHP-${i}`,
    status: SHIPMENT_STATUSES[i % SHIPMENT_STATUSES.length],
    occurredAt: new Date().toISOString(),
    data: { merchant: `m-${i}` },
  });
}

/** CPU seconds (user + system) used so far by every process of a process group, from /proc. */
function groupCpuSeconds(groupId: number): number {
  const ticksPerSecond = 100;
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // The fields after the command's closing parenthesis: state is the 3rd field, pgrp the 5th, utime the 14th, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) !== groupId) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / ticksPerSecond;
}

/** One sandbox with `count` endpoints: its start, its idle CPU, and a delivery check. */
export async function runSandboxAt(count: number, options: SandboxScaleOptions = SANDBOX_SCALE_DEFAULTS, progress: (line: string) => void = () => {}) {
  const arrivals = new Map<string, string[]>();
  const receiver = await startReceiver(undefined, (id, request) => {
    const endpoint = (request.url ?? '').split('/').at(-1) ?? '';
    arrivals.set(id, [...(arrivals.get(id) ?? []), endpoint]);
  });
  const endpoints = scaleEndpoints(count, receiver.url);
  progress(`[${count} endpoints] starting the sandbox`);
  const startedAt = performance.now();
  const sandbox = await startSandboxProcess({ endpoints });
  try {
    const readySeconds = (performance.now() - startedAt) / 1000;
    progress(`[${count} endpoints] READY in ${f1(readySeconds)} s; settling ${options.settleSeconds} s, then idle for ${options.idleSeconds} s`);
    await sleep(options.settleSeconds * 1000);
    const cpuBefore = groupCpuSeconds(sandbox.child.pid!);
    await sleep(options.idleSeconds * 1000);
    const idleCpuSeconds = groupCpuSeconds(sandbox.child.pid!) - cpuBefore;

    // Events spread over the endpoints, each for one of them.
    const picks = Array.from({ length: options.events }, (_, k) => Math.floor((k * count) / options.events));
    const expected = new Map(picks.map((i, k) => [`scale-${count}-${k}`, `merchant-${i}`]));
    const clients = new SandboxClients(sandbox.ready);
    const sentAt = performance.now();
    await clients.sendAll([...expected].map(([id], k) => eventFor(picks[k]!, id)));
    while (receiver.applied.size < expected.size && performance.now() - sentAt < 60_000) await sleep(100);
    const deliveredSeconds = (performance.now() - sentAt) / 1000;
    let right = 0;
    for (const [id, endpoint] of expected) if (arrivals.get(id)?.length === 1 && arrivals.get(id)![0] === endpoint) right += 1;
    const wrong = [...arrivals].filter(([id, at]) => at.some((endpoint) => endpoint !== expected.get(id))).length;
    progress(`[${count} endpoints] ${right} of ${expected.size} delivered right in ${f1(deliveredSeconds)} s; stopping`);
    return { endpoints: count, readySeconds, idleCpuSeconds, idleSeconds: options.idleSeconds, events: expected.size, right, wrong, deliveredSeconds };
  } finally {
    await sandbox.stop();
    await receiver.close();
  }
}

/** Each size in turn (never at once: the machine's two cores would blur both). */
export async function runSandboxScale(options: SandboxScaleOptions = SANDBOX_SCALE_DEFAULTS, progress: (line: string) => void = () => {}) {
  const runs: SandboxScaleRun[] = [];
  for (const count of options.sizes) runs.push(await runSandboxAt(count, options, progress));
  return runs;
}

/** The largest sandbox's idle CPU over the smallest's. Pure. */
export function idleCpuRatio(runs: readonly SandboxScaleRun[]): number {
  const small = runs[0];
  const large = runs.at(-1);
  return small && large && small.idleCpuSeconds > 0 ? large.idleCpuSeconds / small.idleCpuSeconds : Number.NaN;
}

export function sandboxScaleMarkdown(runs: readonly SandboxScaleRun[]): string {
  const ratio = idleCpuRatio(runs);
  const largest = runs.at(-1);
  const rows = runs.map((run) => [
    run.endpoints.toLocaleString('en-US'),
    f1(run.readySeconds),
    `${f2(run.idleCpuSeconds)} over ${run.idleSeconds} s`,
    `${run.right} of ${run.events}${run.wrong > 0 ? `, ${run.wrong} wrong` : ''}`,
    f1(run.deliveredSeconds),
  ]);
  return [
    ...table(['endpoints', 'READY (s)', 'idle CPU (s)', 'delivered to the right endpoint only', 'all delivered within (s)'], rows),
    '',
    `Idle CPU, ${largest?.endpoints.toLocaleString('en-US')} endpoints over ${runs[0]?.endpoints}: ${f2(ratio)}x (target ≤ ${SANDBOX_SCALE_TARGETS.idleCpuRatio}x: ${ratio <= SANDBOX_SCALE_TARGETS.idleCpuRatio ? 'met' : 'NOT met'}); READY at ${largest?.endpoints.toLocaleString('en-US')}: ${f1(largest?.readySeconds ?? Number.NaN)} s (target < ${SANDBOX_SCALE_TARGETS.readySeconds} s: ${(largest?.readySeconds ?? Infinity) < SANDBOX_SCALE_TARGETS.readySeconds ? 'met' : 'NOT met'}).`,
  ].join('\n');
}
