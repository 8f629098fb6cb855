/** Small pieces every page uses: navigation, formatting, status badges, error notes. */
import { Component, type ComponentChildren, type FunctionComponent, type JSX, h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api.js';

const listeners = new Set<() => void>();

/** Goes to a console path without reloading the page. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((listener) => listener());
}

/** The current path (and hash), redrawn on navigation and on the browser's back and forward. */
export function useLocation(): string {
  const read = () => location.pathname + location.hash;
  const [path, setPath] = useState(read);
  useEffect(() => {
    const update = () => setPath(read());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

/** A link to a console page, followed without a reload (a modified click opens a tab as usual). */
export function Link(props: JSX.HTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const { href, onClick: _ignored, ...rest } = props;
  return (
    <a
      {...rest}
      href={href}
      onClick={(event) => {
        if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(href);
      }}
    />
  );
}

export function runHref(runId: string): string {
  return `/console/runs/${encodeURIComponent(runId)}`;
}

const statusWords: Record<string, string> = {
  running: 'Running',
  succeeded: 'Succeeded',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

/** A run's status in words (never in colour alone). */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{statusWords[status] ?? status}</span>;
}

/** A count of calls waiting for a reviewer. */
export function WaitingBadge({ count }: { count: number }) {
  if (!count) return null;
  return <span class="badge waiting">{count === 1 ? '1 call waits for approval' : `${count} calls wait for approval`}</span>;
}

export function formatCost(usd: number | undefined): string {
  if (usd === undefined) return '—';
  if (usd === 0) return '$0.00';
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

export function formatTime(iso: string | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** What went wrong, in a sentence, from an API error or anything else. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.detail;
  return error instanceof Error ? error.message : String(error);
}

/** An error shown where it happened, announced to screen readers. */
export function ErrorNote({ error, children }: { error?: unknown; children?: ComponentChildren }) {
  if (error === undefined && !children) return null;
  return (
    <p class="error-note" role="alert">
      {children ?? messageOf(error)}
    </p>
  );
}

/** The value as indented JSON (text: never HTML). */
export function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Runs `tick` now and every `ms` while the page is shown; stops when the component goes. */
export function useInterval(tick: () => void, ms: number, deps: unknown[]): void {
  useEffect(() => {
    tick();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') tick();
    }, ms);
    return () => clearInterval(timer);
  }, deps);
}

/**
 * A component that redraws only when a prop changed (compared by identity): the transcript's
 * parts, whose unchanged items the fold shares from one state to the next.
 */
export function memo<P extends object>(render: FunctionComponent<P>): FunctionComponent<P> {
  class Memo extends Component<P> {
    override shouldComponentUpdate(next: P): boolean {
      const now = this.props as Record<string, unknown>;
      const then = next as Record<string, unknown>;
      return Object.keys(then).some((key) => now[key] !== then[key]) || Object.keys(now).some((key) => !(key in then));
    }
    override render() {
      return h(render, this.props);
    }
  }
  return Memo as unknown as FunctionComponent<P>;
}
