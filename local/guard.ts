/**
 * The local server's front check (docs/callers-and-security.md, "Callers on your machine"): it
 * answers on loopback without a token as the caller `local`, so a web page the developer visits
 * must not reach it. A request whose `Host` is not a loopback name (or one the developer named in
 * `STEPWISE_LOCAL_HOSTS`) is refused, which defeats DNS rebinding; a state-changing request must be
 * JSON, which a cross-site form cannot send and a cross-site `fetch` sends only after a CORS
 * preflight this server never grants.
 */

/** The methods that change nothing; every other one must carry a JSON body type. */
const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/** `localhost`, a name under `.localhost`, 127.0.0.0/8 and `[::1]`, with any port. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]';
}

/** The hostname of a `Host` header (port and case dropped), or undefined when it is not one. */
function hostnameOf(host: string): string | undefined {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/** The extra host names `STEPWISE_LOCAL_HOSTS` allows (comma-separated), lower-cased. */
export function localHostsOf(value: string | undefined): string[] {
  return (value ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
}

function refusal(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}

/** The refusal of a request the local server must not serve, or undefined to serve it. */
export function refuseLocally(request: Request, extraHosts: readonly string[] = []): Response | undefined {
  const host = request.headers.get('host') ?? '';
  const hostname = hostnameOf(host);
  if (!hostname || !(isLoopback(hostname) || extraHosts.includes(hostname))) {
    return refusal(
      403,
      'Forbidden',
      `The local server answers only requests for localhost, not "${host || '(no Host)'}"; add the name to STEPWISE_LOCAL_HOSTS to allow it.`,
    );
  }
  if (!safeMethods.has(request.method) && !/^application\/json\b/i.test(request.headers.get('content-type') ?? '')) {
    return refusal(415, 'UnsupportedMediaType', `A ${request.method} to the local server is JSON: send "Content-Type: application/json" (with "{}" when there is nothing to say).`);
  }
  return undefined;
}
