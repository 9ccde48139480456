// Endpoints: their health and breaker state, and what an operator or a
// tenant does with them.
import {api, query} from './api.js';
import {h, clear, badge, pagedTable, errorBox, field, time, props, pretty, confirmAction} from './dom.js';
import {endpointForm, isBroker} from './endpointform.js';
import {testSend} from './testsend.js';

const link = id => h('a', {href: '#/endpoints/' + encodeURIComponent(id), class: 'mono'}, id);

// destination is where an endpoint sends: its URL, or its broker type.
const destination = e => isBroker(e.type) ? e.type : e.url;

// secretNotice shows a signing secret once, right after it was made.
function secretNotice(text, secret) {
  return h('div', {class: 'notice', role: 'status'}, h('p', null, text),
    h('p', null, 'Signing secret (shown only now): ', h('code', {class: 'mono', id: 'secret'}, secret)));
}

// pageSize is how many endpoints a page of the list shows.
const pageSize = 100;

async function list(ctx) {
  const body = h('div');
  const load = async () => {
    clear(body, await pagedTable({
      id: 'endpoint-list', caption: 'Endpoints',
      headers: ['Endpoint', 'URL or broker', 'Tenant', 'Status', 'Failures in a row', 'Last success', 'Last failure'],
      cells: e => [link(e.id), h('td', {class: 'mono'}, destination(e)), e.tenant || '—', badge(e.status), String(e.consecutive_failures), time(e.last_success_at), time(e.last_failure_at)],
      fetchPage: cursor => api('GET', '/_herald/v1/endpoints' + query({limit: pageSize, cursor})),
      emptyText: ctx.can('endpoints:write') ? 'No endpoint yet: create one below to receive events.' : 'No endpoint yet. Ask an administrator to create one.',
    }));
  };
  await load();
  return [h('h1', null, 'Endpoints'), body,
    ctx.can('endpoints:write') ? [h('h2', null, 'New endpoint'), endpointForm(ctx, null, async (ep, out) => {
      clear(out, secretNotice(['Created endpoint ', link(ep.id), '.'], ep.secret));
      await load();
    })] : null];
}

async function detail(ctx, id) {
  const ep = await api('GET', '/_herald/v1/endpoints/' + encodeURIComponent(id));
  const path = '/_herald/v1/endpoints/' + encodeURIComponent(id);
  const out = h('div', {id: 'action-result', role: 'status'});
  const reload = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
  const act = (label, fn, opts) => h('button', Object.assign({type: 'button', onclick: async ev => {
    const button = ev.currentTarget;
    button.disabled = true;
    try {
      await fn();
    } catch (e) {
      clear(out, errorBox(e));
    } finally {
      button.disabled = false;
    }
  }}, opts || {}), label);

  const actions = [];
  if (ctx.can('endpoints:write')) {
    if (ep.status === 'disabled') {
      actions.push(act('Re-enable', async () => { await api('PATCH', path, {active: true}); reload(); }, {class: 'primary', id: 're-enable'}));
    } else if (ep.active) {
      actions.push(act('Pause', async () => { await api('PATCH', path, {active: false}); reload(); }, {id: 'pause'}));
    } else {
      actions.push(act('Resume', async () => { await api('PATCH', path, {active: true}); reload(); }, {class: 'primary', id: 'resume'}));
    }
    actions.push(h('a', {href: '#/endpoints/' + encodeURIComponent(ep.id) + '/edit', id: 'edit', class: 'button'}, 'Edit'));
    actions.push(act('Rotate secret…', async () => {
      if (!await confirmAction('Rotate the signing secret? The old one keeps signing beside the new one for the rotation overlap, so the receiver can switch.', 'Rotate')) return;
      const r = await api('POST', path + '/rotate-secret', {});
      clear(out, secretNotice(['The secret was rotated. ', r.previous_secret_expires_at ? ['The previous one keeps signing beside it until ', time(r.previous_secret_expires_at), '.'] : null], r.secret));
    }, {id: 'rotate'}));
    actions.push(act('Delete…', async () => {
      if (!await confirmAction('Delete this endpoint with its deliveries and attempts? This cannot be undone.', 'Delete')) return;
      await api('DELETE', path);
      location.hash = '#/endpoints';
    }, {class: 'danger', id: 'delete'}));
  }

  let replay = null;
  if (ctx.can('deliveries:write')) replay = replayForm(path, out);
  const test = ctx.can('endpoints:write') ? await testSend(path, out) : null;

  return [
    h('h1', null, 'Endpoint ', h('span', {class: 'mono'}, ep.id)),
    h('p', null, h('a', {href: '#/endpoints'}, '← All endpoints'),
      ctx.can('deliveries:read') ? [' · ', h('a', {href: '#/deliveries?endpoint=' + encodeURIComponent(ep.id), id: 'to-deliveries'}, 'Deliveries')] : null),
    props([
      ['Status', [badge(ep.status), ep.disabled_reason ? ' ' + ep.disabled_reason : '']],
      ['Type', ep.type],
      isBroker(ep.type) ? ['Broker config', h('pre', {id: 'broker-config'}, pretty(JSON.stringify(ep.config)))] : ['URL', h('span', {class: 'mono'}, ep.url)],
      ['Tenant', ep.tenant || '—'],
      ['Description', ep.description || '—'],
      ['Name', ep.name || '—'],
      ['Event types', ep.event_types.join(', ')],
      ['Streams', ep.streams.join(', ')],
      ['Failures in a row', String(ep.consecutive_failures)],
      ['Last success', time(ep.last_success_at)],
      ['Last failure', time(ep.last_failure_at)],
      ['Last error', ep.last_error || '—'],
      ['Disabled at', time(ep.disabled_at)],
      ['Retry schedule', ep.retry_schedule.join(', ')],
      ['Filter', ep.filter === null ? '—' : h('pre', {id: 'endpoint-filter'}, pretty(JSON.stringify(ep.filter)))],
      ['Custom headers', Object.keys(ep.headers).length ? h('span', {id: 'endpoint-headers'}, Object.keys(ep.headers).sort().join(', '), h('span', {class: 'muted'}, ' (values are write-only)')) : '—'],
      ['Sending', `rate limit ${ep.rate_limit ? ep.rate_limit + '/s' : 'none'} · max in flight ${ep.max_in_flight || 'default'} · ordering ${ep.ordering || 'none'}` +
        (ep.batch ? ` · batches of up to ${ep.batch.max_events}, waiting ${ep.batch.max_wait_ms} ms` : '') +
        ` · profile ${ep.profile} · failure policy ${ep.failure_policy} · timeout ${ep.timeout_ms} ms`],
      ['Created', time(ep.created_at)],
    ]),
    h('h2', null, 'Health'),
    healthView(ep.health),
    actions.length ? h('div', {class: 'actions'}, actions) : null,
    test,
    replay ? [h('h2', null, 'Replay'), replay] : null,
    out,
  ];
}

// healthView shows the endpoint's recent attempts, breaker and backlog.
function healthView(hl) {
  if (!hl) return null;
  const ms = v => v === null ? '—' : `${v} ms`;
  return h('div', {id: 'health'}, props([
    ['Success rate', hl.success_rate === null ? 'no attempt yet'
      : `${(hl.success_rate * 100).toFixed(1)}% of the last ${hl.attempts} attempts`],
    ['Latency', hl.attempts ? `p50 ${ms(hl.latency_p50_ms)} · p99 ${ms(hl.latency_p99_ms)}` : '—'],
    ['Breaker', [badge(hl.breaker), ` ${hl.consecutive_failures} of ${hl.breaker_threshold} failures in a row`]],
    ['Backlog', h('span', {id: 'endpoint-backlog'}, `${hl.backlog} waiting (${hl.pending} pending, ${hl.failed} failed and retrying)`)],
  ]));
}

// rfc3339 is a datetime-local value, read in the viewer's zone, as UTC
// RFC 3339 ('' when empty, null when not a time).
function rfc3339(value) {
  if (!value) return '';
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? null : at.toISOString().replace(/\.\d+Z$/, 'Z');
}

// replayForm starts a replay of a range after a confirmation, then shows
// the job's progress until it is done.
function replayForm(path, out) {
  const since = h('input', {type: 'datetime-local', name: 'since', required: true, step: 1});
  const until = h('input', {type: 'datetime-local', name: 'until', step: 1});
  const which = h('select', {name: 'status'},
    h('option', {value: ''}, 'every matching event'),
    h('option', {value: 'exhausted'}, 'only failed deliveries (dead letters)'),
    h('option', {value: 'failed'}, 'only deliveries still retrying'));
  const form = h('form', {class: 'inline', id: 'replay'},
    field('Replay since (your time zone)', since), field('Until (optional, excluded)', until), field('What', which),
    h('button', {type: 'submit'}, 'Replay…'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const from = rfc3339(since.value), to = rfc3339(until.value);
    if (!from || to === null) return;
    const body = {since: from};
    if (to) body.until = to;
    if (which.value) body.status = which.value;
    const range = `from ${new Date(from).toLocaleString()}` + (to ? ` until ${new Date(to).toLocaleString()}` : ' on');
    const what = which.value === 'exhausted' ? `Make every dead letter created ${range} pending again?`
      : which.value === 'failed' ? `Retry now every delivery still retrying created ${range}?`
        : `Queue a new delivery to this endpoint of every matching event ${range}? Events with a pending delivery are skipped.`;
    if (!await confirmAction(what, 'Replay')) return;
    try {
      await follow(await api('POST', path + '/replay', body), out);
    } catch (e) {
      clear(out, errorBox(e));
    }
  });
  return form;
}

// follow shows a replay job's progress, polling it until it is done.
async function follow(job, out) {
  const status = h('p', {id: 'replay-progress', class: 'notice'});
  clear(out, status);
  for (;;) {
    status.dataset.state = job.state;
    status.dataset.queued = job.queued;
    status.dataset.total = job.total;
    const counts = `${job.queued} of ${job.total} queued`;
    status.textContent = job.state === 'running' ? `Replay ${job.id} is running: ${counts}.`
      : job.state === 'done' ? `Replay ${job.id} is done: ${counts}.` + (job.truncated ? ' More matched than one replay queues: replay again from a later time.' : '')
        : `Replay ${job.id} failed after ${counts}: ${job.error || 'no reason given'}.`;
    if (job.state !== 'running' || !status.isConnected) return;
    await new Promise(resolve => setTimeout(resolve, 500));
    job = await api('GET', '/_herald/v1/replays/' + encodeURIComponent(job.id));
  }
}

// edit is the form of an endpoint's changes.
async function edit(ctx, id) {
  const ep = await api('GET', '/_herald/v1/endpoints/' + encodeURIComponent(id));
  return [
    h('h1', null, 'Edit endpoint ', h('span', {class: 'mono'}, ep.id)),
    h('p', null, h('a', {href: '#/endpoints/' + encodeURIComponent(ep.id)}, '← The endpoint')),
    endpointForm(ctx, ep, (saved, out) => {
      clear(out, h('p', {class: 'notice', id: 'saved'}, 'Saved.',
        saved.dropped_headers && saved.dropped_headers.length
          ? ` The URL moved to another origin, so the values of ${saved.dropped_headers.join(', ')} were dropped: set them again.` : ''));
    }),
  ];
}

export function endpoints(ctx, id, sub) {
  if (id && sub === 'edit' && ctx.can('endpoints:write')) return edit(ctx, id);
  return id ? detail(ctx, id) : list(ctx);
}
