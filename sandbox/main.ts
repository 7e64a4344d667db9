/**
 * `npm start`: runs the sandbox until SIGINT or SIGTERM (docs/contract.md §8).
 *
 * Standard output carries exactly one line, `READY <json>`, once everything is up; the same
 * JSON goes to the state file (sandbox/state-file.ts) for the operator CLI, and is removed on
 * shutdown. Everything else (receiver and worker lines, the counters, the console's URL to open)
 * goes to standard error, each line through the terminal sanitiser (lib/terminal.ts): here, and in
 * `Display`. A console that does not build (console/build.ts) stops the start with one line saying why.
 *
 * Exit status: 0 after a clean stop, 2 for an invalid setting (one line naming the variable),
 * 1 when start-up fails otherwise.
 */
import { rmSync } from 'node:fs';
import { readSettings } from '../lib/config';
import { ConfigError } from '../lib/errors';
import { CRASH_POINTS } from '../lib/deliver';
import { quoted, safe } from '../lib/terminal';
import { Display } from './counters';
import { ENDPOINTS_FILE_ENV } from './endpoints-file';
import { startSandbox, type Sandbox } from './sandbox';
import { CRASH_AT_ENV } from './worker-environment';
import { API_PORT_ENV } from './settings';
import { sandboxStateFile, writeSandboxState } from './state-file';

/** Sandbox-only variables; the stack has no such settings. */
export const SANDBOX_ENV = {
  sqsPort: 'HANDOFF_SQS_PORT',
  dynamodbPort: 'HANDOFF_DYNAMODB_PORT',
  /** The management API's port (0 or unset: any free port; READY's apiUrl names it). */
  apiPort: API_PORT_ENV,
  /** Overrides the queue's visibility timeout (seconds) for fast local crash recovery. */
  visibilityTimeout: 'HANDOFF_VISIBILITY_TIMEOUT_SECONDS',
  /** `1`: show the consumer's own log lines, not just its decisions. */
  verbose: 'HANDOFF_SANDBOX_VERBOSE',
  /** The endpoints, as a JSON file (sandbox/endpoints-file.ts), in place of the single-URL settings. */
  endpointsFile: ENDPOINTS_FILE_ENV,
} as const;

const DEFAULT_PORTS = { sqs: 9324, dynamodb: 8000 };

function wholeNumber(name: string, min: number, max: number): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got ${quoted(raw)}`);
  }
  return Number(raw);
}

/** `<point>` or `<point>@<marker file>`, as the consumer reads it (functions/consumer.ts). */
function crashAt(): string | undefined {
  const raw = process.env[CRASH_AT_ENV];
  if (raw === undefined || raw === '') return undefined;
  const at = raw.indexOf('@');
  const point = at === -1 ? raw : raw.slice(0, at);
  if (!(CRASH_POINTS as readonly string[]).includes(point) || at === raw.length - 1) {
    throw new ConfigError(CRASH_AT_ENV, `must be one of ${CRASH_POINTS.join(', ')}, optionally @<marker file>, got ${quoted(raw)}`);
  }
  return raw;
}

/** One line, made inert: it may quote a setting's value or the endpoints file (lib/terminal.ts). */
function fail(line: string, status: number): never {
  process.stderr.write(`handoff sandbox: ${safe(line)}\n`);
  process.exit(status);
}

async function main(): Promise<void> {
  // Emulators don't need it, and the sandbox should not nag on every start.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  let settings;
  let ports;
  let visibilityTimeoutSeconds;
  let crashPoint;
  const endpointsFile = process.env[SANDBOX_ENV.endpointsFile] || undefined;
  try {
    settings = readSettings(process.env);
    ports = {
      sqs: wholeNumber(SANDBOX_ENV.sqsPort, 0, 65535) ?? DEFAULT_PORTS.sqs,
      dynamodb: wholeNumber(SANDBOX_ENV.dynamodbPort, 0, 65535) ?? DEFAULT_PORTS.dynamodb,
      api: wholeNumber(SANDBOX_ENV.apiPort, 0, 65535) ?? 0,
    };
    visibilityTimeoutSeconds = wholeNumber(SANDBOX_ENV.visibilityTimeout, 1, 43_200);
    crashPoint = crashAt();
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message, 2);
    throw error;
  }

  const display = new Display(process.stderr);
  let sandbox: Sandbox;
  try {
    sandbox = await startSandbox({
      settings,
      ...(endpointsFile !== undefined ? { endpointsFile } : {}),
      sqsPort: ports.sqs,
      dynamodbPort: ports.dynamodb,
      apiPort: ports.api,
      ...(visibilityTimeoutSeconds !== undefined ? { visibilityTimeoutSeconds } : {}),
      ...(crashPoint !== undefined ? { crashAt: crashPoint } : {}),
      verbose: process.env[SANDBOX_ENV.verbose] === '1' || process.env[SANDBOX_ENV.verbose] === 'true',
      display,
    });
  } catch (error) {
    // An endpoint the consumer would refuse, or an endpoints file that cannot be used (startSandbox
    // checks them before starting anything).
    if (error instanceof ConfigError) fail(error.message, 2);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      const port = (error as { port?: number }).port;
      fail(
        `port ${port ?? ''} on 127.0.0.1 is in use: set ${SANDBOX_ENV.sqsPort} / ${SANDBOX_ENV.dynamodbPort} / ${SANDBOX_ENV.apiPort} (0 = any free port)`,
        1,
      );
    }
    fail(`could not start: ${(error as Error).message}`, 1);
  }

  const stateFile = sandboxStateFile();
  const json = JSON.stringify(sandbox.state);
  try {
    // 0600 in the user's own 0700 directory, renamed into place: see state-file.ts.
    writeSandboxState(stateFile, sandbox.state);
  } catch (error) {
    await sandbox.stop();
    fail((error as Error).message, 1);
  }

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second signal: don't wait. Messages in flight return after their visibility timeout.
      rmSync(stateFile, { force: true });
      process.exit(130);
    }
    stopping = true;
    display.log(`${signal}: stopping (waiting for batches in flight)`);
    sandbox
      .stop()
      .catch((error: unknown) => display.log(`stop: ${(error as Error).message}`))
      .finally(() => {
        rmSync(stateFile, { force: true });
        process.exit(0);
      });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // The terminal closed: stop the same way rather than leave a stale state file behind.
  process.on('SIGHUP', stop);

  const endpoints = Object.keys(sandbox.state.receivers);
  display.log(`sandbox up: queue ${sandbox.state.queueUrl}, ordered intake ${sandbox.state.orderedQueueUrl}, endpoint${endpoints.length === 1 ? '' : 's'} ${endpoints.join(', ')}; API ${sandbox.state.apiUrl}; state in ${stateFile}`);
  // The console's URL for the person who started the sandbox: open it in a browser (its fragment
  // holds the API's token, which the page keeps and takes out of the address bar).
  display.log(`console: ${sandbox.state.consoleUrl}`);
  // The workers take OTEL_* from this shell (sandbox/worker-environment.ts): say where their spans go (docs/tracing.md).
  const otlp = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (otlp && process.env.OTEL_SDK_DISABLED !== 'true' && process.env.OTEL_TRACES_EXPORTER !== 'none') {
    // Its origin and path only: a URL's user part or query could hold a credential.
    const where = URL.canParse(otlp) ? `${new URL(otlp).origin}${new URL(otlp).pathname}` : 'a value that is not a URL';
    display.log(`tracing: spans over OTLP/HTTP to ${safe(where)}`);
  }
  process.stdout.write(`READY ${json}\n`);
}

await main();
