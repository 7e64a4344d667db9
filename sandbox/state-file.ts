/**
 * Where a running sandbox says how to reach it. `npm start` writes its READY object here and
 * removes the file on shutdown; the operator CLI reads it to find the sandbox's endpoints.
 *
 * The CLI sends events and replays to whatever the file names, so the file is trusted only when
 * nobody else could have written it: it lives in a directory of the user's own (0700), is written
 * 0600 and whole (renamed into place), and is refused when another user owns it or its directory,
 * when either is writable by group or others, or when any endpoint in it is not on loopback.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { deploymentFromJson, type DeploymentSettingsJson } from '../lib/endpoints/endpoint';
import { LOCAL_KEY_BYTES } from '../lib/endpoints/secret-cipher';

/**
 * The region and credentials of every client aimed at the sandbox (its own, the consumer's, the
 * CLI's): the emulators accept any credentials, but the SDK still wants some.
 */
export const SANDBOX_REGION = 'us-east-1';
export const SANDBOX_CREDENTIALS = { accessKeyId: 'sandbox', secretAccessKey: 'sandbox' } as const;

/** The READY object: printed as `READY <json>` on stdout and written to the state file. */
export interface SandboxState {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  /**
   * Where SQS's redrive moves a delivery-queue message the consumer kept failing on, for recovery to
   * send back (docs/contract.md §12). Absent in the state file of a sandbox started before it.
   */
  readonly redriveQueueUrl?: string;
  /**
   * The ordered intake's FIFO queue (docs/contract.md §13; `handoff send --ordered` sends there).
   * Absent in the state file of a sandbox started before it: that command then says so.
   */
  readonly orderedQueueUrl?: string;
  readonly ledgerTable: string;
  /** The demo receiver's URL, or the configured `HANDOFF_WEBHOOK_URL`. */
  readonly receiverUrl: string;
  /** The largest message body the sandbox's consumer accepts (`HANDOFF_PAYLOAD_LIMIT_BYTES`). */
  readonly payloadLimitBytes: number;
  /**
   * The endpoint registry's table (docs/contract.md §11). Absent in the state file of a sandbox
   * started before the registry: the endpoint commands then say the target names no registry.
   */
  readonly endpointsTable?: string;
  /** The settings an endpoint's defaults and limits come from (`deploymentToJson`); absent as above. */
  readonly deployment?: DeploymentSettingsJson;
  /**
   * The key that seals the sandbox's own messages (lib/queue/seal.ts), drawn at start: the CLI's
   * replays and releases are sealed with it. Absent in the state file of a sandbox started before it.
   */
  readonly sealKey?: string;
  /**
   * The key the sandbox's endpoint secrets are encrypted with in its registry (`encrypted:local:…`,
   * lib/endpoints/secret-cipher.ts), drawn at start: `handoff endpoint add` and `rotate-secret`
   * encrypt with it, the workers decrypt. Absent in the state file of a sandbox started before it.
   */
  readonly secretsKey?: string;
  /**
   * The management API's URL (docs/contract.md §16) on loopback: `http://127.0.0.1:<port>`
   * (sandbox/api-server.ts). Absent in the state file of a sandbox started before the API.
   */
  readonly apiUrl?: string;
  /**
   * The bearer token the sandbox's API takes (`Authorization: Bearer <apiToken>`), drawn at each
   * start: kept here (0600) and in READY only, never logged. Absent as `apiUrl` is.
   */
  readonly apiToken?: string;
  /**
   * The console's URL (docs/contract.md §17), `<apiUrl>/console/#token=<apiToken>`: on loopback, the
   * token in its fragment. Absent in the state file of a sandbox started before the console.
   */
  readonly consoleUrl?: string;
}

/** The fields whose URLs the CLI connects to, or that name where its messages go: loopback only. */
const LOOPBACK_FIELDS = ['sqsEndpoint', 'dynamodbEndpoint', 'queueUrl', 'deadLetterQueueUrl'] as const;
const STRING_FIELDS = [...LOOPBACK_FIELDS, 'ledgerTable', 'receiverUrl'] as const;

/** A state file that is not to be used: refused for who could have written it, or malformed. */
export class SandboxStateError extends Error {
  override readonly name = 'SandboxStateError';
  constructor(
    readonly code: 'sandbox-state-untrusted' | 'sandbox-state-invalid',
    readonly path: string,
    problem: string,
    options?: ErrorOptions,
  ) {
    super(`the sandbox state file ${path} ${problem}`, options);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The user's own directory for the state file: `$XDG_RUNTIME_DIR/handoff` where the session has
 * one (already private to the user), else `handoff-<uid>` in the OS temp directory.
 */
export function sandboxStateDirectory(env: Env = process.env, uid: number | undefined = currentUid()): string {
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && isAbsolute(runtime)) return join(runtime, 'handoff');
  return join(tmpdir(), `handoff-${uid ?? userInfo().username}`);
}

/** `HANDOFF_SANDBOX_FILE`, else `sandbox.json` in `sandboxStateDirectory`. */
export function sandboxStateFile(env: Env = process.env): string {
  return env.HANDOFF_SANDBOX_FILE || join(sandboxStateDirectory(env), 'sandbox.json');
}

/**
 * Writes the state file 0600, whole (a reader never sees half a file), creating its directory
 * 0700 when missing. @throws SandboxStateError when the directory is not the user's alone
 */
export function writeSandboxState(path: string, state: SandboxState, uid: number | undefined = currentUid()): void {
  const directory = dirname(path);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  if (uid !== undefined) refuseUntrusted(path, 'directory', statSync(directory), uid);
  const temporary = join(directory, `.${basename(path)}.${process.pid}.tmp`);
  rmSync(temporary, { force: true });
  writeFileSync(temporary, `${JSON.stringify(state)}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(temporary, path);
}

export function removeSandboxState(path: string): void {
  rmSync(path, { force: true });
}

/**
 * The running sandbox's state, or undefined when no sandbox has written one (no file).
 * @throws SandboxStateError when the file may not be trusted or does not hold a sandbox's state
 */
export function readSandboxState(path: string = sandboxStateFile(), uid: number | undefined = currentUid()): SandboxState | undefined {
  let fd: number;
  try {
    // Not through a symbolic link: the checks below must be about the file actually read.
    fd = openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new SandboxStateError('sandbox-state-untrusted', path, 'is refused: it is a symbolic link');
    throw new SandboxStateError('sandbox-state-invalid', path, `cannot be read (${code ?? (error as Error).message})`, { cause: error });
  }
  let text: string;
  try {
    if (uid !== undefined) {
      refuseUntrusted(path, 'file', fstatSync(fd), uid);
      refuseUntrusted(path, 'directory', statSync(dirname(path)), uid);
    }
    text = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  return parseSandboxState(path, text);
}

/** What `fs.stat` says of a file or directory, as far as trusting it goes. */
export interface Ownership {
  readonly uid: number;
  readonly mode: number;
  isFile(): boolean;
  isDirectory(): boolean;
}

/**
 * Why the state file (or its directory) may not be trusted by user `uid`, or undefined when only
 * that user could have written it: owned by them, of the expected kind, and not writable by group
 * or others.
 */
export function untrustedBecause(kind: 'file' | 'directory', stat: Ownership, uid: number): string | undefined {
  const isKind = kind === 'file' ? stat.isFile() : stat.isDirectory();
  if (!isKind) return kind === 'file' ? 'is not a regular file' : 'is not in a directory';
  const subject = kind === 'file' ? 'it' : 'its directory';
  if (stat.uid !== uid) return `is refused: ${subject} is owned by uid ${stat.uid}, not by you (uid ${uid})`;
  const writers = [stat.mode & 0o020 ? 'group' : '', stat.mode & 0o002 ? 'others' : ''].filter(Boolean);
  if (writers.length > 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(3, '0');
    return `is refused: ${subject} is writable by ${writers.join(' and ')} (mode ${mode}; want ${kind === 'file' ? '600' : '700'})`;
  }
  return undefined;
}

/**
 * Whether a URL's host is this machine's loopback: 127.0.0.0/8, ::1, `localhost` or a name under
 * `.localhost` (which resolves to loopback, RFC 6761; the SQS emulator's queue URLs use one).
 */
export function isLoopbackUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host === '[::1]') return true;
  // The URL parser has already written any IPv4 form (127.1, 0x7f.0.0.1) as four decimals.
  return isIPv4(host) && host.startsWith('127.');
}

/** Checks the state file's content: every field present, every endpoint on loopback. */
export function parseSandboxState(path: string, text: string): SandboxState {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SandboxStateError('sandbox-state-invalid', path, 'is not JSON', { cause: error });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new SandboxStateError('sandbox-state-invalid', path, 'is not a JSON object');
  }
  const fields = json as Record<string, unknown>;
  for (const name of STRING_FIELDS) {
    const value = fields[name];
    if (typeof value !== 'string' || value === '') throw new SandboxStateError('sandbox-state-invalid', path, `has no ${name}`);
  }
  for (const name of LOOPBACK_FIELDS) {
    if (!isLoopbackUrl(fields[name] as string)) {
      throw new SandboxStateError(
        'sandbox-state-untrusted',
        path,
        `is refused: its ${name} is not on loopback (127.0.0.0/8, ::1, localhost), where the sandbox listens`,
      );
    }
  }
  const limit = fields.payloadLimitBytes;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) {
    throw new SandboxStateError('sandbox-state-invalid', path, 'has no payloadLimitBytes (a whole number of bytes)');
  }
  const orderedQueueUrl = optionalQueueUrl(fields, 'orderedQueueUrl', path);
  const redriveQueueUrl = optionalQueueUrl(fields, 'redriveQueueUrl', path);
  const endpointsTable = fields.endpointsTable;
  if (endpointsTable !== undefined && (typeof endpointsTable !== 'string' || endpointsTable === '')) {
    throw new SandboxStateError('sandbox-state-invalid', path, 'has an endpointsTable that is not a table name');
  }
  const deployment = fields.deployment;
  if (deployment !== undefined) {
    try {
      deploymentFromJson(deployment, 'its deployment');
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      throw new SandboxStateError('sandbox-state-invalid', path, `has a deployment that ${error.message.replace(/^its deployment /, '')}`, { cause: error });
    }
  }
  const sealKey = fields.sealKey;
  if (sealKey !== undefined && (typeof sealKey !== 'string' || sealKey === '')) {
    throw new SandboxStateError('sandbox-state-invalid', path, 'has a sealKey that is not a key');
  }
  const secretsKey = fields.secretsKey;
  if (secretsKey !== undefined && (typeof secretsKey !== 'string' || Buffer.from(secretsKey, 'base64').length !== LOCAL_KEY_BYTES)) {
    throw new SandboxStateError('sandbox-state-invalid', path, `has a secretsKey that is not a key (${LOCAL_KEY_BYTES} bytes, base64)`);
  }
  const apiUrl = fields.apiUrl;
  if (apiUrl !== undefined && (typeof apiUrl !== 'string' || !isLoopbackUrl(apiUrl))) {
    throw new SandboxStateError('sandbox-state-untrusted', path, 'is refused: its apiUrl is not on loopback (127.0.0.0/8, ::1, localhost), where the sandbox listens');
  }
  const apiToken = fields.apiToken;
  if (apiToken !== undefined && (typeof apiToken !== 'string' || apiToken === '')) {
    throw new SandboxStateError('sandbox-state-invalid', path, 'has an apiToken that is not a token');
  }
  const consoleUrl = fields.consoleUrl;
  if (consoleUrl !== undefined && (typeof consoleUrl !== 'string' || !isLoopbackUrl(consoleUrl))) {
    throw new SandboxStateError('sandbox-state-untrusted', path, 'is refused: its consoleUrl is not on loopback (127.0.0.0/8, ::1, localhost), where the sandbox listens');
  }
  const state: SandboxState = {
    sqsEndpoint: fields.sqsEndpoint as string,
    dynamodbEndpoint: fields.dynamodbEndpoint as string,
    queueUrl: fields.queueUrl as string,
    deadLetterQueueUrl: fields.deadLetterQueueUrl as string,
    ...(redriveQueueUrl !== undefined ? { redriveQueueUrl } : {}),
    ...(orderedQueueUrl !== undefined ? { orderedQueueUrl } : {}),
    ledgerTable: fields.ledgerTable as string,
    receiverUrl: fields.receiverUrl as string,
    payloadLimitBytes: limit,
    ...(endpointsTable !== undefined ? { endpointsTable } : {}),
    ...(deployment !== undefined ? { deployment: deployment as DeploymentSettingsJson } : {}),
    ...(sealKey !== undefined ? { sealKey } : {}),
    ...(secretsKey !== undefined ? { secretsKey } : {}),
    ...(apiUrl !== undefined ? { apiUrl: apiUrl as string } : {}),
    ...(apiToken !== undefined ? { apiToken: apiToken as string } : {}),
    ...(consoleUrl !== undefined ? { consoleUrl: consoleUrl as string } : {}),
  };
  return state;
}

/** A queue URL field a state file written by an older sandbox may lack; on loopback when present. */
function optionalQueueUrl(fields: Record<string, unknown>, name: 'orderedQueueUrl' | 'redriveQueueUrl', path: string): string | undefined {
  const url = fields[name];
  if (url === undefined) return undefined;
  if (typeof url !== 'string' || url === '') {
    throw new SandboxStateError('sandbox-state-invalid', path, `has an ${name} that is not a queue URL`);
  }
  if (!isLoopbackUrl(url)) {
    throw new SandboxStateError('sandbox-state-untrusted', path, `is refused: its ${name} is not on loopback (127.0.0.0/8, ::1, localhost), where the sandbox listens`);
  }
  return url;
}

function refuseUntrusted(path: string, kind: 'file' | 'directory', stat: Ownership, uid: number): void {
  const problem = untrustedBecause(kind, stat, uid);
  if (problem) throw new SandboxStateError('sandbox-state-untrusted', path, problem);
}

/** The process's uid; undefined where the platform has none (Windows), where modes mean little. */
function currentUid(): number | undefined {
  return process.getuid?.();
}
