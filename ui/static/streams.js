// Streams: read a stream by path from an offset, or tail it live.
// The user types a stream path (or lists the paths under a prefix with
// herald streams ls, which reads GET /_herald/v1/streams).
import {readStream, tailStream} from './api.js';
import {h, clear, add, empty, errorBox, field, pretty} from './dom.js';

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
    h('p', {class: 'muted'}, 'Type a stream\'s path to read it from an offset, or tail it to watch appends arrive.'),
    form, status, out];
}
