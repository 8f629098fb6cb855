/**
 * Who the console acts as. Locally: the caller `local`, or any caller of the local issuer (as
 * `stepwise token` makes one). Deployed with JWT auth: sign in at the OpenID provider. With IAM
 * auth: an explanation, since a browser cannot sign requests with SigV4.
 */
import { useState } from 'preact/hooks';
import type { Auth } from '../auth.js';
import { ErrorNote, navigate } from './common.js';

export function SignInPage({ auth, error: initial }: { auth: Auth; error?: string }) {
  const caller = auth.caller();
  const [sub, setSub] = useState('');
  const [tenant, setTenant] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const [error, setError] = useState<unknown>(initial ? new Error(initial) : undefined);
  const [busy, setBusy] = useState(false);

  if (auth.config.auth === 'iam') {
    return (
      <>
        <h1 tabIndex={-1}>Sign-in is not possible here</h1>
        <p>
          This deployment's API takes only requests signed with AWS credentials (IAM auth), which a browser cannot make. Deploy with JWT
          auth to use the console (<code>stepwise:console</code> with <code>cognito</code> in <code>cdk.json</code> creates a user pool for
          it), or use the CLI and the HTTP API with your AWS credentials.
        </p>
      </>
    );
  }

  if (auth.config.auth === 'oidc') {
    const returnTo = '/console/';
    return (
      <>
        <h1 tabIndex={-1}>Sign in</h1>
        <ErrorNote error={error} />
        {caller ? (
          <>
            <p>
              Signed in as <strong>{caller.name}</strong>.
            </p>
            <button type="button" onClick={() => auth.signOut()}>
              Sign out
            </button>
          </>
        ) : (
          <>
            <p>Sign in with your organisation's account to see and start runs.</p>
            <button
              type="button"
              class="primary"
              disabled={busy}
              onClick={() => {
                setBusy(true);
                auth.signInOidc(returnTo).catch((e: unknown) => {
                  setError(e);
                  setBusy(false);
                });
              }}
            >
              Sign in
            </button>
          </>
        )}
      </>
    );
  }

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await auth.signInLocal({ sub: sub.trim(), ...(tenant.trim() ? { tenant: tenant.trim() } : {}), scopes });
      navigate('/console/');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <h1 tabIndex={-1}>Switch caller</h1>
      <p>
        You act as <strong>{caller?.name ?? 'nobody'}</strong>
        {caller?.anonymous ? ', the caller of requests without a token (a reviewer)' : ''}. Locally, the console can act as any caller of the
        local token issuer, as <code>stepwise token</code> does.
      </p>
      {caller && !caller.anonymous && (
        <p>
          <button
            type="button"
            onClick={() => {
              auth.signOut();
              navigate('/console/');
            }}
          >
            Act as local again
          </button>
        </p>
      )}
      <form class="panel" onSubmit={submit}>
        <label for="sub">Caller (subject)</label>
        <input id="sub" required pattern="\S.*" value={sub} autoComplete="username" onInput={(e) => setSub(e.currentTarget.value)} />
        <label for="tenant">Tenant (optional)</label>
        <input id="tenant" value={tenant} onInput={(e) => setTenant(e.currentTarget.value)} />
        <fieldset>
          <legend>Roles</legend>
          {[
            ['approve', 'Reviewer (approve): reads and decides the tenant’s runs'],
            ['admin', 'Admin: also cancels and lists them'],
          ].map(([scope, words]) => (
            <label class="choice" key={scope}>
              <input
                type="checkbox"
                checked={scopes.includes(scope ?? '')}
                onChange={(e) => setScopes(e.currentTarget.checked ? [...scopes, scope ?? ''] : scopes.filter((s) => s !== scope))}
              />{' '}
              {words}
            </label>
          ))}
        </fieldset>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Act as this caller
          </button>
        </div>
      </form>
    </>
  );
}
