// Deliveries: an endpoint's deliveries filtered by status, event type and
// time; one delivery with every attempt; retry.
import {api, listAll, query} from './api.js';
import {h, clear, badge, table, pagedTable, empty, errorBox, field, time, props, pretty, localInput, utcInput} from './dom.js';

const statuses = ['', 'pending', 'failed', 'delivered', 'exhausted'];

// pageSize is how many deliveries a page of the list shows.
const pageSize = 100;

async function list(ctx) {
  const q = ctx.params;
  const eps = (await listAll('/_herald/v1/endpoints', 5000)).items;
  if (!eps.length) {
    return [h('h1', null, 'Deliveries'), empty('There is no endpoint, so there are no deliveries. Create an endpoint first.')];
  }
  const endpoint = h('select', {name: 'endpoint'}, eps.map(e => h('option', {value: e.id}, e.id + ' — ' + e.url)));
  endpoint.value = q.get('endpoint') || eps[0].id;
  if (!endpoint.value) endpoint.value = eps[0].id;
  const status = h('select', {name: 'status'}, statuses.map(s => h('option', {value: s}, s || 'any')));
  status.value = q.get('status') || '';
  const type = h('input', {type: 'text', name: 'event_type', value: q.get('event_type') || '', spellcheck: 'false'});
  const since = h('input', {type: 'datetime-local', name: 'since', value: localInput(q.get('since'))});
  const until = h('input', {type: 'datetime-local', name: 'until', value: localInput(q.get('until'))});
  const form = h('form', {class: 'inline', id: 'delivery-filter'},
    field('Endpoint', endpoint, true), field('Status', status), field('Event type', type),
    field('Since', since), field('Until', until),
    h('button', {type: 'submit', class: 'primary'}, 'Filter'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    location.hash = '#/deliveries' + query({endpoint: endpoint.value, status: status.value, event_type: type.value.trim(),
      since: utcInput(since.value), until: utcInput(until.value)});
  });
  const filter = {status: status.value, event_type: type.value.trim(), since: q.get('since') || '', until: q.get('until') || '', limit: pageSize};
  const path = '/_herald/v1/endpoints/' + encodeURIComponent(endpoint.value) + '/deliveries';
  let list;
  try {
    list = await pagedTable({
      id: 'delivery-list', caption: 'Deliveries, newest first',
      headers: ['Created', 'Delivery', 'Event type', 'Status', 'Attempts', 'Last status', 'Next attempt'],
      cells: d => [time(d.created_at), h('a', {href: '#/deliveries/' + encodeURIComponent(d.id), class: 'mono'}, d.id), d.event_type, [badge(d.status), ' ', inFlight(d)],
        String(d.attempt_count), d.last_status_code ? String(d.last_status_code) : '—', time(d.next_attempt_at)],
      fetchPage: cursor => api('GET', path + query(Object.assign({cursor}, filter))),
      emptyText: 'No delivery matches. Widen the filter, or publish an event the endpoint subscribes to.',
    });
  } catch (e) {
    return [h('h1', null, 'Deliveries'), form, errorBox(e)];
  }
  return [h('h1', null, 'Deliveries'), form, list];
}

// inFlight says which replica is sending the delivery and until when its
// lease runs (the API shows a lease only while it is live), or nothing.
function inFlight(d) {
  return d.lease ? h('span', {class: 'lease'}, 'in flight on replica ', h('span', {class: 'mono'}, d.lease.replica),
    ' until ', time(d.lease.until)) : null;
}

async function detail(ctx, id) {
  const d = await api('GET', '/_herald/v1/deliveries/' + encodeURIComponent(id));
  const out = h('div', {id: 'retry-result', role: 'status'});
  const retry = ctx.can('deliveries:write') ? h('button', {type: 'button', class: 'primary', id: 'retry', onclick: async ev => {
    const button = ev.currentTarget;
    button.disabled = true;
    try {
      await api('POST', '/_herald/v1/deliveries/' + encodeURIComponent(id) + '/retry', {});
      clear(out, h('p', {class: 'notice'}, 'Queued again with a fresh retry schedule: Refresh to see its new attempts.'));
    } catch (e) {
      clear(out, errorBox(e));
    } finally {
      button.disabled = false;
    }
  }}, 'Retry now') : null;
  const attempts = d.attempts || [];
  return [
    h('h1', null, 'Delivery ', h('span', {class: 'mono'}, d.id)),
    h('p', null, h('a', {href: '#/deliveries?endpoint=' + encodeURIComponent(d.endpoint_id)}, '← Deliveries of ', d.endpoint_id),
      ' · ', h('a', {href: '#/endpoints/' + encodeURIComponent(d.endpoint_id)}, 'Endpoint')),
    props([
      ['Status', h('span', {id: 'delivery-status'}, badge(d.status), ' ', inFlight(d))],
      ['Event', [d.event_type, ' ', h('span', {class: 'mono'}, d.event_id)]],
      ['Stream', h('span', {class: 'mono'}, d.stream + ' @ ' + d.offset)],
      ['Attempts', String(d.attempt_count)],
      ['Next attempt', time(d.next_attempt_at)],
      ['Last error', d.last_error || '—'],
      ['Created', time(d.created_at)],
      ['Finished', time(d.finished_at)],
    ]),
    h('div', {class: 'actions'}, retry), out,
    h('h2', null, 'Attempts'),
    attempts.length ? table('Every attempt, oldest first', ['#', 'At', 'Status', 'Latency', 'Error', 'Response'], attempts,
      a => [String(attempts.indexOf(a) + 1), time(a.at), a.status_code ? String(a.status_code) : '—', a.latency, a.error || '—', h('td', {class: 'mono'}, a.response_body || '')])
      : empty('No attempt yet: the first is sent as soon as the endpoint has room.'),
    h('h2', null, 'Payload'),
    h('pre', {id: 'payload'}, pretty(JSON.stringify(d.payload))),
  ];
}

export function deliveries(ctx, id) {
  return id ? detail(ctx, id) : list(ctx);
}
