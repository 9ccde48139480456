// Herald's API as the dashboard calls it: same origin, the API key as a
// bearer header. The key lives in sessionStorage only (it ends with the
// tab) and is never logged.

const keyName = 'herald.key';

export const session = {
  key: () => sessionStorage.getItem(keyName),
  set: key => sessionStorage.setItem(keyName, key),
  clear: () => sessionStorage.removeItem(keyName),
};

// ApiError is a failed call, with a message that says what to do, and
// the input it is about (the API's error "field", '' for none), so a
// form can show it on that input.
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field || '';
  }
}

function headers(extra) {
  const out = Object.assign({}, extra);
  const key = session.key();
  if (key) out.Authorization = 'Bearer ' + key;
  return out;
}

// advice adds what the user can do to an error of the API.
function advice(status, message) {
  switch (status) {
    case 401: return message + ' — sign in again with a valid API key.';
    case 403: return message + ' — this key may not do this; ask an administrator for a key with the scope it needs.';
    case 404: return message + ' — it does not exist, was deleted, or belongs to another tenant.';
    case 429: case 503: return message + ' — Herald is busy; try again in a moment.';
  }
  return message;
}

async function failure(res) {
  const text = await res.text();
  let message = text || res.statusText || 'request failed';
  let code = String(res.status);
  let field = '';
  try {
    const e = JSON.parse(text).error;
    if (e && e.message) {
      message = e.message;
      code = e.code || code;
      field = e.field || '';
    }
  } catch {
    // not JSON: the text is the message
  }
  return new ApiError(res.status, code, advice(res.status, message), field);
}

async function send(url, init) {
  try {
    return await fetch(url, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'NETWORK', 'Herald could not be reached: check that it is running and the network is up, then try again.');
  }
}

// api calls a JSON route and returns its decoded answer (null for 204).
export async function api(method, path, body) {
  const init = {method, cache: 'no-store', headers: headers()};
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await send(path, init);
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

// whoamiOf answers GET /_herald/v1/whoami for key (not the session's),
// without keeping it: what a key would sign in as, before it does.
export async function whoamiOf(key) {
  const res = await send('/_herald/v1/whoami', {cache: 'no-store', headers: {Authorization: 'Bearer ' + key}});
  if (!res.ok) throw await failure(res);
  return res.json();
}

// query makes "?a=b&..." of the set values of params.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? '?' + s : '';
}

// streamURL escapes each segment of a stream path.
export function streamURL(path, params) {
  const clean = '/' + path.split('/').filter(s => s !== '').map(encodeURIComponent).join('/');
  return clean + query(params || {});
}

// readStream reads a stream from offset: its data as text, its content
// type, the next offset and whether that is the tail.
export async function readStream(path, offset) {
  const res = await send(streamURL(path, {offset}), {cache: 'no-store', headers: headers()});
  if (!res.ok) throw await failure(res);
  return {
    text: res.status === 204 ? '' : await res.text(),
    contentType: res.headers.get('Content-Type') || '',
    next: res.headers.get('Stream-Next-Offset'),
    upToDate: res.headers.get('Stream-Up-To-Date') === 'true',
  };
}

// streamTail answers a stream's tail, its Stream-Next-Offset, from a
// HEAD of it; null when the stream does not exist (any more).
export async function streamTail(path) {
  const res = await send(streamURL(path), {method: 'HEAD', cache: 'no-store', headers: headers()});
  if (res.status === 404) return null;
  if (!res.ok) throw await failure(res);
  return res.headers.get('Stream-Next-Offset');
}

// tailStream follows a stream live over Server-Sent Events from offset,
// calling onData(text) for each data event and onOffset(offset) after
// each, until signal aborts or the stream closes. A response Herald ends
// (it does so every --sse-max-duration) is resumed from the last offset.
export async function tailStream(path, offset, signal, onData, onOffset) {
  while (!signal.aborted) {
    const res = await send(streamURL(path, {offset, live: 'sse'}), {cache: 'no-store', headers: headers({Accept: 'text/event-stream'}), signal});
    if (!res.ok) throw await failure(res);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let closed = false;
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += value.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const ev = parseEvent(block);
        if (ev.event === 'data') onData(ev.data);
        if (ev.event === 'control') {
          const ctl = JSON.parse(ev.data);
          offset = ctl.streamNextOffset;
          onOffset(offset);
          closed = closed || ctl.streamClosed === true;
        }
      }
    }
    if (closed) return;
  }
}

// parseEvent reads one SSE event block.
function parseEvent(block) {
  let event = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const name = i < 0 ? line : line.slice(0, i);
    let val = i < 0 ? '' : line.slice(i + 1);
    if (val.startsWith(' ')) val = val.slice(1);
    if (name === 'event') event = val;
    if (name === 'data') data.push(val);
  }
  return {event, data: data.join('\n')};
}

// listAll fetches every page of a list route, at most max items.
export async function listAll(path, max) {
  const out = [];
  let cursor = '';
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await api('GET', path + sep + 'limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    out.push(...page.data);
    if (!page.next_cursor || out.length >= max) return {items: out.slice(0, max), more: Boolean(page.next_cursor)};
    cursor = page.next_cursor;
  }
}
