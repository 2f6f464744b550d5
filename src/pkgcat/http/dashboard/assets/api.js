// The public API, as the dashboard calls it: same origin, the key in an Authorization header.
//
// The key lives in this tab's sessionStorage only: never in a URL, a cookie or the server.

const STORAGE_KEY = "pkgcat.secretKey";
const PAGE = 100; // the API's largest page: the fewest requests for a walk

export const key = {
  get: () => sessionStorage.getItem(STORAGE_KEY),
  set: (value) => sessionStorage.setItem(STORAGE_KEY, value),
  clear: () => sessionStorage.removeItem(STORAGE_KEY),
};

/** Why a call failed: "key" (refused), "rate" (429), "down" (unreachable or 503), or "request". */
export class ApiError extends Error {
  constructor(kind, message, { code = null, retryAfter = null } = {}) {
    super(message);
    this.kind = kind;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

const limitListeners = [];

/** Calls ``listener({limit, remaining, reset, window})`` after each answer that carries the rate
 * limit (``window``: seconds, ``null`` from a server that does not say). */
export function onLimits(listener) {
  limitListeners.push(listener);
}

function readLimits(headers) {
  const limit = headers.get("ratelimit-limit");
  if (limit === null) return;
  // "3600;w=3600": the limit, and the seconds its window lasts.
  const window = /;\s*w=(\d+)/.exec(headers.get("ratelimit-policy") ?? "");
  const found = {
    limit: Number(limit),
    remaining: Number(headers.get("ratelimit-remaining")),
    reset: Number(headers.get("ratelimit-reset")),
    window: window ? Number(window[1]) : null,
  };
  for (const listener of limitListeners) listener(found);
}

/** A server message as a sentence: "secret_key: not a valid secret key" becomes
 * "not a valid secret key." (the parameter it names is the key, which the reader knows). */
function sentence(message) {
  const text = String(message ?? "").replace(/^[A-Za-z_]+: /, "").trim();
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** GET /1.0/<operation>.json with ``params``; the envelope's ``response``, or an ApiError. */
export async function call(operation, params = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined) query.set(name, String(value));
  }
  return exchange(`/1.0/${operation}.json?${query}`, {});
}

/** A new Idempotency-Key: 128 random bits as hex (available outside secure contexts too). */
function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `dashboard-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** POST /1.0/<operation>.json with ``fields`` as a JSON body, under a fresh Idempotency-Key;
 * the envelope's ``response``, or an ApiError. */
export async function send(operation, fields) {
  return exchange(`/1.0/${operation}.json`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Idempotency-Key": idempotencyKey() },
    body: JSON.stringify(fields),
  });
}

async function exchange(path, init) {
  const secret = key.get();
  if (!secret) throw new ApiError("key", "Sign in with your secret key.");
  let answer;
  try {
    answer = await fetch(path, {
      ...init,
      headers: { ...(init.headers ?? {}), Authorization: `Bearer ${secret}` },
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new ApiError("down", "The server cannot be reached. Check that it runs, then retry.");
  }
  readLimits(answer.headers);
  const retryAfter = Number(answer.headers.get("retry-after")) || null;
  let body = null;
  try {
    body = await answer.json();
  } catch {
    // a proxy's error page, or an empty answer: judged by its status below
  }
  if (body !== null && body.code === 0) return body.response;
  const message = body && typeof body.response === "string" ? body.response : answer.statusText;
  const code = body ? body.code : null;
  if (answer.status === 429 || code === 13) {
    throw new ApiError("rate", `Rate limited: ${message}`, { code, retryAfter });
  }
  if (answer.status === 401 || code === 5) {
    throw new ApiError("key", `This key was refused: ${sentence(message)}`, { code });
  }
  if (answer.status === 503 || answer.status === 502 || answer.status === 504) {
    throw new ApiError("down", `The service is unavailable for now: ${message}`, {
      code,
      retryAfter,
    });
  }
  throw new ApiError("request", message || `HTTP ${answer.status}`, { code });
}

/**
 * Every item of a cursor list: the pages of ``operation`` walked to the end.
 * ``field`` names the list in the response; ``onPage(response)`` sees each page. A
 * ``cursor`` in ``params`` (buyers' ``""``: cursor mode from the newest) starts the walk.
 */
export async function walk(operation, params, field, onPage = () => {}) {
  const items = [];
  let query = { ...params, limit: PAGE };
  for (;;) {
    const page = await call(operation, query);
    items.push(...page[field]);
    onPage(page);
    if (!page.has_more || !page.cursor) return items;
    query = { ...query, cursor: page.cursor };
  }
}
