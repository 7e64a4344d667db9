/**
 * `npm run soak`: the chaos soak. Sends N events through the sandbox with a receiver fault mix
 * (timeouts after commit, 5xx, 429, connection resets, slow answers), a duplicate SendMessage for
 * 10% of them and random SIGKILLs of consumer workers, shows a progress bar on stderr, then
 * prints the invariants on stdout. Exit status: 0 when they all hold, 1 otherwise, 2 for usage.
 *
 * `--endpoints 3` routes the events to three endpoints (an endpoints file: overlapping event types
 * and a data.carrier match, so an event goes to 0 to 3 of them), each its own receiver, secret and
 * faults, and checks the invariants per (event, endpoint).
 *
 *   npm run soak                           # 2,000 events, seed 1, one endpoint
 *   npm run soak -- --events 20000 --seed 7
 *   npm run soak -- --endpoints 3 --events 20000
 *   npm run soak -- --endpoints 3 --outage       # acme-ops goes down, is disabled, parks, is enabled
 *
 * `--outage` (with `--endpoints 3`): acme-ops's receiver goes down once a tenth of the deliveries are
 * final (a 429 pausing it, then 503s), long enough for the consumers to disable it (its endpoints
 * file entry shortens autoDisable to 60 s and 5 failures); its deliveries park; once it is back the
 * soak runs `handoff endpoint enable acme-ops` against the sandbox and waits for the releases. Kills
 * go on throughout. Its invariants: no attempt while paused, disabled or parked, and nothing of it
 * dead-lettered that was planned to be delivered.
 *
 *   npm run soak -- --endpoints 3 --ordered --events 1000   # acme-ops ordered per shipment
 *
 * `--ordered` (with `--endpoints 3`, not with `--outage`): acme-ops is ordered per shipment (onDead
 * continue, docs/contract.md §13); events come in shipments of 5 with one carrier each, every other
 * shipment sent to the ordered (FIFO) intake, grouped by shipment. Kills as without. Its invariants,
 * per shipment at acme-ops with the rows' sequence as admission order: no request for an event
 * before every earlier-admitted one was answered 2xx (or died and passed its turn on), every request's
 * webhook-sequence is its row's, a shipment's sequences are exactly 1..n, and the FIFO intake's
 * numbers follow its send order.
 *
 * The ordered soak's producers also get things wrong (test/helpers/soak/plan.ts): 1 message in 10
 * carries handoff's control attributes unsealed (an `endpoint` it is not routed to, `sequence=1` with
 * `inTurn=true` or another `sequence` at acme-ops, a `notBefore` slot in 2100, `recoveries=99`), on
 * both intakes; and 1 shipment in 50 (at least one) is sent, before some of its own events, a message
 * reusing an earlier acme shipment's event ID with other content. A forged message must be treated
 * as the same message without attributes (every invariant above, and its own check); a reused ID must
 * be dead-lettered `identity-conflict` at each of the original's endpoints and reach no receiver, the
 * original's rows unchanged, and its shipment's own events delivered in order: their sequences may
 * skip the number the conflict gave up, increasing and accepted in that order.
 */
import { Presets, SingleBar } from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { defaultKills, defaultTimeoutMs, ENDPOINT_MODES, formatReport, runSoak, type EndpointMode } from '../test/helpers/soak/run';

const MAX_EVENTS = 20_000;

function whole(min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new InvalidArgumentError(`a whole number from ${min} to ${max}`);
    }
    return Number(raw);
  };
}

const program = new Command('soak')
  .description('chaos soak of handoff through the local sandbox; prints the invariants')
  .option('--events <n>', `events to send (up to ${MAX_EVENTS})`, whole(1, MAX_EVENTS), 2_000)
  .option(
    '--endpoints <n>',
    `${ENDPOINT_MODES.join(' or ')}: the single-URL settings, or three endpoints with overlapping subscriptions`,
    (raw: string): EndpointMode => {
      const mode = ENDPOINT_MODES.find((m) => String(m) === raw);
      if (mode === undefined) throw new InvalidArgumentError(`${ENDPOINT_MODES.join(' or ')}`);
      return mode;
    },
    1 as EndpointMode,
  )
  .option('--outage', 'with --endpoints 3: an outage of acme-ops long enough to disable it, then enable it', false)
  .option('--ordered', 'with --endpoints 3: acme-ops ordered per shipment, shipments of 5 events over both intakes, forged control attributes and reused IDs', false)
  .option('--seed <n>', 'seed of the fault plan (same seed, same plan)', whole(0, 2 ** 31 - 1), 1)
  .option('--kills <n>', 'worker SIGKILLs during the run (default: events / 100, at least 3; with --outage, until the run ends)', whole(0, 100_000))
  .option('--timeout-seconds <n>', 'give up after this long and list what is not final', whole(10, 86_400))
  .option('--sandbox-log <file>', "write the sandbox's log (every consumer decision and warning) to this file at the end")
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2))
  .parse();

const options = program.opts<{ events: number; endpoints: EndpointMode; outage: boolean; ordered: boolean; seed: number; kills?: number; timeoutSeconds?: number; sandboxLog?: string }>();
if (options.outage && options.endpoints !== 3) {
  process.stderr.write('soak: --outage needs --endpoints 3\n');
  process.exit(2);
}
if (options.ordered && options.endpoints !== 3) {
  process.stderr.write('soak: --ordered needs --endpoints 3\n');
  process.exit(2);
}
if (options.ordered && options.outage) {
  process.stderr.write('soak: --ordered and --outage are separate runs: give one of them\n');
  process.exit(2);
}
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const bar = new SingleBar(
  {
    stream: process.stderr,
    format: 'soak |{bar}| {value}/{total} deliveries final | sent {sent}/{messages} | kills {kills} | {duration_formatted}',
    hideCursor: true,
    // Without a terminal (a log file), a line every 30 s.
    noTTYOutput: true,
    notTTYSchedule: 30_000,
  },
  Presets.shades_classic,
);
bar.start(options.events, 0, { sent: 0, messages: 0, kills: 0 });

const report = await runSoak({
  events: options.events,
  endpoints: options.endpoints,
  outage: options.outage,
  ordered: options.ordered,
  seed: options.seed,
  ...(options.kills !== undefined || !options.outage ? { kills: options.kills ?? defaultKills(options.events) } : {}),
  ...(options.sandboxLog !== undefined ? { sandboxLogFile: options.sandboxLog } : {}),
  timeoutMs: (options.timeoutSeconds ?? defaultTimeoutMs(options.events, options.outage) / 1000) * 1000,
  onProgress: (p) => {
    if (bar.getTotal() !== p.deliveries) bar.setTotal(p.deliveries);
    bar.update(p.final, { sent: p.sent, messages: p.messages, kills: p.kills });
  },
}).finally(() => bar.stop());

process.stdout.write(`${formatReport(report)}\n`);
process.exitCode = report.ok ? 0 : 1;
