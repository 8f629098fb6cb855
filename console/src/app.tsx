/** The console's frame: the header (pages, the caller), and the page the path names. */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { apiClient } from './api.js';
import type { Auth } from './auth.js';
import { Link, navigate, useLocation } from './views/common.js';
import { EvalsPage } from './views/evals.js';
import { ReviewPage } from './views/review.js';
import { RunPage } from './views/run.js';
import { RunsPage } from './views/runs.js';
import { SchedulesPage } from './views/schedules.js';
import { SignInPage } from './views/sign-in.js';

type Page = { kind: 'runs' } | { kind: 'run'; runId: string } | { kind: 'review' } | { kind: 'schedules' } | { kind: 'evals' } | { kind: 'sign-in' } | { kind: 'missing' };

function pageOf(path: string): Page {
  const pathname = path.split('#')[0] ?? '';
  if (pathname === '/console/' || pathname === '/console') return { kind: 'runs' };
  if (pathname === '/console/review') return { kind: 'review' };
  if (pathname === '/console/schedules') return { kind: 'schedules' };
  if (pathname === '/console/evals') return { kind: 'evals' };
  if (pathname === '/console/sign-in') return { kind: 'sign-in' };
  const run = /^\/console\/runs\/([^/]+)$/.exec(pathname);
  if (run?.[1]) return { kind: 'run', runId: decodeURIComponent(run[1]) };
  return { kind: 'missing' };
}

export function App({ auth, signInError }: { auth: Auth; signInError?: string }) {
  const path = useLocation();
  const [, setVersion] = useState(0);
  useEffect(() => auth.subscribe(() => setVersion((v) => v + 1)), [auth]);
  const api = useMemo(
    () =>
      apiClient({
        authorization: () => auth.authorization(),
        onUnauthenticated: () => {
          auth.signOut();
          navigate('/console/sign-in');
        },
      }),
    [auth],
  );
  const caller = auth.caller();
  const page = caller ? pageOf(path) : { kind: 'sign-in' as const };

  // Moves focus to the new page's heading, so keyboard and screen reader users start there.
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const heading = main.current?.querySelector('h1');
    if (heading instanceof HTMLElement) heading.focus();
    else main.current?.focus();
  }, [page.kind, page.kind === 'run' ? page.runId : '']);

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/console/" class="brand">
          Stepwise
        </Link>
        <nav aria-label="Pages">
          <ul>
            <li>
              <Link href="/console/" aria-current={page.kind === 'runs' ? 'page' : undefined}>
                Runs
              </Link>
            </li>
            <li>
              <Link href="/console/review" aria-current={page.kind === 'review' ? 'page' : undefined}>
                Review
              </Link>
            </li>
            <li>
              <Link href="/console/schedules" aria-current={page.kind === 'schedules' ? 'page' : undefined}>
                Schedules
              </Link>
            </li>
            <li>
              <Link href="/console/evals" aria-current={page.kind === 'evals' ? 'page' : undefined}>
                Evals
              </Link>
            </li>
          </ul>
        </nav>
        <div class="caller">
          {caller ? (
            <>
              <span>
                Signed in as <strong>{caller.name}</strong>
                {caller.tenant ? ` (${caller.tenant})` : ''}
                {caller.scopes.length ? ` · ${caller.scopes.join(', ')}` : ''}
              </span>{' '}
              <Link href="/console/sign-in">{auth.config.auth === 'local' ? 'Switch caller' : 'Account'}</Link>
            </>
          ) : (
            <span>Not signed in</span>
          )}
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {page.kind === 'runs' && <RunsPage api={api} config={auth.config} />}
        {page.kind === 'run' && <RunPage key={page.runId} api={api} runId={page.runId} />}
        {page.kind === 'review' && <ReviewPage api={api} />}
        {page.kind === 'schedules' && <SchedulesPage api={api} />}
        {page.kind === 'evals' && <EvalsPage api={api} />}
        {page.kind === 'sign-in' && <SignInPage auth={auth} {...(signInError ? { error: signInError } : {})} />}
        {page.kind === 'missing' && (
          <>
            <h1 tabIndex={-1}>Not found</h1>
            <p>
              This page does not exist. <Link href="/console/">See your runs.</Link>
            </p>
          </>
        )}
      </main>
    </>
  );
}
