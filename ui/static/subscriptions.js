// Webhook subscriptions and their consumers.
import {api} from './api.js';
import {h, clear, badge, table, empty, errorBox, field, time, pretty} from './dom.js';

function consumerDetail(id, cell) {
  return async () => {
    try {
      const c = await api('GET', '/_herald/v1/consumers/' + id);
      clear(cell, h('pre', null, pretty(JSON.stringify(c))));
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
        h('button', {type: 'button', onclick: consumerDetail(c.consumer_id, detail)}, 'Details')])
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
