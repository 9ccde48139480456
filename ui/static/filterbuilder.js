// The filter builder: an endpoint's field filter as rows of path,
// operator and value (every row must hold), or as raw JSON for what rows
// cannot say (and, or, not). The API checks the filter; its errors are
// shown on the filter's field.
import {h, clear} from './dom.js';

// ops are the filter's operators, with what each row's value means.
const ops = [
  ['eq', 'equals'], ['ne', 'does not equal'], ['in', 'is one of (comma-separated)'], ['nin', 'is none of (comma-separated)'],
  ['exists', 'exists (true or false)'], ['gt', '>'], ['gte', '≥'], ['lt', '<'], ['lte', '≤'],
  ['prefix', 'starts with'], ['regex', 'matches the RE2 regular expression'],
];
const known = new Set(ops.map(o => o[0]));

// literal reads a row's value: JSON when it parses (1, true, "x", null),
// else the text as a string.
function literal(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

// shown writes a value back into a row: strings as they are, the rest as JSON.
const shown = v => typeof v === 'string' ? v : JSON.stringify(v);

// rowsOf splits a filter into rows, or answers null when it holds what
// rows cannot say (a combinator, an unknown operator, a list of lists).
export function rowsOf(filter) {
  if (filter === null || filter === undefined) return [];
  if (typeof filter !== 'object' || Array.isArray(filter)) return null;
  const out = [];
  for (const [path, cond] of Object.entries(filter)) {
    if (path === 'and' || path === 'or' || path === 'not') return null;
    if (cond === null || typeof cond !== 'object' || Array.isArray(cond)) {
      if (Array.isArray(cond)) return null; // a bare array is refused by the API: keep it raw
      out.push({path, op: 'eq', value: shown(cond)});
      continue;
    }
    for (const [op, v] of Object.entries(cond)) {
      if (!known.has(op)) return null;
      if (op === 'in' || op === 'nin') {
        if (!Array.isArray(v) || v.some(x => x !== null && typeof x === 'object')) return null;
        out.push({path, op, value: v.map(shown).join(', ')});
      } else if (v !== null && typeof v === 'object') {
        return null;
      } else {
        out.push({path, op, value: shown(v)});
      }
    }
  }
  return out;
}

// filterOf makes a filter of rows (null when there is none).
export function filterOf(rows) {
  const out = {};
  for (const r of rows) {
    if (!r.path) continue;
    let v;
    if (r.op === 'in' || r.op === 'nin') v = r.value.split(',').map(s => s.trim()).filter(s => s !== '').map(literal);
    else if (r.op === 'prefix' || r.op === 'regex') v = r.value;
    else v = literal(r.value);
    out[r.path] = Object.assign(out[r.path] || {}, {[r.op]: v});
  }
  return Object.keys(out).length ? out : null;
}

// filterEditor is the filter's control: rows, or raw JSON. value()
// answers the filter (throws when the raw JSON does not parse), control
// is the element an error of the field is shown on.
export function filterEditor(initial) {
  const wrap = h('div', {class: 'filter-editor', id: 'filter-editor'});
  const rowsBox = h('div', {class: 'filter-rows'});
  const raw = h('textarea', {name: 'filter', rows: 5, spellcheck: 'false', id: 'filter-raw', 'aria-label': 'Filter as JSON',
    placeholder: '{"data.total": {"gte": 100}, "or": [{"data.tier": "gold"}, {"type": {"prefix": "invoice."}}]}'});
  const mode = h('button', {type: 'button', id: 'filter-mode'});
  const note = h('p', {class: 'muted', role: 'status'});
  let rawMode = false;
  let rows = rowsOf(initial);
  if (rows === null) {
    rawMode = true;
    rows = [];
  }
  raw.value = initial === null || initial === undefined ? '' : JSON.stringify(initial, null, 2);

  const row = r => {
    const path = h('input', {type: 'text', class: 'filter-path', 'aria-label': 'Field path', placeholder: 'data.status', spellcheck: 'false', value: r.path});
    const op = h('select', {class: 'filter-op', 'aria-label': 'Operator'}, ops.map(([v, t]) => h('option', {value: v}, t)));
    op.value = r.op;
    const value = h('input', {type: 'text', class: 'filter-value', 'aria-label': 'Value', spellcheck: 'false', value: r.value});
    const el = h('div', {class: 'filter-row'}, path, op, value,
      h('button', {type: 'button', class: 'filter-remove', 'aria-label': 'Remove this condition', onclick: () => { el.remove(); }}, 'Remove'));
    el.read = () => ({path: path.value.trim(), op: op.value, value: value.value.trim()});
    return el;
  };
  const readRows = () => [...rowsBox.children].map(el => el.read());
  const add = h('button', {type: 'button', id: 'filter-add', onclick: () => {
    const el = row({path: '', op: 'eq', value: ''});
    rowsBox.append(el);
    el.querySelector('input').focus();
  }}, 'Add condition');
  const builder = h('div', null, rowsBox, add);

  const show = () => {
    builder.hidden = rawMode;
    raw.hidden = !rawMode;
    mode.textContent = rawMode ? 'Edit as conditions' : 'Edit as JSON';
    if (!rawMode) clear(rowsBox, rows.map(row));
  };
  mode.addEventListener('click', () => {
    clear(note);
    if (rawMode) {
      let parsed;
      try {
        parsed = raw.value.trim() ? JSON.parse(raw.value) : null;
      } catch {
        note.textContent = 'The JSON does not parse: fix it first.';
        return;
      }
      const r = rowsOf(parsed);
      if (r === null) {
        note.textContent = 'This filter uses and, or, not or values that conditions cannot show: keep editing it as JSON.';
        return;
      }
      rows = r;
      rawMode = false;
    } else {
      const f = filterOf(readRows());
      raw.value = f ? JSON.stringify(f, null, 2) : '';
      rawMode = true;
    }
    show();
  });
  show();
  clear(wrap, h('p', {class: 'muted'}, 'Every condition must hold. Paths start with id, type, timestamp or data.'),
    builder, raw, h('div', {class: 'actions'}, mode), note);
  return {
    element: wrap,
    control: () => rawMode ? raw : (rowsBox.querySelector('input') || add),
    value: () => {
      if (!rawMode) return filterOf(readRows());
      if (!raw.value.trim()) return null;
      try {
        return JSON.parse(raw.value);
      } catch {
        throw Object.assign(new Error('The filter is not JSON.'), {field: 'filter'});
      }
    },
  };
}
