// The endpoint form: every field of an endpoint, to create one (POST) or
// change one (PATCH). The API validates; an error it gives about a field
// is shown on that field.
import {api} from './api.js';
import {h, clear, add, errorBox, field} from './dom.js';
import {filterEditor} from './filterbuilder.js';

// isBroker reports whether an endpoint type publishes to a broker.
export const isBroker = type => type === 'nats' || type === 'kafka';

const list = s => s.split(',').map(x => x.trim()).filter(Boolean);
const num = (input, name) => {
  const v = input.value.trim();
  if (v === '') return null;
  const n = Number(v);
  if (!Number.isFinite(n)) throw Object.assign(new Error(`${name} must be a number.`), {field: input.name});
  return n;
};

// showError shows err on the field it names (the API's "field", a JSON
// path such as "batch.max_events" or "filter.data.x": its first segment
// names the form's field), or, when it names none, in box; a null err
// clears what an earlier one showed.
export function showError(form, box, err) {
  for (const el of form.querySelectorAll('.field-error')) el.remove();
  for (const el of form.querySelectorAll('[aria-invalid]')) {
    el.removeAttribute('aria-invalid');
    el.removeAttribute('aria-describedby');
  }
  if (!err) {
    clear(box);
    return;
  }
  const name = (err.field || '').split(/[.[]/)[0];
  const wrap = name ? form.querySelector(`[data-field="${CSS.escape(name)}"]`) : null;
  if (!wrap) {
    clear(box, errorBox(err));
    return;
  }
  clear(box);
  const control = wrap.control ? wrap.control() : wrap.querySelector('input, select, textarea');
  const msg = h('p', {class: 'field-error', id: 'error-' + name, role: 'alert'}, err.message);
  wrap.append(msg);
  if (control) {
    control.setAttribute('aria-invalid', 'true');
    control.setAttribute('aria-describedby', msg.id);
    control.focus();
  }
}

// named marks a field's wrapper with the API field it edits.
function named(name, el) {
  el.dataset.field = name;
  return el;
}

// headerEditor edits custom headers: names shown, values write-only (a
// stored value is never shown; left empty it is kept).
function headerEditor(initial) {
  const box = h('div', {class: 'header-rows', id: 'header-rows'});
  const row = (name, stored) => {
    const n = h('input', {type: 'text', class: 'header-name', 'aria-label': 'Header name', spellcheck: 'false', value: name, placeholder: 'X-Api-Key'});
    const v = h('input', {type: 'password', class: 'header-value', 'aria-label': 'Header value', autocomplete: 'off',
      placeholder: stored ? 'unchanged (values are write-only)' : 'value'});
    const el = h('div', {class: 'header-row'}, n, v,
      h('button', {type: 'button', 'aria-label': 'Remove this header', onclick: () => el.remove()}, 'Remove'));
    el.read = () => [n.value.trim(), v.value === '' && stored && n.value.trim() === name ? '***' : v.value];
    return el;
  };
  add(box, Object.keys(initial || {}).sort().map(name => row(name, true)));
  const more = h('button', {type: 'button', id: 'header-add', onclick: () => {
    const el = row('', false);
    box.append(el);
    el.querySelector('input').focus();
  }}, 'Add header');
  return {
    element: h('div', null, box, more),
    value: () => {
      const out = {};
      for (const el of box.children) {
        const [name, value] = el.read();
        if (name) out[name] = value;
      }
      return out;
    },
  };
}

// endpointForm is the form of a new endpoint (ep null) or of ep's
// changes; onSaved(endpoint) runs after the API took it.
export function endpointForm(ctx, ep, onSaved) {
  const editing = Boolean(ep);
  const e = ep || {type: 'webhook', event_types: [], streams: [], headers: {}, retry_schedule: [], filter: null};
  const input = (name, props) => h('input', Object.assign({name, id: 'ep-' + name, spellcheck: 'false'}, props));
  const type = h('select', {name: 'type', id: 'ep-type'}, ['webhook', 'nats', 'kafka'].map(t => h('option', {value: t}, t)));
  type.value = e.type || 'webhook';
  const url = input('url', {type: 'url', placeholder: 'https://example.com/webhooks', value: e.url || ''});
  const config = h('textarea', {name: 'config', id: 'ep-config', rows: 5, spellcheck: 'false',
    placeholder: '{"brokers": ["kafka.example.com:9093"], "tls": {}}  or  {"servers": ["tls://nats.example.com:4222"], "jetstream": true}'});
  config.value = e.config ? JSON.stringify(e.config, null, 2) : '';
  const name = input('name', {type: 'text', value: e.name || ''});
  const desc = input('description', {type: 'text', value: e.description || ''});
  const types = input('event_types', {type: 'text', placeholder: '* (every type)', value: (e.event_types || []).join(', ')});
  const streams = input('streams', {type: 'text', placeholder: '/** (every stream)', value: (e.streams || []).join(', ')});
  const tenant = input('tenant', {type: 'text', value: e.tenant || ''});
  const schedule = input('retry_schedule', {type: 'text', placeholder: 'the installation\'s schedule, e.g. 0s, 5s, 5m, 30m, 2h',
    value: editing && ep.retry_schedule ? ep.retry_schedule.join(', ') : ''});
  const rate = input('rate_limit', {type: 'number', min: 0, step: 'any', placeholder: 'no limit', value: e.rate_limit || ''});
  const inFlight = input('max_in_flight', {type: 'number', min: 0, step: 1, placeholder: 'the default', value: e.max_in_flight || ''});
  const ordering = h('select', {name: 'ordering', id: 'ep-ordering'}, h('option', {value: 'none'}, 'none: concurrent'), h('option', {value: 'stream'}, 'stream: one at a time per stream'));
  ordering.value = e.ordering || 'none';
  const batchMax = input('batch_max_events', {type: 'number', min: 0, step: 1, placeholder: 'one event per request', value: e.batch ? e.batch.max_events : ''});
  const batchWait = input('batch_max_wait_ms', {type: 'number', min: 0, step: 1, placeholder: 'ms', value: e.batch ? e.batch.max_wait_ms : ''});
  const profile = input('profile', {type: 'text', placeholder: 'the installation\'s default', value: e.profile || ''});
  const policy = h('select', {name: 'failure_policy', id: 'ep-failure_policy'},
    h('option', {value: 'standard'}, 'standard: most 4xx are final'), h('option', {value: 'retry_all'}, 'retry_all: every failure is retried'));
  policy.value = e.failure_policy || 'standard';
  const timeout = input('timeout_ms', {type: 'number', min: 1, step: 1, placeholder: 'the installation\'s timeout', value: e.timeout_ms || ''});
  const filter = filterEditor(e.filter);
  const headers = headerEditor(e.headers);
  const out = h('div', {role: 'status', id: 'endpoint-form-result'});

  const urlField = named('url', field('URL', url, true));
  const configField = named('config', field(editing ? 'Broker config (JSON; credentials show as *** and are kept when left so)' : 'Broker config (JSON; credentials are never shown again)', config, true));
  const filterField = named('filter', h('div', {class: 'field wide'}, h('span', {class: 'label'}, 'Filter'), filter.element));
  filterField.control = filter.control;
  const headerField = named('headers', h('div', {class: 'field wide'}, h('span', {class: 'label'}, 'Custom headers'), headers.element));
  const showType = () => {
    const broker = isBroker(type.value);
    url.required = !broker;
    urlField.hidden = broker;
    configField.hidden = !broker;
  };
  type.addEventListener('change', showType);
  showType();

  const form = h('form', {class: 'endpoint-form', id: editing ? 'edit-endpoint' : 'create-endpoint', novalidate: true},
    h('fieldset', null, h('legend', null, 'Destination'),
      named('type', field('Type', type)), urlField, configField),
    h('fieldset', null, h('legend', null, 'What it receives'),
      named('event_types', field('Event types (comma-separated patterns)', types, true)),
      named('streams', field('Stream patterns (comma-separated)', streams, true)),
      filterField),
    h('fieldset', null, h('legend', null, 'About'),
      named('name', field('Name', name)), named('description', field('Description', desc, true)),
      !editing && !ctx.me.tenant ? named('tenant', field('Tenant (optional)', tenant)) : null),
    h('fieldset', null, h('legend', null, 'How it is sent'),
      named('retry_schedule', field('Retry schedule (comma-separated durations)', schedule, true)),
      named('rate_limit', field('Rate limit (deliveries/s)', rate)), named('max_in_flight', field('Max in flight', inFlight)),
      named('ordering', field('Ordering', ordering)),
      named('batch', h('div', {class: 'field-pair'}, field('Batch: max events', batchMax), field('Batch: max wait (ms)', batchWait))),
      named('profile', field('Wire profile', profile)), named('failure_policy', field('Failure policy', policy)),
      named('timeout_ms', field('Timeout (ms)', timeout)),
      headerField),
    h('div', {class: 'actions'},
      h('button', {type: 'submit', class: 'primary', id: editing ? 'save-endpoint' : 'create-endpoint-submit'}, editing ? 'Save changes' : 'Create endpoint'),
      editing ? h('a', {href: '#/endpoints/' + encodeURIComponent(ep.id)}, 'Cancel') : null),
    out);

  // body is what the form says, as the API's JSON; a field left empty
  // is null, the installation's default.
  const body = () => {
    const b = {
      type: type.value, name: name.value.trim(), description: desc.value.trim(),
      event_types: list(types.value), streams: list(streams.value), filter: filter.value(),
      retry_schedule: schedule.value.trim() ? list(schedule.value) : null,
      rate_limit: num(rate, 'The rate limit'), max_in_flight: num(inFlight, 'Max in flight'), ordering: ordering.value,
      profile: profile.value.trim() || null, failure_policy: policy.value, timeout_ms: num(timeout, 'The timeout'),
      headers: headers.value(),
    };
    const bm = num(batchMax, 'Batch max events');
    b.batch = bm ? {max_events: bm, max_wait_ms: num(batchWait, 'Batch max wait') || 0} : null;
    if (isBroker(type.value)) {
      try {
        b.config = JSON.parse(config.value);
      } catch {
        throw Object.assign(new Error('The broker config is not JSON.'), {field: 'config'});
      }
    } else {
      b.url = url.value.trim();
    }
    if (!editing) {
      if (!ctx.me.tenant && tenant.value.trim()) b.tenant = tenant.value.trim();
      // A new endpoint leaves out what it does not set: the defaults apply.
      for (const [k, v] of Object.entries(b)) if (v === null || (Array.isArray(v) && !v.length) || v === '') delete b[k];
      if (!Object.keys(b.headers).length) delete b.headers;
    }
    return b;
  };
  // A change sends only the fields that changed: one the credential may
  // not set (stream patterns beyond a tenant's reach) is left alone, and
  // a default stays a default.
  let before = {};
  try {
    before = editing ? body() : {};
  } catch {
    before = {}; // a stored value the form cannot read back: every field is sent
  }
  const changes = () => {
    const now = body();
    for (const k of Object.keys(now)) if (JSON.stringify(now[k]) === JSON.stringify(before[k])) delete now[k];
    return now;
  };
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const submit = form.querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      const saved = editing ? await api('PATCH', '/_herald/v1/endpoints/' + encodeURIComponent(ep.id), changes())
        : await api('POST', '/_herald/v1/endpoints', body());
      showError(form, out, null);
      onSaved(saved, out);
    } catch (err) {
      showError(form, out, err);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
