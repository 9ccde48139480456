// Webhook subscriptions and their consumers.
import {api, streamTail} from './api.js';
import {h, clear, badge, table, empty, errorBox, field, time, props} from './dom.js';

// What each timer of next_deadline_reason is.
const deadlineReasons = {
  wake_timeout: 'the end of the delivery attempt, if the webhook has not answered',
  retry: 'the next delivery attempt, after a failed one',
  liveness: 'the liveness timeout: the consumer goes idle unless it calls back',
};

// lastWake says how the consumer's last wake went.
function lastWake(c) {
  if (!c.wake_id) return 'No wake yet.';
  if (c.failing_since) return ['Failing: every delivery attempt since ', time(c.failing_since), ' failed.'];
  if (c.state === 'WAKING') return `Waiting for the webhook's answer to delivery attempt ${c.attempts}.`;
  return 'Delivered: the last delivery attempt succeeded.';
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

async function consumers(id) {
  const list = await api('GET', '/_herald/v1/subscriptions/' + encodeURIComponent(id) + '/consumers?limit=1000');
  const detail = h('div', {id: 'consumer-detail'});
  return [
    h('h1', null, 'Subscription ', h('span', {class: 'mono'}, id)),
    h('p', null, h('a', {href: '#/subscriptions'}, '← All subscriptions')),
    list.data.length ? table('Consumers (one per stream the pattern matched)', ['Consumer', 'Stream', 'State', 'Epoch', 'Attempts', 'Failing since', 'Next deadline', ''], list.data,
      c => [h('td', {class: 'mono'}, c.consumer_id), h('td', {class: 'mono'}, c.primary_stream), badge(c.state), String(c.epoch), String(c.attempts),
        time(c.failing_since), time(c.next_deadline),
        h('button', {type: 'button', class: 'consumer-details', onclick: consumerDetail(c.consumer_id, detail)}, 'Details')])
      : empty('No consumer yet: one appears when a stream matching the pattern gets data.'),
    list.next_cursor ? h('p', {class: 'muted'}, 'Showing the first 1000 consumers.') : null,
    detail,
  ];
}

export async function subscriptions(ctx, id) {
  if (id) return consumers(id);
  const pattern = h('input', {type: 'text', name: 'pattern', value: ctx.params.get('pattern') || '/**', spellcheck: 'false'});
  const out = h('div', {id: 'subscription-list'});
  const load = async () => {
    clear(out, h('p', {class: 'muted', role: 'status'}, 'Loading…'));
    try {
      const list = (await api('GET', pattern.value.trim() + '?subscriptions')).subscriptions || [];
      clear(out, list.length ? table('Subscriptions', ['Subscription', 'Pattern', 'Webhook', 'Description'], list,
        s => [h('a', {href: '#/subscriptions/' + encodeURIComponent(s.subscription_id), class: 'mono'}, s.subscription_id),
          h('td', {class: 'mono'}, s.pattern), h('td', {class: 'mono'}, s.webhook), s.description || '—'])
        : empty('No subscription under this pattern. Create one with PUT <pattern>?subscription=<id> (see the README, Webhook subscriptions).'));
    } catch (e) {
      clear(out, errorBox(e));
    }
  };
  const form = h('form', {class: 'inline'}, field('Stream pattern', pattern, true), h('button', {type: 'submit', class: 'primary'}, 'List'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    load();
  });
  await load();
  return [h('h1', null, 'Subscriptions'), form, out];
}
