/**
 * Calling a JSON HTTP API as a client would (global fetch), for the API tests: the status, the
 * parsed body (empty when it is not JSON) and the headers.
 */
export interface JsonAnswer {
  status: number;
  json: Record<string, unknown>;
  text: string;
  headers: Headers;
}

export async function callJson(
  base: string, method: string, path: string, body?: unknown, opts: { token?: string | null; type?: string } = {},
): Promise<JsonAnswer> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (body !== undefined) headers['content-type'] = opts.type ?? 'application/json';
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON (the status page, metrics)
  }
  return { status: res.status, json, text, headers: res.headers };
}

/** Poll `probe` every 100 ms until it gives a value (bounded by `tries`). */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, tries = 300): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
