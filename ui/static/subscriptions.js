// Webhook subscriptions and their consumers: list, create (the webhook
// secret shown once) and delete subscriptions; a subscription's consumers
// with their state, lag and why one is stuck; a subscription of the
// reserved API looked up by id, read-only.
import {api, query, streamTail} from './api.js';
import {h, clear, badge, table, pagedTable, empty, errorBox, field, time, props, idText, shownOnce} from './dom.js';
import {onSubmit, confirmedButton} from './forms.js';

// docsURL is the page that describes subscriptions.
const docsURL = 'https://github.com/heraldstreams/herald/blob/main/docs/subscriptions.md';

// What each timer of next_deadline_reason is.
const deadlineReasons = {
  wake_timeout: 'the end of the delivery attempt, if the webhook has not answered',
  retry: 'the next delivery attempt, after a failed one',
  liveness: 'the liveness timeout: the consumer goes idle unless it calls back',
};

const subLink = id => idText(id, '#/subscriptions/' + encodeURIComponent(id));

// lastWake says how the consumer's last wake went.
function lastWake(c) {
  if (!c.wake_id) return 'No wake yet.';
  if (c.failing_since) return ['Failing: every delivery attempt since ', time(c.failing_since), ' failed.'];
  if (c.state === 'WAKING') return `Waiting for the webhook's answer to delivery attempt ${c.attempts}.`;
  return 'Delivered: the last delivery attempt succeeded.';
}

// position is an offset's byte position: Herald's offsets are the
// position as 32 digits split by "_" (docs/protocol.md, Offsets); -1 is
// the start. null for anything else.
function position(offset) {
  if (offset === '-1') return 0;
  return /^\d{16}_\d{16}$/.test(offset || '') ? Number(offset.replace('_', '')) : null;
}

// lagOf measures how far a consumer is behind: the bytes after each
// stream's acked offset up to its tail (tails: a HEAD of each stream,
// null when it is gone), and how many streams have any.
function lagOf(streams, tails) {
  let bytes = 0;
  let behind = 0;
  streams.forEach((s, i) => {
    const tail = position(tails[i]);
    const acked = position(s.acked);
    if (tail === null || acked === null || tail <= acked) return;
    bytes += tail - acked;
    behind++;
  });
  return {bytes, behind};
}

// lagText says a lag in words.
function lagText(lag, streams) {
  if (!lag.behind) return 'none: acked to the tail';
  return `${lag.bytes} bytes on ${lag.behind} of ${streams} stream${streams === 1 ? '' : 's'}`;
}

// onSight runs a cell's measure once the cell is on screen: a page
// holds up to 1000 consumers, and measuring a lag takes a HEAD of each
// of the consumer's streams, so only the rows someone looks at are
// measured.
const pending = new WeakMap();
const sight = new IntersectionObserver(entries => {
  for (const e of entries) {
    if (!e.isIntersecting) continue;
    sight.unobserve(e.target);
    const measure = pending.get(e.target);
    pending.delete(e.target);
    if (measure) measure();
  }
});

// lagCell is a consumer's lag, measured once the cell is on screen and
// its streams' tails are in.
function lagCell(c) {
  const td = h('td', {class: 'lag'}, h('span', {class: 'muted'}, 'measuring…'));
  pending.set(td, () => Promise.all(c.streams.map(s => streamTail(s.path).catch(() => null))).then(tails => {
    const lag = lagOf(c.streams, tails);
    td.dataset.bytes = String(lag.bytes);
    clear(td, lag.behind ? h('span', {class: 'badge warn'}, lagText(lag, c.streams.length)) : lagText(lag, c.streams.length));
  }));
  sight.observe(td);
  return td;
}

// progress says whether a consumer makes progress: stuck (woken again
// and again without an ack, with Herald's reason), failing, or fine.
function progress(c) {
  if (c.stuck) return h('span', {class: 'stuck-mark'}, h('span', {class: 'badge bad'}, 'stuck'), ' ', c.stuck_reason);
  if (c.failing_since) return ['failing since ', time(c.failing_since)];
  return h('span', {class: 'muted'}, 'not stuck');
}

// consumerDetail shows one consumer: each stream's acked offset against
// the stream's tail (a HEAD of it), the streams with pending work, the
// next deadline and why, and how its last wake went.
function consumerDetail(id, cell) {
  return async () => {
    clear(cell, h('p', {class: 'muted', role: 'status'}, 'Loading…'));
    try {
      const c = await api('GET', '/_herald/v1/consumers/' + id);
      const tails = await Promise.all(c.streams.map(s => streamTail(s.path)));
      const streams = c.streams.map((s, i) => ({...s, tail: tails[i]}));
      const pending = streams.filter(s => s.tail && s.tail !== s.acked).length;
      clear(cell,
        h('h2', null, 'Consumer ', h('span', {class: 'mono'}, c.consumer_id)),
        props([
          ['State', badge(c.state)],
          ['Epoch', String(c.epoch)],
          ['Wake', c.wake_id ? h('span', {class: 'mono'}, c.wake_id) : '—'],
          ['Attempts', String(c.attempts)],
          ['Next deadline', c.next_deadline
            ? h('span', {id: 'consumer-deadline'}, time(c.next_deadline), c.next_deadline_reason ? ' — ' + (deadlineReasons[c.next_deadline_reason] || c.next_deadline_reason) : '')
            : h('span', {id: 'consumer-deadline'}, 'None armed')],
          ['Last wake', h('span', {id: 'consumer-last-wake'}, lastWake(c))],
          ['Progress', h('span', {id: 'consumer-stuck'}, c.stuck ? [h('span', {class: 'badge warn'}, 'stuck'), ' ' + c.stuck_reason] : 'Not stuck')],
          ['Lag', h('span', {id: 'consumer-lag'}, lagText(lagOf(c.streams, tails), c.streams.length))],
          ['Pending work', h('span', {id: 'consumer-pending'}, pending ? `${pending} of ${streams.length} streams have data after the acked offset` : 'None: every stream is acked to its tail')],
        ]),
        table('Streams: acked offset against the tail', ['Stream', 'Acked', 'Told in this wake', 'Tail', 'Pending'], streams,
          s => [h('td', {class: 'mono'}, s.path), h('td', {class: 'mono'}, s.acked), h('td', {class: 'mono'}, s.notified || '—'),
            h('td', {class: 'mono'}, s.tail === null ? 'deleted' : s.tail),
            s.tail && s.tail !== s.acked ? h('span', {class: 'badge warn'}, 'pending') : h('span', {class: 'badge ok'}, 'acked')]));
    } catch (e) {
      clear(cell, errorBox(e));
    }
  };
}

// deleteButton deletes subscription s, consumers included, once
// confirmed, then calls done.
function deleteButton(s, out, done) {
  return confirmedButton('Delete…', {class: 'danger delete-subscription', 'data-id': s.subscription_id},
    `Delete subscription ${s.subscription_id}? Its consumers are removed at once and its webhook is not woken again.`, 'Delete',
    async () => {
      await api('DELETE', '/**' + query({subscription: s.subscription_id}));
      await done();
    }, out);
}

async function consumers(ctx, id) {
  const sub = await api('GET', '/**' + query({subscription: id}));
  const detail = h('div', {id: 'consumer-detail'});
  const out = h('div', {role: 'status'});
  let stuck = 0;
  const list = await pagedTable({
    id: 'consumer-list',
    caption: 'Consumers (one per stream the pattern matched)',
    headers: ['Consumer', 'Stream', 'State', 'Progress', 'Lag', 'Epoch', 'Attempts', 'Next deadline', ''],
    emptyText: 'No consumer yet: one appears when a stream matching the pattern gets data.',
    fetchPage: async cursor => {
      const page = await api('GET', '/_herald/v1/subscriptions/' + encodeURIComponent(id) + '/consumers' + query({limit: 1000, cursor}));
      stuck += page.data.filter(c => c.stuck).length;
      return page;
    },
    cells: c => [h('td', {class: c.stuck ? 'stuck' : null}, idText(c.consumer_id)), h('td', {class: 'mono'}, c.primary_stream), badge(c.state),
      progress(c), lagCell(c), String(c.epoch), String(c.attempts), time(c.next_deadline),
      h('button', {type: 'button', class: 'consumer-details', onclick: consumerDetail(c.consumer_id, detail)}, 'Details')],
  });
  return [
    h('h1', null, 'Subscription ', h('span', {class: 'mono'}, id)),
    h('p', null, h('a', {href: '#/subscriptions'}, '← All subscriptions')),
    props([
      ['Pattern', h('span', {class: 'mono'}, sub.pattern)],
      ['Webhook', h('span', {class: 'mono'}, sub.webhook)],
      ['Description', sub.description || '—'],
    ]),
    ctx.can('subscriptions:write') ? h('div', {class: 'actions'}, deleteButton(sub, out, () => { location.hash = '#/subscriptions'; })) : null,
    out,
    stuck ? h('p', {class: 'error', id: 'stuck-summary'}, `${stuck} consumer${stuck === 1 ? ' is' : 's are'} stuck: woken again and again without an ack. Their webhook is called but never acks; see the reason beside each.`) : null,
    list,
    detail,
  ];
}

// createForm makes a subscription: PUT <pattern>?subscription=<id>.
function createForm(onCreated) {
  const inputs = {
    id: h('input', {type: 'text', name: 'id', required: true, maxlength: 128, pattern: '[A-Za-z0-9._~\\-]+', spellcheck: 'false', placeholder: 'agents'}),
    pattern: h('input', {type: 'text', name: 'pattern', required: true, spellcheck: 'false', placeholder: '/agents/**'}),
    webhook: h('input', {type: 'url', name: 'webhook', required: true, spellcheck: 'false', placeholder: 'https://example.com/wake'}),
    description: h('input', {type: 'text', name: 'description'}),
  };
  const out = h('div', {id: 'subscription-created'});
  const form = h('form', {class: 'inline', id: 'create-subscription'},
    field('Id (letters, digits, . _ ~ -)', inputs.id), field('Stream pattern', inputs.pattern, true),
    field('Webhook URL', inputs.webhook, true), field('Description (optional)', inputs.description, true),
    h('button', {type: 'submit', class: 'primary'}, 'Create subscription'));
  onSubmit(form, inputs, out, async () => {
    const body = {webhook: inputs.webhook.value.trim()};
    if (inputs.description.value.trim()) body.description = inputs.description.value.trim();
    const s = await api('PUT', inputs.pattern.value.trim() + query({subscription: inputs.id.value.trim()}), body);
    form.reset();
    clear(out, h('div', {class: 'notice', role: 'status'},
      h('p', null, 'Created subscription ', subLink(s.subscription_id), '.'),
      s.webhook_secret ? shownOnce('Webhook secret', s.webhook_secret, 'subscription-secret')
        : h('p', null, 'It already existed with this configuration: its secret was shown when it was created.')));
    await onCreated();
  }, {INVALID_SUBSCRIPTION_ID: 'id', SUBSCRIPTION_EXISTS: 'id', INVALID_PATTERN: 'pattern', FORBIDDEN: 'pattern', URL_REFUSED: 'webhook', INVALID_REQUEST: 'webhook'});
  return [h('h2', null, 'New subscription'),
    h('p', {class: 'muted'}, 'Herald wakes the webhook, signed with the subscription\'s secret, when a stream matching the pattern gets data.'),
    form, out];
}

// reservedLookup reads a subscription of the reserved API
// (<stream root>/__ds/subscriptions/<id>) by its address, read-only: that
// API has no list.
function reservedLookup() {
  const addr = h('input', {type: 'text', name: 'reserved', id: 'reserved-address', required: true, spellcheck: 'false', value: '/__ds/subscriptions/'});
  const out = h('div', {id: 'reserved-subscription'});
  const form = h('form', {class: 'inline', id: 'reserved-lookup'},
    field('Address (<stream root>/__ds/subscriptions/<id>)', addr, true), h('button', {type: 'submit'}, 'Look up'));
  onSubmit(form, {}, out, async () => {
    const s = await api('GET', addr.value.trim());
    clear(out, props([
      ['Subscription', h('span', {class: 'mono'}, s.subscription_id)],
      ['Type', s.type],
      ['Status', badge(s.status)],
      ['Pattern', s.pattern ? h('span', {class: 'mono'}, s.pattern) : '—'],
      ['Webhook', s.webhook ? h('span', {class: 'mono'}, s.webhook.url) : '—'],
      ['Wake stream', s.wake_stream ? h('span', {class: 'mono'}, s.wake_stream) : '—'],
      ['Generation', String(s.generation)],
      ['Description', s.description || '—'],
      ['Created', time(s.created_at)],
    ]), s.streams.length ? table('Linked streams', ['Stream', 'Link', 'Acked'], s.streams,
      l => [h('td', {class: 'mono'}, l.path), l.link_type, h('td', {class: 'mono'}, l.acked_offset)]) : empty('No stream linked yet.'));
  });
  return [h('h2', null, 'Reserved-API subscriptions'),
    h('p', {class: 'muted'}, 'Subscriptions of the Durable Streams reserved API (webhook or pull-wake) are read here by address; that API lists none.'),
    form, out];
}

export async function subscriptions(ctx, id) {
  if (id) return consumers(ctx, id);
  const pattern = h('input', {type: 'text', name: 'pattern', value: ctx.params.get('pattern') || '/**', spellcheck: 'false'});
  const out = h('div', {id: 'subscription-list'});
  const problem = h('div', {role: 'status'});
  const load = async () => {
    clear(out, h('p', {class: 'muted', role: 'status'}, 'Loading…'));
    try {
      const list = (await api('GET', pattern.value.trim() + '?subscriptions')).subscriptions || [];
      const headers = ['Subscription', 'Pattern', 'Webhook', 'Description'];
      if (ctx.can('subscriptions:write')) headers.push('');
      clear(out, list.length ? table('Subscriptions', headers, list,
        s => [subLink(s.subscription_id), h('td', {class: 'mono'}, s.pattern), h('td', {class: 'mono'}, s.webhook), s.description || '—',
          ctx.can('subscriptions:write') ? deleteButton(s, problem, load) : null].filter(c => c !== null))
        : empty(['No subscription under this pattern. ',
          ctx.can('subscriptions:write') ? 'Create one below, or ' : '',
          'see ', h('a', {href: docsURL, rel: 'noreferrer', id: 'subscriptions-docs'}, 'Webhook subscriptions'), ' for how they work.']));
    } catch (e) {
      clear(out, errorBox(e));
    }
  };
  const form = h('form', {class: 'inline', id: 'subscription-filter'}, field('Stream pattern', pattern, true), h('button', {type: 'submit', class: 'primary'}, 'List'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    load();
  });
  await load();
  return [h('h1', null, 'Subscriptions'), form, problem, out,
    ctx.can('subscriptions:write') ? createForm(load) : null,
    reservedLookup()];
}
