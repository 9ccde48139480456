// Event types: the installation's catalogue. Every key with
// endpoints:read reads it; a credential of the installation with the
// admin scope (no tenant: the catalogue is shared by every tenant) also
// creates types, edits them in a JSON Schema editor that checks the
// schema and an example payload as you type, and deprecates them.
import {api, query} from './api.js';
import {h, clear, badge, pagedTable, pretty, time, field, errorBox, idText} from './dom.js';
import {onSubmit} from './forms.js';
import {parseJSON, checkSchema, checkValue} from './schema.js';

// mayEdit reports whether the signed-in credential may change the
// catalogue, as the API decides it.
const mayEdit = me => me.admin && !me.tenant;

const typePath = name => '/_herald/v1/event-types/' + encodeURIComponent(name);

// schemaCell shows an event type's schema as formatted JSON.
function schemaCell(schema) {
  if (schema === null || schema === undefined) return h('span', {class: 'muted'}, 'No schema: any data is accepted.');
  return h('pre', {class: 'schema'}, pretty(JSON.stringify(schema)));
}

// checkList shows a check's result: ok text, or each problem.
function showCheck(el, problems, okText) {
  el.dataset.ok = problems.length ? 'no' : 'yes';
  el.className = problems.length ? 'check-result bad' : 'check-result ok';
  clear(el, problems.length ? h('ul', null, problems.map(p => h('li', null, p.path ? [h('code', null, p.path), ': '] : null, p.message))) : okText);
}

// editor is the form of a new type (et null) or of et: description,
// deprecated, the schema with its checks and an example payload checked
// against it. saved(et) is called with what Herald stored.
function editor(et, saved) {
  const inputs = {
    name: h('input', {type: 'text', name: 'name', required: true, maxlength: 255, spellcheck: 'false', placeholder: 'order.created'}),
    description: h('input', {type: 'text', name: 'description', maxlength: 1024, value: et ? et.description : ''}),
    deprecated: h('input', {type: 'checkbox', name: 'deprecated'}),
    schema: h('textarea', {name: 'schema', rows: 12, spellcheck: 'false', class: 'code',
      placeholder: '{"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}'}),
  };
  inputs.deprecated.checked = Boolean(et && et.deprecated);
  inputs.schema.value = et && et.schema !== null ? pretty(JSON.stringify(et.schema)) : '';
  const example = h('textarea', {name: 'example', rows: 6, spellcheck: 'false', class: 'code', placeholder: '{"id": "ord_1"}'});
  const examples = et && et.schema && Array.isArray(et.schema.examples) ? et.schema.examples : [];
  if (examples.length) example.value = pretty(JSON.stringify(examples[0]));
  const schemaCheck = h('div', {id: 'schema-check', role: 'status', 'aria-live': 'polite'});
  const exampleCheck = h('div', {id: 'example-check', role: 'status', 'aria-live': 'polite'});
  const keep = h('button', {type: 'button', id: 'keep-example'}, 'Keep it in the schema\'s examples');

  // schemaNow is the schema typed: {value} (undefined when empty) or {error}.
  const schemaNow = () => inputs.schema.value.trim() ? parseJSON(inputs.schema.value) : {value: undefined};
  const checkExample = () => {
    const s = schemaNow();
    keep.disabled = true;
    if (!example.value.trim()) return clear(exampleCheck, h('span', {class: 'muted'}, 'Type an event\'s data to check it against the schema.'));
    const ex = parseJSON(example.value);
    if (ex.error) return showCheck(exampleCheck, [{message: 'The example is not JSON: ' + ex.error}]);
    if (s.error) return showCheck(exampleCheck, [{message: 'The schema must be JSON before the example can be checked.'}]);
    keep.disabled = !s.value || typeof s.value !== 'object' || Array.isArray(s.value);
    if (s.value === undefined) return showCheck(exampleCheck, [], 'No schema: any data is accepted.');
    showCheck(exampleCheck, checkValue(s.value, ex.value).map(p => ({path: 'data' + p.path, message: p.message})), 'The example matches the schema.');
  };
  const checkSchemaNow = () => {
    inputs.schema.removeAttribute('aria-invalid');
    const s = schemaNow();
    if (s.error) {
      inputs.schema.setAttribute('aria-invalid', 'true');
      showCheck(schemaCheck, [{message: 'Not JSON: ' + s.error}]);
    } else if (s.value === undefined) {
      showCheck(schemaCheck, [], 'No schema: any data is accepted.');
    } else {
      const problems = checkSchema(s.value);
      if (problems.length) inputs.schema.setAttribute('aria-invalid', 'true');
      showCheck(schemaCheck, problems, 'The schema is JSON of a valid structure. Herald compiles it when it is saved.');
    }
    checkExample();
  };
  inputs.schema.addEventListener('input', checkSchemaNow);
  example.addEventListener('input', checkExample);
  keep.addEventListener('click', () => {
    const s = schemaNow().value;
    const ex = parseJSON(example.value).value;
    const list = Array.isArray(s.examples) ? s.examples : [];
    if (!list.some(x => JSON.stringify(x) === JSON.stringify(ex))) s.examples = [...list, ex];
    inputs.schema.value = JSON.stringify(s, null, 2);
    checkSchemaNow();
  });
  checkSchemaNow();

  const out = h('div', {id: 'event-type-saved'});
  const form = h('form', {class: 'stack', id: et ? 'edit-event-type' : 'create-event-type'},
    et ? null : field('Name (dot-separated: order.created)', inputs.name),
    field('Description', inputs.description, true),
    h('label', {class: 'check'}, inputs.deprecated, ' Deprecated (still accepted; a publish answer says so)'),
    field('JSON Schema of the events\' data (empty: any data)', inputs.schema, true), schemaCheck,
    field('Example data, checked against the schema as you type', example, true), exampleCheck,
    h('div', {class: 'actions'}, keep, h('button', {type: 'submit', class: 'primary'}, et ? 'Save changes' : 'Create event type')),
    out);
  onSubmit(form, inputs, out, async () => {
    const s = schemaNow();
    if (s.error) throw Object.assign(new Error('The schema is not JSON: ' + s.error), {field: 'schema'});
    const body = {description: inputs.description.value.trim(), deprecated: inputs.deprecated.checked};
    let got;
    if (et) {
      body.schema = s.value === undefined ? null : s.value;
      got = await api('PATCH', typePath(et.name), body);
    } else {
      body.name = inputs.name.value.trim();
      if (s.value !== undefined) body.schema = s.value;
      got = await api('POST', '/_herald/v1/event-types', body);
    }
    if (!et) {
      form.reset();
      example.value = '';
      checkSchemaNow();
    }
    await saved(got, out);
  });
  return form;
}

// deprecateButton deprecates et, or makes it current again.
function deprecateButton(et, out, reload) {
  return h('button', {type: 'button', class: 'deprecate', 'data-name': et.name, onclick: async ev => {
    ev.currentTarget.disabled = true;
    try {
      await api('PATCH', typePath(et.name), {deprecated: !et.deprecated});
      await reload();
    } catch (e) {
      clear(out, errorBox(e));
    }
  }}, et.deprecated ? 'Make current' : 'Deprecate');
}

async function edit(name) {
  const et = await api('GET', typePath(name));
  return [h('h1', null, 'Event type ', h('span', {class: 'mono'}, et.name)),
    h('p', null, h('a', {href: '#/event-types'}, '← All event types'), ' · created ', time(et.created_at), ', updated ', time(et.updated_at)),
    editor(et, (got, out) => {
      clear(out, h('p', {class: 'notice', role: 'status'}, `Saved ${got.name}`, got.deprecated ? ', deprecated.' : '.'));
    })];
}

export async function eventTypes(ctx, name) {
  if (name && mayEdit(ctx.me)) return edit(name);
  const editing = mayEdit(ctx.me);
  const body = h('div');
  const problem = h('div', {role: 'status'});
  const load = async () => clear(body, await pagedTable({
    id: 'event-type-list',
    caption: 'Event types',
    headers: ['Name', 'Description', 'Status', 'Schema of the data', 'Updated', ...(editing ? [''] : [])],
    emptyText: editing ? 'No event type in the catalogue yet: add one below.' : 'No event type in the catalogue yet. An administrator adds them.',
    fetchPage: cursor => api('GET', '/_herald/v1/event-types' + query({limit: 100, cursor})),
    cells: et => [editing ? idText(et.name, '#/event-types/' + encodeURIComponent(et.name)) : h('td', {class: 'mono'}, et.name), et.description || '—',
      et.deprecated ? badge('deprecated') : badge('current'), schemaCell(et.schema), time(et.updated_at),
      editing ? deprecateButton(et, problem, load) : null].filter(c => c !== null),
  }));
  await load();
  return [h('h1', null, 'Event types'),
    h('p', {class: 'muted'}, 'The event types Herald knows, with the JSON Schema their data must match. A deprecated type is still accepted.'),
    problem, body,
    editing ? [h('h2', null, 'New event type'), editor(null, async (got, out) => {
      await load();
      clear(out, h('p', {class: 'notice', role: 'status'}, `Created ${got.name}.`));
    })] : null];
}
