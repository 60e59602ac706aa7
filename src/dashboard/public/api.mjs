/**
 * Calls to the OpenTinker API with the user's key as a bearer header. Works in browsers and in Node
 * (fetch only), so it is tested against a real server.
 */

/** An API failure: the server's stable error `code` (`OT_ERR_…`), or `NETWORK` when it was unreachable. */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** Turns a non-2xx response into an {@link ApiError}, keeping the server's code and field. */
export async function errorFromResponse(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const code = typeof body?.code === 'string' ? body.code : `HTTP_${res.status}`;
  const message = typeof body?.message === 'string' ? body.message : `${res.status} ${res.statusText}`.trim();
  return new ApiError(res.status, code, message, body?.field);
}

/**
 * A client bound to one key.
 *
 * @example
 * const api = createApi({ key: 'otk_…' });
 * const me = await api.get('/v1/users/me');
 * await api.post(`/v1/jobs/${id}/cancel`);
 */
export function createApi({ key, baseUrl = '', fetch: fetchImpl = globalThis.fetch.bind(globalThis), onUnauthorized } = {}) {
  const headers = (extra = {}) => ({ authorization: `Bearer ${key}`, ...extra });

  async function request(method, path, { body, accept = 'application/json', signal } = {}) {
    const init = { method, headers: headers({ accept }), signal };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetchImpl(baseUrl + path, init);
    } catch (error) {
      if (error?.name === 'AbortError') throw error;
      throw new ApiError(0, 'NETWORK', `Could not reach the server (${error?.message ?? error})`);
    }
    if (!res.ok) {
      const error = await errorFromResponse(res);
      if (res.status === 401) onUnauthorized?.(error);
      throw error;
    }
    return res;
  }

  return {
    key,
    /** Headers for calls made outside this client (the event stream). */
    headers,
    get: async (path, opts) => (await request('GET', path, opts)).json(),
    post: async (path, body, opts) => (await request('POST', path, { ...opts, body })).json(),
    del: async (path, opts) => (await request('DELETE', path, opts)).json(),
    text: async (path, opts) => (await request('GET', path, { ...opts, accept: 'text/plain' })).text(),
    /** JSON Lines as text (inference results). */
    ndjson: async (path, opts) => (await request('GET', path, { ...opts, accept: 'application/x-ndjson' })).text(),
    blob: async (path, opts) => (await request('GET', path, { ...opts, accept: 'application/octet-stream' })).blob(),
  };
}

/** A sentence for people, naming what went wrong and what to do. */
export function describeError(error) {
  if (!(error instanceof ApiError)) return String(error?.message ?? error);
  switch (error.code) {
    case 'NETWORK':
      return `${error.message}. Is it running?`;
    case 'OT_ERR_UNAUTHENTICATED':
      return `The API key was not accepted: ${error.message}`;
    case 'OT_ERR_AUTH_RATE_LIMITED':
      return `Too many failed sign-ins from this address. Wait a minute, then try again.`;
    case 'OT_ERR_FORBIDDEN':
      return `Not allowed: ${error.message}`;
    default:
      return `${error.message} (${error.code}${error.field ? `, field ${error.field}` : ''})`;
  }
}
