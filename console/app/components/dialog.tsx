/**
 * Modal dialogs on the browser's own `<dialog>`: it keeps focus inside, Escape closes it, and focus
 * returns to what opened it. An action that changes something asks here first (a reason, a
 * confirmation, its fields); a secret is shown here once.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useSubmit } from '../hooks';
import { ErrorNote } from './notes';

export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog !== null && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" onClose={onClose} onCancel={onClose}>
      <h2 id="dialog-title">{title}</h2>
      {children}
    </dialog>
  );
}

/**
 * A dialog whose form runs one request (`onConfirm`): busy while it runs, closed when it succeeds,
 * and on failure the API's problem shown in it, each field's messages placed by `children(error)`.
 * The form is `novalidate` unless `browserChecks`: the API is the one rule for what it takes.
 */
export function FormDialog(props: {
  title: string;
  confirmLabel: string;
  danger?: boolean;
  browserChecks?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  children: (error: Error | undefined) => ComponentChildren;
}) {
  const { busy, error, submit } = useSubmit();
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <form
        onSubmit={submit(async () => {
          await props.onConfirm();
          props.onClose();
        })}
        noValidate={props.browserChecks !== true}
      >
        {props.children(error)}
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class={props.danger === true ? 'danger' : 'primary'} disabled={busy}>
            {props.confirmLabel}
          </button>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/**
 * Asks for a reason (the audit keeps it), then runs `onConfirm(reason)`. A failure stays in the
 * dialog with the API's message; success closes it.
 */
export function ReasonDialog(props: {
  title: string;
  children?: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: (reason: string) => Promise<void>;
  onClose: () => void;
}) {
  const [reason, setReason] = useState('');
  return (
    <FormDialog
      title={props.title}
      confirmLabel={props.confirmLabel}
      {...(props.danger === undefined ? {} : { danger: props.danger })}
      browserChecks
      onClose={props.onClose}
      onConfirm={async () => {
        if (reason.trim() === '') throw new Error('A reason is required: it is kept in the audit.');
        await props.onConfirm(reason.trim());
      }}
    >
      {() => (
        <>
          {props.children}
          <label>
            Reason
            <textarea name="reason" required rows={3} value={reason} onInput={(e) => setReason(e.currentTarget.value)} autofocus />
          </label>
        </>
      )}
    </FormDialog>
  );
}

/**
 * A value shown once (a new secret): selectable, copyable, gone when the dialog closes. An ed25519
 * key comes with its public key, which is what the receiver keeps (the endpoint's page shows it).
 */
export function ShownOnce(props: { title: string; label: string; value: string; publicKey?: string | null | undefined; onClose: () => void }) {
  const { title, label, value, onClose } = props;
  const publicKey = typeof props.publicKey === 'string' ? props.publicKey : undefined;
  const [copied, setCopied] = useState(false);
  return (
    <Dialog title={title} onClose={onClose}>
      {publicKey === undefined ? (
        <p>This is the only time it is shown. Keep it where your receiver reads its secret.</p>
      ) : (
        <p>
          This is the only time the key is shown: handoff signs with it. Your receiver verifies with the public key, which the endpoint's
          page keeps showing.
        </p>
      )}
      <label>
        {label}
        <input class="secret" readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
      </label>
      {publicKey !== undefined ? (
        <label>
          Public key
          <input class="secret" readOnly value={publicKey} onFocus={(e) => e.currentTarget.select()} />
        </label>
      ) : null}
      <div class="actions">
        <button
          type="button"
          onClick={() => navigator.clipboard?.writeText(value).then(() => setCopied(true), () => setCopied(false))}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" class="primary" onClick={onClose} autofocus>
          Done
        </button>
      </div>
    </Dialog>
  );
}
