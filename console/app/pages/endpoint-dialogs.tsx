/**
 * The dialogs of one endpoint's actions (pages/endpoint.tsx): Disable (asks a reason), Enable (a
 * reason and the parked deliveries' release rate), Rotate secret (the overlap, and the signature
 * scheme to move to), Remove.
 */
import { useState } from 'preact/hooks';
import type { EndpointWithSecret } from '../../../api/client/types';
import { api, endpointPath } from '../api';
import { FormDialog, ReasonDialog } from '../components/dialog';
import { FieldMessages } from '../components/notes';
import { formatCount } from '../format';
import { useActionKeys } from '../hooks';
import { navigate } from '../routes';

export function DisableDialog({ name, onClose, onDone }: { name: string; onClose: () => void; onDone: (text: string) => void }) {
  const keyFor = useActionKeys();
  return (
    <ReasonDialog
      title={`Disable ${name}`}
      confirmLabel="Disable"
      onClose={onClose}
      onConfirm={async (reason) => {
        const body = { reason };
        await api.post(endpointPath(name, 'disable'), body, { idempotencyKey: keyFor(body) });
        onDone(`${name} is disabled: its deliveries are parked until it is enabled.`);
      }}
    >
      <p>New deliveries to it are parked, not sent, until it is enabled again. The reason is kept with it, and who disabled it.</p>
    </ReasonDialog>
  );
}

export function EnableDialog({ name, parked, onClose, onDone }: { name: string; parked: number | null; onClose: () => void; onDone: (text: string) => void }) {
  const [reason, setReason] = useState('');
  const [rate, setRate] = useState('');
  const keyFor = useActionKeys();
  return (
    <FormDialog
      title={`Enable ${name}`}
      confirmLabel="Enable"
      onClose={onClose}
      onConfirm={async () => {
        const body: Record<string, unknown> = {};
        if (reason.trim() !== '') body.reason = reason.trim();
        if (rate.trim() !== '') body.rate = Number(rate);
        await api.post(endpointPath(name, 'enable'), body, { idempotencyKey: keyFor(body) });
        onDone(`${name} is enabled${parked !== null && parked > 0 ? `: its ${formatCount(parked)} parked deliveries are being released` : ''}.`);
      }}
    >
      {(error) => (
        <>
          <p>
            Deliveries to it start again.{' '}
            {parked !== null && parked > 0 ? `Its ${formatCount(parked)} parked deliveries are released, ramping up to the rate below.` : ''}
          </p>
          <label>
            Reason (optional)
            <textarea name="reason" rows={2} value={reason} onInput={(e) => setReason(e.currentTarget.value)} aria-describedby="enable-reason-error" />
            <FieldMessages error={error} path="reason" id="enable-reason-error" />
          </label>
          <label>
            Release rate, parked deliveries a second (empty: the API's default)
            <input name="rate" type="number" inputMode="numeric" value={rate} onInput={(e) => setRate(e.currentTarget.value)} aria-describedby="enable-rate-error" />
            <FieldMessages error={error} path="rate" id="enable-rate-error" />
          </label>
        </>
      )}
    </FormDialog>
  );
}

const SCHEMES = [
  { value: 'hmac-sha256', label: 'HMAC-SHA256 (v1, a whsec_ secret)' },
  { value: 'ed25519', label: 'ed25519 (v1a, a key pair: the receiver verifies with its public key)' },
] as const;

export function RotateDialog({
  name,
  signature,
  onClose,
  onRotated,
}: {
  name: string;
  /** The scheme the endpoint signs with now. */
  signature: 'hmac-sha256' | 'ed25519';
  onClose: () => void;
  onRotated: (answer: EndpointWithSecret) => void;
}) {
  const [overlap, setOverlap] = useState('');
  const [scheme, setScheme] = useState<string>(signature);
  const keyFor = useActionKeys();
  return (
    <FormDialog
      title={`Rotate the secret of ${name}`}
      confirmLabel="Rotate secret"
      onClose={onClose}
      onConfirm={async () => {
        // The scheme only when it changes: the API then moves the endpoint to it, both signing through the overlap.
        const body = { ...(overlap.trim() === '' ? {} : { overlapSeconds: Number(overlap) }), ...(scheme !== signature ? { signature: scheme } : {}) };
        onRotated(await api.post<EndpointWithSecret>(endpointPath(name, 'rotate-secret'), body, { idempotencyKey: keyFor(body) }));
      }}
    >
      {(error) => (
        <>
          <p>A new signing secret replaces the current one, and is shown once. During the overlap the old secret signs each request too, so the receiver can switch without refusing any.</p>
          <label>
            Overlap in seconds (empty: 24 hours; 0: switch at once)
            <input
              name="overlapSeconds"
              type="number"
              inputMode="numeric"
              value={overlap}
              onInput={(e) => setOverlap(e.currentTarget.value)}
              aria-describedby="rotate-overlap-error"
            />
            <FieldMessages error={error} path="overlapSeconds" id="rotate-overlap-error" />
          </label>
          <label>
            Signature scheme of the new secret
            <select name="signature" value={scheme} onChange={(e) => setScheme(e.currentTarget.value)} aria-describedby="rotate-signature-error">
              {SCHEMES.map((option) => (
                <option key={option.value} value={option.value}>
                  {option.label}
                  {option.value === signature ? ' — as now' : ''}
                </option>
              ))}
            </select>
            <FieldMessages error={error} path="signature" id="rotate-signature-error" />
          </label>
        </>
      )}
    </FormDialog>
  );
}

export function RemoveDialog({ name, onClose }: { name: string; onClose: () => void }) {
  return (
    <FormDialog
      title={`Remove ${name}`}
      confirmLabel="Remove"
      danger
      onClose={onClose}
      onConfirm={async () => {
        await api.delete(endpointPath(name));
        navigate('#/endpoints');
      }}
    >
      {() => (
        <p>
          New events are no longer routed to <strong>{name}</strong>. Its deliveries' rows are kept until they expire. This cannot be undone
          (an endpoint of the same name can be added again).
        </p>
      )}
    </FormDialog>
  );
}
