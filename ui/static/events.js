// The event log: every event Herald recorded, newest first, filtered by
// type, tenant, stream, time and outcome, or found by its id; one event
// with its payload and every endpoint it matched, each delivery's state
// and attempts, and a retry of each.
import {api, query} from './api.js';
import {h, clear, badge, pagedTable, errorBox, field, time, props, pretty, empty, localInput, utcInput} from './dom.js';

const outcomes = [['', 'any'], ['none', 'none: matched no endpoint'], ['pending', 'pending'], ['failed', 'failed, retrying'],
  ['exhausted', 'exhausted (dead letter)'], ['delivered', 'delivered']];

// pageSize is how many events a page of the log shows.
const pageSize = 100;

// eventHref is the page of one event (its id is unique in its tenant).
export function eventHref(id, tenant) {
  return '#/events/' + encodeURIComponent(id) + query({tenant});
}

// counts says how many deliveries an event made, by status.
function counts(d) {
  const parts = Object.entries(d || {}).sort().map(([s, n]) => `${n} ${s}`);
  return parts.length ? parts.join(', ') : '—';
}

async function list(ctx) {
  const q = ctx.params;
  const operator = !ctx.me.tenant;
  const input = (name, props) => h('input', Object.assign({type: 'text', name, id: 'events-' + name, spellcheck: 'false', value: q.get(name) || ''}, props));
  const id = input('id', {placeholder: 'evt_… or your own id'});
  const type = input('type', {placeholder: 'order.created'});
  const tenant = input('tenant', {placeholder: 'every tenant'});
  const stream = input('stream', {placeholder: '/events'});
  const since = h('input', {type: 'datetime-local', name: 'since', id: 'events-since', value: localInput(q.get('since'))});
  const until = h('input', {type: 'datetime-local', name: 'until', id: 'events-until', value: localInput(q.get('until'))});
  const outcome = h('select', {name: 'outcome', id: 'events-outcome'}, outcomes.map(([v, t]) => h('option', {value: v}, t)));
  outcome.value = q.get('outcome') || '';
  const form = h('form', {class: 'inline', id: 'event-filter', role: 'search'},
    field('Event id', id), field('Type', type), operator ? field('Tenant', tenant) : null, field('Stream', stream),
    field('Since', since), field('Until', until), field('Outcome', outcome),
    h('button', {type: 'submit', class: 'primary'}, 'Search'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    location.hash = '#/events' + query({id: id.value.trim(), type: type.value.trim(), tenant: operator ? tenant.value.trim() : '',
      stream: stream.value.trim(), since: utcInput(since.value), until: utcInput(until.value), outcome: outcome.value});
  });
  const filter = {id: q.get('id') || '', type: q.get('type') || '', stream: q.get('stream') || '', since: q.get('since') || '',
    until: q.get('until') || '', outcome: q.get('outcome') || '', limit: pageSize};
  // An operator's empty tenant field means every tenant; "-" the
  // platform's own events (the API's empty tenant).
  const fetchPage = cursor => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v !== '') p.set(k, v);
    if (operator && q.get('tenant')) p.set('tenant', q.get('tenant') === '-' ? '' : q.get('tenant'));
    if (cursor) p.set('cursor', cursor);
    return api('GET', '/_herald/v1/events?' + p);
  };
  let table;
  try {
    table = await pagedTable({
      id: 'event-list', caption: 'Events, newest first',
      headers: ['Recorded', 'Event', 'Type', operator ? 'Tenant' : null, 'Stream', 'Outcome', 'Deliveries'].filter(Boolean),
      cells: e => [time(e.created_at), h('a', {href: eventHref(e.id, operator ? e.tenant : ''), class: 'mono'}, e.id), e.type || '—',
        operator ? (e.tenant || h('span', {class: 'muted'}, 'platform')) : null, h('td', {class: 'mono'}, e.stream),
        badge(e.outcome), counts(e.deliveries)].filter(c => c !== null),
      fetchPage,
      emptyText: 'No event matches. Widen the search, or publish an event.',
    });
  } catch (e) {
    return [h('h1', null, 'Event log'), form, errorBox(e)];
  }
  return [h('h1', null, 'Event log'),
    h('p', {class: 'muted'}, 'Every event Herald recorded: published through the API, or met with an id of its own in a stream.' +
      (operator ? ' Tenant "-" shows the platform\'s own events.' : '')),
    form, table];
}

// attemptsOf lists a delivery's attempts, oldest first.
function attemptsOf(d) {
  if (!d.attempts.length) return h('span', {class: 'muted'}, 'no attempt yet');
  return h('ol', {class: 'attempts'}, d.attempts.map(a => h('li', null, time(a.at), ' ',
    a.status_code ? `HTTP ${a.status_code}` : 'no answer', ` · ${a.latency}`, a.error ? ` · ${a.error}` : '')));
}

async function detail(ctx, id) {
  const tenant = ctx.me.tenant ? '' : (ctx.params.get('tenant') || '');
  const ev = await api('GET', '/_herald/v1/events/' + encodeURIComponent(id) + query({tenant}));
  const out = h('div', {id: 'event-action-result', role: 'status'});
  const reload = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
  const retry = d => ctx.can('deliveries:write') ? h('button', {type: 'button', class: 'retry', 'data-delivery': d.id, onclick: async e => {
    const button = e.currentTarget;
    button.disabled = true;
    try {
      await api('POST', '/_herald/v1/deliveries/' + encodeURIComponent(d.id) + '/retry', {});
      clear(out, h('p', {class: 'notice'}, `Delivery ${d.id} to ${d.endpoint_id} is queued again with a fresh retry schedule.`));
      reload();
    } catch (err) {
      clear(out, errorBox(err));
    } finally {
      button.disabled = false;
    }
  }}, d.status === 'delivered' ? 'Send again' : 'Retry now') : null;
  const matched = ev.matched.length ? h('div', {class: 'table-wrap'}, h('table', {id: 'event-deliveries'},
    h('caption', null, 'Every endpoint it matched'),
    h('thead', null, h('tr', null, ['Endpoint', 'Delivery', 'Status', 'Attempts', 'Next attempt', ''].map(t => h('th', {scope: 'col'}, t)))),
    h('tbody', null, ev.matched.map(d => h('tr', null,
      h('td', null, h('a', {href: '#/endpoints/' + encodeURIComponent(d.endpoint_id), class: 'mono'}, d.endpoint_id)),
      h('td', null, h('a', {href: '#/deliveries/' + encodeURIComponent(d.id), class: 'mono'}, d.id)),
      h('td', null, badge(d.status), d.last_error ? h('div', {class: 'muted'}, d.last_error) : null),
      h('td', null, attemptsOf(d)), h('td', null, time(d.next_attempt_at)), h('td', null, retry(d)))))))
    : empty('It matched no endpoint: no endpoint subscribed to its type and stream when it was recorded.');
  return [
    h('h1', null, 'Event ', h('span', {class: 'mono'}, ev.id)),
    h('p', null, h('a', {href: '#/events'}, '← Event log')),
    props([
      ['Type', ev.type || '—'],
      ctx.me.tenant ? null : ['Tenant', ev.tenant || 'platform'],
      ['Stream', h('span', {class: 'mono'}, `${ev.stream} @ ${ev.offset}`)],
      ['Recorded', time(ev.created_at)],
      ['Outcome', h('span', {id: 'event-outcome'}, badge(ev.outcome), ' ', counts(ev.deliveries))],
    ].filter(Boolean)),
    out,
    h('h2', null, 'Deliveries'), matched,
    h('h2', null, 'Payload'),
    ev.event ? h('pre', {id: 'event-payload'}, pretty(JSON.stringify(ev.event)))
      : empty('The stream no longer holds this event (deleted, or trimmed by its retention).'),
  ];
}

export function events(ctx, id) {
  return id ? detail(ctx, id) : list(ctx);
}
