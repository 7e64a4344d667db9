/**
 * `handoff endpoint rotate-secret` (docs/contract.md §12): a new signing secret, printed once when
 * generated; the old one keeps signing beside it for the overlap. The new one is of the endpoint's
 * signature scheme, or of the one `--signature` names, which the endpoint then signs with (§18): an
 * HMAC secret rotated to an ed25519 key pair signs `v1a` and `v1` through the overlap. The registry
 * stores the new one encrypted, as `add` does (cli/context.ts `encryptSecret`), so a stored secret is
 * compared with one given only while it is plain.
 */
import type { EndpointRecord } from '../../lib/endpoints/endpoint';
import { generateSecret } from '../../lib/endpoints/secret';
import { SIGNATURE_SCHEMES, type SignatureScheme } from '../../lib/webhook/signing-secret';
import { quoted } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import { formatDuration, formatInstant } from '../format';
import { checkFields, checkName, parkedAfterWrite, registryCall, requireEndpoint } from './endpoint-common';
import { endpointJson, overlapEnd } from './endpoint-view';
import { secretShownLines } from './endpoint-write';
import type { CommandResult } from './result';

export interface RotateOptions {
  readonly secret?: string;
  /** How long the old secret keeps signing (`--overlap`): `0`, or a number and s, m, h or d. Default 24h. */
  readonly overlap?: string;
  /** The scheme the new secret is of, and the endpoint signs with from now (`--signature`); default: the endpoint's. */
  readonly signature?: string;
}

/** How long both secrets sign after `rotate-secret` unless `--overlap` says otherwise, and the longest allowed. */
export const DEFAULT_OVERLAP = '24h';
export const MAX_OVERLAP_MS = 7 * 24 * 60 * 60 * 1000;
const OVERLAP_UNITS_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A new secret, printed once when generated; the old one keeps signing beside it for the overlap
 * (`--overlap`, default 24h; `0`: it stops at once). One conditional update of the fields, so a
 * concurrent change is refused, not lost.
 */
export async function endpointRotateSecretCommand(ctx: CommandContext, name: string, options: RotateOptions): Promise<CommandResult> {
  checkName(name);
  const overlapMs = parseOverlap(options.overlap ?? DEFAULT_OVERLAP);
  const signature = options.signature === undefined ? undefined : parseSignature(options.signature);
  const nowMs = ctx.now();
  const rotated = await rotateEndpointSecret(
    ctx,
    name,
    { ...(options.secret !== undefined ? { secret: options.secret } : {}), ...(signature !== undefined ? { signature } : {}), overlapMs },
    nowMs,
  );
  const { record, hadSecret, overlapUntil, dropped, parked } = rotated;
  const shown = options.secret === undefined ? rotated.secret : undefined;
  const what = !hadSecret
    ? `set a signing secret for endpoint ${name}: its requests were unsigned until now`
    : overlapUntil === undefined
      ? `rotated the signing secret of endpoint ${name}: the old one no longer signs`
      : `rotated the signing secret of endpoint ${name}: until ${formatInstant(overlapUntil, nowMs)} each request is signed with both the new and the old secret, then with the new one only`;
  return {
    json: {
      ...endpointJson(record, nowMs, parked),
      rotated: true,
      ...(shown !== undefined ? { generatedSecret: shown } : {}),
    },
    human: [
      what,
      ...(dropped ? ['the secret before the old one, still in its own overlap, no longer signs'] : []),
      ...(shown !== undefined ? ['', ...secretShownLines(shown, record.fields.publicKey)] : []),
    ].join('\n'),
  };
}

/** What a rotation did: the endpoint as written, its new secret (plain: the caller shows it once, or not), and the overlap. */
export interface Rotation {
  readonly record: EndpointRecord;
  /** The new signing secret, as given or generated (the registry holds it encrypted). */
  readonly secret: string;
  /** Whether it had a secret before (else its requests were unsigned until now). */
  readonly hadSecret: boolean;
  /** Until when the old secret signs beside the new one (epoch ms); undefined: it stopped at once. */
  readonly overlapUntil: number | undefined;
  /** A rotation during an overlap: the secret before the one replaced stopped signing now. */
  readonly dropped: boolean;
  readonly parked: number | null;
}

/**
 * A new signing secret (`endpoint rotate-secret`, `POST /v1/endpoints/{name}/rotate-secret`): the
 * one given, or a generated one of `signature` (default: the endpoint's scheme), which the endpoint
 * signs with from now; the old one keeps signing beside it for `overlapMs` (0: it stops at once),
 * whatever its scheme. One conditional update of the fields, so a concurrent change is refused, not lost.
 * @throws CommandFailedError (endpoint-not-found, secret-in-secrets-manager, endpoint-conflict);
 * UsageError when the secret given is the current one
 */
export async function rotateEndpointSecret(
  ctx: CommandContext,
  name: string,
  options: { readonly secret?: string; readonly signature?: SignatureScheme; readonly overlapMs: number },
  nowMs: number,
): Promise<Rotation> {
  const current = await requireEndpoint(ctx, name);
  const old = current.fields.secret;
  if (old !== undefined && old.startsWith('arn:')) {
    throw new CommandFailedError(
      `endpoint ${name}'s secret is kept in Secrets Manager (its ARN is in the registry): rotate it there`,
      'secret-in-secrets-manager',
    );
  }
  if (options.secret !== undefined && options.secret === old) throw new UsageError('--secret is the secret the endpoint has now: give a new one, or none to generate one');
  const signature = options.signature ?? current.fields.signature;
  const secret = options.secret ?? generateSecret(signature);
  // The old key's public key goes with it: the new secret's is set from it (lib/endpoints/endpoint.ts).
  const { previousSecret: _previous, previousSecretUntil: _until, publicKey: _publicKey, signature: _signature, ...rest } = current.fields;
  const overlapUntil = old !== undefined && options.overlapMs > 0 ? nowMs + options.overlapMs : undefined;
  const raw: Record<string, unknown> = {
    ...rest,
    secret,
    ...(signature !== undefined ? { signature } : {}),
    ...(overlapUntil !== undefined ? { previousSecret: old, previousSecretUntil: overlapUntil } : {}),
  };
  const { fields } = checkFields(raw, ctx.target, nowMs, current);
  const record = await registryCall(ctx, (registry) => registry.update(fields, current.updatedAt, nowMs));
  const dropped = overlapEnd(current.fields, nowMs) !== undefined;
  return { record, secret, hadSecret: old !== undefined, overlapUntil, dropped, parked: await parkedAfterWrite(ctx, name) };
}

/** `--signature`: one of the schemes. @throws UsageError naming them */
export function parseSignature(text: string): SignatureScheme {
  if (!(SIGNATURE_SCHEMES as readonly string[]).includes(text)) throw new UsageError(`--signature ${quoted(text.slice(0, 40))}: one of ${SIGNATURE_SCHEMES.join(', ')}`);
  return text as SignatureScheme;
}

/**
 * `--overlap`: `0`, or a whole number and a unit, s m h or d, up to 7d. @throws UsageError saying how to write it
 */
export function parseOverlap(text: string): number {
  const match = /^(\d{1,9})([smhd])?$/.exec(text.trim());
  const problem = (why: string) => new UsageError(`--overlap ${quoted(text.slice(0, 40))}: ${why}`);
  if (match === null) throw problem('write a whole number and a unit, s, m, h or d (e.g. 24h, 90m), or 0 to switch at once');
  const amount = Number(match[1]);
  const unit = match[2] as keyof typeof OVERLAP_UNITS_MS | undefined;
  if (unit === undefined && amount !== 0) throw problem('give a unit, s, m, h or d (e.g. 24h), or 0 to switch at once');
  const ms = amount * (unit === undefined ? 0 : OVERLAP_UNITS_MS[unit]);
  if (ms > MAX_OVERLAP_MS) throw problem(`at most 7d, got ${formatDuration(ms)}`);
  return ms;
}
