/** The Tickwork console: sign-in, the shell (navigation, tenant switch, auth banner) and the hash router. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, describeError, session, type Whoami } from './api';
import { viewerZone } from './format';
import { navigate, useRoute, type Ctx } from './ui';
import { ClusterView } from './views/cluster';
import { DeadLettersView } from './views/dead-letters';
import { EditView } from './views/edit';
import { JobView } from './views/job';
import { JobsView } from './views/jobs';
import { LatenessView } from './views/lateness';

const TENANT_KEY = 'tickwork.tenant';

function SignIn(props: { onSignedIn: (w: Whoami) => void; reason: string | null }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(props.reason);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { body } = await call<Whoami>('GET', '/v1/whoami', { token });
      session.token = token;
      props.onSignedIn(body);
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'That token is not known to the API.'
          : describeError(err),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form onSubmit={submit} class="card" aria-labelledby="signin-title">
        <h1 id="signin-title">Tickwork console</h1>
        <p>Sign in with an API bearer token (the same tokens the REST and gRPC APIs take).</p>
        <label for="token">API token</label>
        <input
          id="token"
          type="password"
          autocomplete="current-password"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          required
        />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
        <p class="hint">
          The token is kept for this browser tab only (sessionStorage) and sent as Authorization: Bearer.
        </p>
      </form>
    </main>
  );
}

function Shell(props: { me: Whoami; onSignOut: () => void }) {
  const { me } = props;
  const route = useRoute();
  const [tenant, setTenant] = useState<string>(
    me.role === 'admin' ? (sessionStorage.getItem(TENANT_KEY) ?? '') : (me.tenant_id ?? ''),
  );
  const [tenantDraft, setTenantDraft] = useState(tenant);
  const ctx: Ctx = { me, tenant: tenant || null };
  const chooseTenant = (t: string) => {
    sessionStorage.setItem(TENANT_KEY, t);
    setTenant(t);
  };
  const nav = [
    ['jobs', 'Jobs'],
    ['new', 'New job'],
    ['dead-letters', 'Dead letters'],
    ['lateness', 'Lateness'],
    ...(me.role === 'admin' ? [['cluster', 'Cluster']] : []),
  ] as const;
  const section = route.parts[0] ?? 'jobs';
  let view;
  if (section === 'jobs' && route.parts[1] && route.parts[2] === 'edit')
    view = <EditView ctx={ctx} jobId={route.parts[1]} />;
  else if (section === 'jobs' && route.parts[1]) view = <JobView ctx={ctx} jobId={route.parts[1]} />;
  else if (section === 'new') view = <EditView ctx={ctx} />;
  else if (section === 'dead-letters') view = <DeadLettersView ctx={ctx} />;
  else if (section === 'cluster') view = <ClusterView ctx={ctx} />;
  else if (section === 'lateness') view = <LatenessView ctx={ctx} params={route.params} />;
  else view = <JobsView ctx={ctx} params={route.params} />;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      {me.auth === 'off' && (
        <div class="banner" role="alert">
          AUTH IS OFF: no API tokens are configured, so every caller is an anonymous ADMIN that sees every
          tenant. Fine on a laptop; configure TICKWORK_TENANTS_FILE anywhere else.
        </div>
      )}
      <header class="top">
        <a class="brand" href="#/jobs">
          Tickwork
        </a>
        <nav aria-label="Main">
          {nav.map(([id, label]) => (
            <a key={id} href={`#/${id}`} aria-current={section === id ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <div class="who">
          {me.role === 'admin' ? (
            <form
              class="tenant-switch"
              onSubmit={(e) => {
                e.preventDefault();
                chooseTenant(tenantDraft.trim());
              }}
            >
              <label for="tenant-switch">Tenant</label>
              <input
                id="tenant-switch"
                list="known-tenants"
                placeholder="all tenants"
                value={tenantDraft}
                onInput={(e) => setTenantDraft(e.currentTarget.value)}
                onChange={(e) => chooseTenant(e.currentTarget.value.trim())}
              />
              <datalist id="known-tenants">
                {me.known_tenants.map((t) => (
                  <option key={t} value={t} />
                ))}
              </datalist>
            </form>
          ) : (
            <span>
              tenant <strong>{me.tenant_id}</strong>
            </span>
          )}
          <span class="actor" title="times marked 'yours' are in this zone">
            your zone {viewerZone()}
          </span>
          <span class="actor" title="signed in as">
            {me.actor} · {me.role}
          </span>
          {me.auth === 'required' && (
            <button type="button" onClick={props.onSignOut}>
              Sign out
            </button>
          )}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {view}
      </main>
    </>
  );
}

function App() {
  const [me, setMe] = useState<Whoami | null>(null);
  const [state, setState] = useState<'loading' | 'signin' | 'ready' | 'down'>('loading');
  const [reason, setReason] = useState<string | null>(null);
  useEffect(() => {
    // With auth off, whoami answers without a token: the console opens as the anonymous admin.
    call<Whoami>('GET', '/v1/whoami')
      .then(({ body }) => {
        setMe(body);
        setState('ready');
      })
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 401) {
          if (session.token) setReason('Your token was refused; sign in again.');
          session.token = null;
          setState('signin');
        } else {
          setReason(describeError(e));
          setState('down');
        }
      });
  }, []);
  if (state === 'loading') return <p class="loading">Loading…</p>;
  if (state === 'down')
    return (
      <main class="signin">
        <div class="card" role="alert">
          <h1>The API is not answering</h1>
          <p>{reason}</p>
        </div>
      </main>
    );
  if (state === 'signin' || !me)
    return (
      <SignIn
        reason={reason}
        onSignedIn={(w) => {
          setMe(w);
          setState('ready');
          if (!location.hash) navigate('/jobs');
        }}
      />
    );
  return (
    <Shell
      me={me}
      onSignOut={() => {
        session.token = null;
        sessionStorage.removeItem(TENANT_KEY);
        setMe(null);
        setReason(null);
        setState('signin');
      }}
    />
  );
}

render(<App />, document.getElementById('app')!);
