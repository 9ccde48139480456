// Streams: list the streams under a path prefix, read a stream by path
// from an offset, or tail it live.
import {api, query, readStream, tailStream} from './api.js';
import {h, clear, add, empty, errorBox, field, pretty, pagedTable, time} from './dom.js';

// browse lists the streams under a prefix from GET /_herald/v1/streams, a
// page at a time, from the moment the view opens (under / when no prefix
// is given); each path opens the stream in the reader below it.
function browse(ctx) {
  const prefix = h('input', {type: 'text', name: 'prefix', id: 'stream-prefix', placeholder: '/ (every stream)', value: ctx.params.get('prefix') || '', spellcheck: 'false'});
  const out = h('div', {id: 'stream-browse'});
  let seq = 0; // the latest listing: an earlier one that answers later is dropped
  const list = async () => {
    const p = prefix.value.trim() || '/';
    const mine = ++seq;
    clear(out, h('p', {class: 'muted', role: 'status'}, 'Loading…'));
    try {
      const table = await pagedTable({
        id: 'stream-list',
        caption: `Streams under ${p}`,
        headers: ['Path', 'Content type', 'Next offset', 'Closed', 'Created', 'Expires'],
        emptyText: `No stream under ${p}. Check the prefix: it is matched from the start of the path.`,
        fetchPage: cursor => api('GET', '/_herald/v1/streams' + query({prefix: p, limit: 100, cursor})),
        cells: s => [h('a', {href: '#/streams' + query({path: s.path, prefix: p}), class: 'mono'}, s.path),
          h('td', {class: 'mono'}, s.content_type), h('td', {class: 'mono'}, s.next_offset),
          s.closed ? 'closed' : 'open', time(s.created_at), s.expires_at ? time(s.expires_at) : 'never'],
      });
      if (mine === seq && !ctx.signal.aborted) clear(out, table);
    } catch (e) {
      if (e.name !== 'AbortError' && mine === seq) clear(out, errorBox(e));
    }
  };
  const form = h('form', {class: 'inline', id: 'stream-browse-form'},
    field('Path prefix', prefix, true), h('button', {type: 'submit', class: 'primary'}, 'List streams'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    list();
  });
  // The view opens with the streams under the prefix, every stream when
  // none is given, rather than empty until asked.
  queueMicrotask(list);
  return [form, out];
}

// messages splits what a read returned into the entries to show: each
// message of a JSON stream pretty-printed, else the text as it is.
function messages(text, json) {
  if (!json) return text ? [text] : [];
  try {
    const v = JSON.parse(text);
    return Array.isArray(v) ? v.map(m => JSON.stringify(m, null, 2)) : [pretty(text)];
  } catch {
    return [text];
  }
}

export function streams(ctx) {
  const path = h('input', {type: 'text', name: 'path', placeholder: '/orders/eu', required: true, value: ctx.params.get('path') || '', spellcheck: 'false'});
  const offset = h('input', {type: 'text', name: 'offset', value: ctx.params.get('offset') || '-1', spellcheck: 'false'});
  const status = h('p', {class: 'muted', role: 'status', id: 'stream-status'});
  const out = h('ol', {class: 'feed', id: 'stream-out', 'aria-live': 'polite'});
  const tailBtn = h('button', {type: 'button', id: 'tail'}, 'Tail live');
  let tail = null; // the live tail's AbortController
  ctx.signal.addEventListener('abort', () => tail && tail.abort());

  const show = (text, json) => {
    for (const m of messages(text, json)) add(out, h('li', null, h('pre', null, m)));
  };
  const stopTail = () => {
    if (tail) tail.abort();
    tail = null;
    tailBtn.textContent = 'Tail live';
  };
  const failed = e => {
    stopTail();
    clear(status, errorBox(e));
  };

  const read = async from => {
    stopTail();
    const p = path.value.trim();
    clear(status, 'Reading…');
    try {
      const r = await readStream(p, from);
      if (from === offset.value) clear(out);
      show(r.text, r.contentType.includes('json'));
      offset.value = r.next || offset.value;
      clear(status, `Read up to offset ${r.next}. `, r.upToDate ? 'This is the end of the stream.' : h('button', {type: 'button', onclick: () => read(offset.value)}, 'Read more'));
      if (!out.children.length) add(out, h('li', null, empty('The stream has no data after this offset. Tail it live to see new data as it is appended.')));
    } catch (e) {
      failed(e);
    }
  };

  tailBtn.addEventListener('click', async () => {
    if (tail) {
      stopTail();
      clear(status, 'Stopped tailing.');
      return;
    }
    if (!path.reportValidity()) return;
    tail = new AbortController();
    tailBtn.textContent = 'Stop tailing';
    clear(out);
    clear(status, 'Tailing live: new data appears below as it is appended.');
    const mine = tail;
    try {
      await tailStream(path.value.trim(), offset.value || '-1', mine.signal,
        data => show(data, data.startsWith('[')),
        next => { offset.value = next; });
      if (tail === mine) {
        stopTail();
        clear(status, 'The stream is closed: nothing more will be appended.');
      }
    } catch (e) {
      if (e.name !== 'AbortError' && tail === mine) failed(e);
    }
  });

  const form = h('form', {class: 'inline', id: 'stream-form'},
    field('Stream path', path, true), field('From offset (-1: the start)', offset),
    h('button', {type: 'submit', class: 'primary'}, 'Read'), tailBtn);
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    read(offset.value);
  });
  if (path.value) queueMicrotask(() => read(offset.value));
  return [h('h1', null, 'Streams'),
    h('p', {class: 'muted'}, 'List the streams under a path prefix and pick one, or type a stream\'s path to read it from an offset, or tail it to watch appends arrive.'),
    browse(ctx), h('h2', null, 'Read a stream'), form, status, out];
}
