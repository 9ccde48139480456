// The operators' overview: health, endpoints that need attention,
// stuck consumers, and the last hour's activity.
import {api, listAll} from './api.js';
import {h, badge, table, empty, errorBox, time} from './dom.js';

const svgNS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// chart is a bar chart of one series' per-minute counts.
function chart(name, title, minutes) {
  const values = minutes.map(m => m.counts[name] || 0);
  const total = values.reduce((a, b) => a + b, 0);
  const peak = Math.max(0, ...values);
  const w = 600, ht = 70, bw = w / values.length;
  const label = `${title} per minute over the last hour: ${total} in all, at most ${peak} in one minute (${(peak / 60).toFixed(2)}/s).`;
  const pic = svg('svg', {viewBox: `0 0 ${w} ${ht}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': label});
  values.forEach((v, i) => {
    const bh = peak ? Math.max(1, (v / peak) * (ht - 2)) : 0;
    const r = svg('rect', {x: i * bw + 1, y: ht - bh, width: Math.max(1, bw - 2), height: bh});
    const tip = svg('title', {});
    tip.textContent = `${new Date(minutes[i].start).toLocaleTimeString()}: ${v}`;
    r.append(tip);
    pic.append(r);
  });
  return h('div', {class: 'card chart ' + name, 'data-series': name},
    h('h2', null, title),
    h('p', null, h('span', {class: 'big'}, String(total)), h('span', {class: 'muted'}, ` in the last hour · peak ${(peak / 60).toFixed(2)}/s`)),
    pic);
}

async function health() {
  const check = async path => {
    try {
      const res = await fetch(path, {cache: 'no-store'});
      return (await res.json()).status;
    } catch {
      return 'unavailable';
    }
  };
  const [live, ready] = await Promise.all([check('/_herald/healthz'), check('/_herald/readyz')]);
  return h('div', {class: 'card'}, h('h2', null, 'Health'),
    h('p', null, 'Live ', badge(live), ' Ready ', badge(ready)));
}

// stuckConsumers lists the consumers of up to 50 subscriptions that are
// waiting for their webhook (WAKING) or that Herald marks stuck: woken
// again and again without an ack.
async function stuckConsumers() {
  const subs = (await api('GET', '/**?subscriptions')).subscriptions || [];
  const lists = await Promise.all(subs.slice(0, 50).map(s =>
    api('GET', '/_herald/v1/subscriptions/' + encodeURIComponent(s.subscription_id) + '/consumers?limit=1000').then(l => l.data)));
  return {subs: subs.length, stuck: lists.flat().filter(c => c.state === 'WAKING' || c.stuck)};
}

export async function overview() {
  const [hc, eps, st, cons] = await Promise.all([
    health(),
    listAll('/_herald/v1/endpoints', 5000),
    api('GET', '/_herald/v1/stats'),
    stuckConsumers().catch(e => ({error: e})),
  ]);
  const by = {active: 0, paused: 0, disabled: 0};
  for (const e of eps.items) by[e.status] = (by[e.status] || 0) + 1;
  const attention = eps.items.filter(e => e.status !== 'active' || e.consecutive_failures > 0);
  const epLink = e => h('a', {href: '#/endpoints/' + encodeURIComponent(e.id), class: 'mono'}, e.id);
  return [
    h('h1', null, 'Overview'),
    h('div', {class: 'grid'},
      hc,
      h('div', {class: 'card'}, h('h2', null, 'Endpoints'),
        h('p', null, h('span', {class: 'big', id: 'endpoint-count'}, String(eps.items.length) + (eps.more ? '+' : '')), ' in all'),
        h('p', null, badge('active'), ` ${by.active}  `, badge('paused'), ` ${by.paused}  `, badge('disabled'), ` ${by.disabled}`)),
      h('div', {class: 'card'}, h('h2', null, 'Deliveries waiting'),
        h('p', null, h('span', {class: 'big', id: 'backlog'}, String(st.backlog || 0)), ' pending or retrying, across every endpoint')),
      h('div', {class: 'card'}, h('h2', null, 'Webhook consumers'),
        cons.error ? errorBox(cons.error) : h('p', null, h('span', {class: 'big'}, String(cons.stuck.length)), ` stuck or waking, in ${cons.subs} subscriptions`))),
    h('h2', null, 'Last hour'),
    h('div', {class: 'grid', id: 'charts'},
      chart('appends', 'Appends', st.minutes), chart('wakes', 'Wakes', st.minutes),
      chart('deliveries', 'Deliveries', st.minutes), chart('failures', 'Failed attempts', st.minutes)),
    h('h2', null, 'Endpoints that need attention'),
    h('div', {id: 'attention'}, attention.length ? table('Endpoints paused, disabled by the circuit breaker, or failing', ['Endpoint', 'URL', 'Tenant', 'Status', 'Failures in a row', 'Last error'], attention,
      e => [epLink(e), h('td', {class: 'mono'}, e.url), e.tenant || '—', badge(e.status), String(e.consecutive_failures), e.last_error || '—'])
      : empty('Every endpoint is active and its last attempt succeeded.')),
    h('h2', null, 'Stuck consumers'),
    h('div', {id: 'stuck-consumers'}, cons.error ? errorBox(cons.error) : cons.stuck.length ? table('Consumers woken again and again without an ack, or whose wake has not been claimed', ['Consumer', 'Subscription', 'State', 'Why', 'Epoch', 'Attempts', 'Failing since', 'Next deadline'], cons.stuck,
      c => [h('td', {class: 'mono'}, c.consumer_id), h('a', {href: '#/subscriptions/' + encodeURIComponent(c.subscription_id)}, c.subscription_id), badge(c.state),
        c.stuck_reason || 'waiting for its webhook to answer', String(c.epoch), String(c.attempts), time(c.failing_since), time(c.next_deadline)])
      : empty('No consumer is stuck or waiting for its webhook to answer.')),
  ];
}
