/** Shared pieces of the console: the hash router, the view context, and small components. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, type Whoami } from './api';
import { formatInZone, relative, shortInZone, viewerZone } from './format';

/** What every view knows: who is signed in, and the tenant chosen (null: all, for an admin). */
export interface Ctx {
  readonly me: Whoami;
  readonly tenant: string | null;
}

export interface Route {
  readonly parts: string[];
  readonly params: URLSearchParams;
}

function parseHash(): Route {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = raw.split('?');
  return {
    parts: path.split('/').filter(Boolean).map(decodeURIComponent),
    params: new URLSearchParams(query),
  };
}

/** The current hash route, re-rendered on navigation. */
export function useRoute(): Route {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const on = () => setRoute(parseHash());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** Goes to a console path such as `/jobs/nightly`. */
export function navigate(path: string): void {
  location.hash = `#${path}`;
}

/** `#/jobs/<id>` with the id encoded. */
export const jobHref = (jobId: string): string => `#/jobs/${encodeURIComponent(jobId)}`;

/** A time in the job's zone and the viewer's, with how far away it is. */
export function When(props: { iso: string | null | undefined; zone?: string; compact?: boolean }) {
  if (!props.iso) return <span class="muted">—</span>;
  const zone = props.zone ?? 'UTC';
  const mine = viewerZone();
  return (
    <span class="when">
      <time dateTime={props.iso} title={props.iso}>
        {formatInZone(props.iso, zone, !props.compact)} <span class="zone">{zone}</span>
      </time>
      {mine !== zone && (
        <span class="muted small" title={`${formatInZone(props.iso, mine)} ${mine}`}>
          {' '}
          · {shortInZone(props.iso, mine)} yours
        </span>
      )}
      <span class="rel"> {relative(props.iso)}</span>
    </span>
  );
}

const STATUS_CLASS: Record<string, string> = {
  SCHEDULED: 'ok',
  SUCCEEDED: 'ok',
  FIRED: 'ok',
  PAUSED: 'warn',
  RETRYING: 'warn',
  RUNNING: 'info',
  COMPLETED: 'muted',
  SKIPPED: 'warn',
  COALESCED: 'warn',
  DEFERRED: 'warn',
  DEAD_LETTERED: 'bad',
  LATE: 'warn',
  MISSED: 'bad',
};

/** A status as a coloured word (never colour alone: the word is always there). */
export function Badge(props: { value: string | null | undefined }) {
  if (!props.value) return <span class="muted">—</span>;
  return <span class={`badge ${STATUS_CLASS[props.value] ?? 'muted'}`}>{props.value}</span>;
}

/** An error box with the API's message and violations. */
export function ErrorBox(props: { error: unknown }) {
  if (!props.error) return null;
  return (
    <div class="error-box" role="alert">
      {describeError(props.error)}
    </div>
  );
}

/** A modal confirmation (the native dialog: focus is trapped and Escape cancels). */
export function Confirm(props: {
  open: boolean;
  title: string;
  children?: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} onCancel={props.onCancel} aria-labelledby="confirm-title">
      <h2 id="confirm-title">{props.title}</h2>
      {props.children}
      <div class="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class={props.danger ? 'danger' : 'primary'} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** Loads something when its key changes; `reload` loads again. */
export function useLoad<T>(
  load: () => Promise<T>,
  key: unknown[],
): {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
} {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    load()
      .then((d) => {
        if (!live) return;
        setData(d);
        setError(null);
      })
      .catch((e: unknown) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [...key, tick]);
  return { data, error, loading, reload: () => setTick((t) => t + 1) };
}

/** A transient message for the outcome of an action. */
export function Notice(props: { text: string | null; kind?: 'ok' | 'bad' }) {
  if (!props.text) return null;
  return (
    <p class={`notice ${props.kind ?? 'ok'}`} role="status">
      {props.text}
    </p>
  );
}

/** Puts text on the clipboard; falls back to a selected textarea where the Clipboard API is unavailable (plain http). */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('the browser refused to copy');
}

/** A run's trace id, in full (to search a tracing backend for it), with a button that copies it. */
export function TraceId(props: { id: string | null | undefined }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  if (!props.id)
    return (
      <span class="muted" title="this fire was not traced, or its fire log row was purged">
        —
      </span>
    );
  const id = props.id;
  return (
    <span class="trace-id">
      <code>{id}</code>{' '}
      <button
        type="button"
        class="copy"
        aria-label={`Copy trace id ${id}`}
        onClick={() =>
          copyText(id).then(
            () => setState('copied'),
            () => setState('failed'),
          )
        }
      >
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : 'Copy'}
      </button>
    </span>
  );
}
