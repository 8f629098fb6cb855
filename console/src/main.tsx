/**
 * The Stepwise console (docs/console.md, "How it is built"): reads its settings, finishes an
 * OpenID sign-in when it lands on the callback path, and draws the page the path names.
 */
import './styles.css';
import { render } from 'preact';
import { App } from './app.js';
import { callbackPath, createAuth } from './auth.js';
import { parseConfig } from './config.js';

async function start(root: HTMLElement): Promise<void> {
  const res = await fetch('/console/config.json', { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`The console's settings (config.json) could not be read: ${res.status}.`);
  const auth = createAuth(parseConfig(await res.json()));
  let signInError: string | undefined;
  if (location.pathname === callbackPath) {
    try {
      history.replaceState(null, '', await auth.completeOidc());
    } catch (error) {
      signInError = error instanceof Error ? error.message : String(error);
      history.replaceState(null, '', '/console/sign-in');
    }
  }
  render(<App auth={auth} {...(signInError ? { signInError } : {})} />, root);
}

const root = document.getElementById('app');
if (root) {
  start(root).catch((error: unknown) => {
    const p = document.createElement('p');
    p.setAttribute('role', 'alert');
    p.textContent = error instanceof Error ? error.message : String(error);
    root.replaceChildren(p);
  });
}
