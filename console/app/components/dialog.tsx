/**
 * Modal dialogs on the browser's own `<dialog>`: it keeps focus inside, Escape closes it, and focus
 * returns to what opened it. An action that changes something asks here first (a reason, a
 * confirmation); a secret is shown here once.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
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
 * Asks for a reason (the audit keeps it), then runs `onConfirm(reason)`. A failure stays in the
 * dialog with the API's message; success closes it.
 */
export function ReasonDialog(props: {
  title: string;
  children?: ComponentChildren;
  confirmLabel: string;
  onConfirm: (reason: string) => Promise<void>;
  onClose: () => void;
}) {
  const [reason, setReason] = useState('');
  const [error, setError] = useState<Error | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (reason.trim() === '') {
      setError(new Error('A reason is required: it is kept in the audit.'));
      return;
    }
    setBusy(true);
    try {
      await props.onConfirm(reason.trim());
      props.onClose();
    } catch (failure) {
      setError(failure instanceof Error ? failure : new Error(String(failure)));
      setBusy(false);
    }
  };
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <form onSubmit={submit}>
        {props.children}
        <label>
          Reason
          <textarea name="reason" required rows={3} value={reason} onInput={(e) => setReason(e.currentTarget.value)} autofocus />
        </label>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
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

/** A value shown once (a new secret): selectable, copyable, gone when the dialog closes. */
export function ShownOnce({ title, label, value, onClose }: { title: string; label: string; value: string; onClose: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <Dialog title={title} onClose={onClose}>
      <p>This is the only time it is shown. Keep it where your receiver reads its secret.</p>
      <label>
        {label}
        <input class="secret" readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
      </label>
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
