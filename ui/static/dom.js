// DOM helpers. Everything is built with DOM APIs and text nodes: nothing
// from Herald's API is ever parsed as HTML.

// h makes an element: h('a', {href: '#/x', class: 'c', onclick: fn}, 'text', child).
// Attributes are set with setAttribute, children added as nodes or text.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  add(el, children);
  return el;
}

// add appends children (nodes, strings, numbers, nested arrays; null and
// false are skipped) to el.
export function add(el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// clear empties el and adds children.
export function clear(el, ...children) {
  el.replaceChildren();
  return add(el, children);
}

// time shows an RFC 3339 instant in the viewer's time zone.
export function time(iso) {
  if (!iso) return h('span', {class: 'muted'}, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return h('time', {datetime: iso, title: d.toISOString()}, d.toLocaleString());
}

// badge shows a status word in a colour that matches its meaning.
const tones = {
  active: 'ok', delivered: 'ok', ok: 'ok', LIVE: 'ok', IDLE: 'info',
  paused: 'warn', pending: 'info', failed: 'warn', WAKING: 'warn', deprecated: 'warn', current: 'ok',
  disabled: 'bad', exhausted: 'bad', unavailable: 'bad', closed: 'ok', open: 'bad',
};
export function badge(word) {
  return h('span', {class: 'badge ' + (tones[word] || 'info')}, word);
}

// rows makes one table row per item; cells(item) returns the row's cells
// (a td of its own, or what goes in one). Each cell carries its column's
// header as data-label: on a narrow screen a row is stacked as
// "label: value" lines (app.css), the header row being hidden.
function rows(items, cells, headers) {
  return items.map(it => h('tr', null, cells(it).map((c, i) => {
    const td = c instanceof Node && c.tagName === 'TD' ? c : h('td', null, c);
    td.dataset.label = headers[i] || '';
    return td;
  })));
}

function tableOf(caption, headers, tbody) {
  return h('div', {class: 'table-wrap'},
    h('table', null,
      h('caption', null, caption),
      h('thead', null, h('tr', null, headers.map(t => h('th', {scope: 'col'}, t)))),
      tbody));
}

// table makes an accessible table: caption, header cells with scope, and
// one row per item; cells(item) returns the row's cells.
export function table(caption, headers, items, cells) {
  return tableOf(caption, headers, h('tbody', null, rows(items, cells, headers)));
}

// pagedTable shows a list route page by page: a table of the first page
// and, while the route has a next_cursor, a "Load more" button that adds
// the next page's rows. fetchPage(cursor) answers {data, next_cursor}
// ('' for the first page). It resolves to the element, id opts.id, once
// the first page is in; emptyText is shown when there is nothing.
export async function pagedTable(opts) {
  const first = await opts.fetchPage('');
  const wrap = h('div', {id: opts.id});
  if (!first.data.length) return add(wrap, empty(opts.emptyText));
  const tbody = h('tbody', null, rows(first.data, opts.cells, opts.headers));
  const status = h('p', {class: 'muted', role: 'status', tabindex: -1});
  const more = h('button', {type: 'button', class: 'more', id: opts.id + '-more'}, 'Load more');
  const problem = h('div');
  let cursor = first.next_cursor;
  let shown = first.data.length;
  const update = () => {
    status.textContent = cursor ? `Showing the first ${shown}; there are more.` : `Showing all ${shown}.`;
    more.hidden = !cursor;
  };
  more.addEventListener('click', async () => {
    more.disabled = true;
    clear(problem);
    try {
      const page = await opts.fetchPage(cursor);
      add(tbody, rows(page.data, opts.cells, opts.headers));
      shown += page.data.length;
      cursor = page.next_cursor;
      update();
      // The button is gone with the last page: keep the keyboard's place.
      if (!cursor) status.focus();
    } catch (e) {
      clear(problem, errorBox(e));
    } finally {
      more.disabled = false;
    }
  });
  update();
  return add(wrap, [tableOf(opts.caption, opts.headers, tbody), h('div', {class: 'actions'}, status, more), problem]);
}

// empty says there is nothing to show, and what to do about it.
export function empty(message) {
  return h('p', {class: 'empty', role: 'status'}, message);
}

// errorBox shows an error and what to do about it.
export function errorBox(err) {
  return h('div', {class: 'error', role: 'alert'}, err && err.message ? err.message : String(err));
}

// field is a labelled input; input is the control (its id is set).
let fieldSeq = 0;
export function field(labelText, input, wide) {
  if (!input.id) input.id = 'f' + (++fieldSeq);
  return h('div', {class: wide ? 'field wide' : 'field'}, h('label', {for: input.id}, labelText), input);
}

// pretty formats JSON text for reading; text that is not JSON is shown as it is.
export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

// props is a definition list of [term, value] pairs.
export function props(pairs) {
  return h('dl', {class: 'props'}, pairs.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

// confirmAction asks in a modal dialog; it resolves true when confirmed.
// Escape or Cancel resolve false.
export function confirmAction(message, confirmLabel) {
  return new Promise(resolve => {
    const dlg = h('dialog', {'aria-labelledby': 'confirm-text'},
      h('p', {id: 'confirm-text'}, message),
      h('div', {class: 'actions'},
        h('button', {type: 'button', id: 'confirm-no', onclick: () => dlg.close('no')}, 'Cancel'),
        h('button', {type: 'button', id: 'confirm-yes', class: 'primary', onclick: () => dlg.close('yes')}, confirmLabel)));
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'yes');
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// copyText puts text on the clipboard: the Clipboard API where the page
// may use it (a secure context), else a selected, off-screen textarea and
// the copy command. It resolves true when the text was copied.
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // refused (no permission, no focus): try the copy command
  }
  const area = h('textarea', {readonly: true, class: 'offscreen', 'aria-hidden': 'true', tabindex: -1});
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

// copyButton copies text when pressed and says whether it did; label
// names what it copies for a screen reader ("Copy the key"). Its face is
// drawn by app.css, so the text of what it sits beside stays the value.
export function copyButton(text, label) {
  const button = h('button', {type: 'button', class: 'copy', 'aria-label': label, title: label});
  button.addEventListener('click', async () => {
    const ok = await copyText(text);
    button.dataset.copied = ok ? 'yes' : 'no';
    button.title = ok ? 'Copied' : 'Copying failed: select the text and copy it';
    button.setAttribute('aria-label', ok ? label + ': copied' : label + ': failed, select the text and copy it');
  });
  return button;
}

// idText shows an id on one line, cut with an ellipsis when the space is
// short (the whole id in its title), with a button that copies it. href
// makes the id a link.
export function idText(id, href) {
  const text = href ? h('a', {href, class: 'mono id', title: id}, id) : h('span', {class: 'mono id', title: id}, id);
  return h('span', {class: 'idbox'}, text, copyButton(id, 'Copy ' + id));
}

// shownOnce shows a secret that Herald answers only once (a key, a
// signing secret): selectable, copyable, with what it is and that it
// will not be shown again. id names the element holding the value.
export function shownOnce(label, value, id) {
  return h('div', {class: 'secret'},
    h('p', null, h('strong', null, label), ' (shown only now: copy it and keep it somewhere safe)'),
    h('p', {class: 'idbox'}, h('code', {class: 'mono secret-value', id}, value), copyButton(value, 'Copy the ' + label.toLowerCase())));
}

// localInput turns an RFC 3339 instant into a datetime-local value in
// the viewer's zone ('' when empty or not a time).
export function localInput(iso) {
  const d = iso ? new Date(iso) : null;
  if (!d || Number.isNaN(d.getTime())) return '';
  const p = n => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// utcInput turns a datetime-local value, read in the viewer's zone, into
// a UTC RFC 3339 instant ('' when empty or not a time).
export function utcInput(value) {
  const d = value ? new Date(value) : null;
  return !d || Number.isNaN(d.getTime()) ? '' : d.toISOString().replace(/\.\d+Z$/, 'Z');
}
