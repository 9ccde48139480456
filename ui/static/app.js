// The dashboard's shell: sign-in, the views the key's scopes allow, and
// routing by the URL's fragment (#/endpoints/ep_…?status=failed).
import {api, session} from './api.js';
import {h, clear, errorBox, field} from './dom.js';
import {overview} from './overview.js';
import {streams} from './streams.js';
import {subscriptions} from './subscriptions.js';
import {endpoints} from './endpoints.js';
import {deliveries} from './deliveries.js';
import {eventTypes} from './eventtypes.js';
import {keys, keysNeedAdmin} from './keys.js';
import {events} from './events.js';
import {keyFromFragment, offerKey} from './keylink.js';
import {applyBrand, brandName} from './brand.js';

// can reports whether the signed-in credential holds scope.
export function can(me, scope) {
  return me.admin || me.scopes.includes(scope);
}

// Each view renders what is true when it is loaded, shows when that was
// and has a Refresh button; every (ms) refreshes it on its own while the
// tab is visible. The streams view reads live instead.
const views = [
  {name: 'overview', title: 'Overview', allowed: me => me.admin && !me.tenant, render: overview, every: 30000},
  {name: 'streams', title: 'Streams', allowed: me => can(me, 'streams:read'), render: streams, live: true},
  {name: 'subscriptions', title: 'Subscriptions', allowed: me => can(me, 'subscriptions:read'), render: subscriptions},
  {name: 'endpoints', title: 'Endpoints', allowed: me => can(me, 'endpoints:read'), render: endpoints},
  {name: 'events', title: 'Event log', allowed: me => can(me, 'deliveries:read'), render: events},
  {name: 'deliveries', title: 'Deliveries', allowed: me => can(me, 'deliveries:read') && can(me, 'endpoints:read'), render: deliveries},
  {name: 'event-types', title: 'Event types', allowed: me => can(me, 'endpoints:read'), render: eventTypes},
  {name: 'keys', title: 'Keys', allowed: me => me.admin, render: keys, refused: keysNeedAdmin},
];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
let me = null;
let current = null; // the shown view's AbortController: ends its live reads and its refresh timer
let dueWhileHidden = false; // the shown view's refresh came due while the tab was hidden

async function start() {
  const offered = keyFromFragment();
  if (offered !== null) {
    await fromLink(offered);
    return;
  }
  try {
    me = await api('GET', '/_herald/v1/whoami');
  } catch (e) {
    me = null;
    if (e.status !== 401) {
      signIn(e);
      return;
    }
    signIn(session.key() ? e : null);
    return;
  }
  shell();
  route(null);
}

// fromLink offers the key a link carried (see keylink.js): the session
// in place, if any, stays until the visitor chooses the link's key.
async function fromLink(offered) {
  if (current) current.abort();
  let signedIn = null;
  if (session.key() === offered) {
    start();
    return;
  }
  if (session.key()) {
    try {
      signedIn = await api('GET', '/_herald/v1/whoami');
    } catch {
      signedIn = null; // an expired or revoked session: nothing to keep
    }
  }
  me = null;
  nav.hidden = true;
  who.hidden = true;
  if (await offerKey(main, offered, signedIn)) session.set(offered);
  start();
}

function signIn(err) {
  session.clear();
  nav.hidden = true;
  who.hidden = true;
  const key = h('input', {type: 'password', name: 'key', autocomplete: 'off', required: true, spellcheck: 'false'});
  const form = h('form', {class: 'signin card', id: 'signin'},
    h('h1', null, 'Sign in to Herald'),
    h('p', {class: 'muted'}, 'Paste an API key. It is kept only in this browser tab and sent to Herald with each request; closing the tab forgets it.'),
    err ? errorBox(err) : null,
    field('API key', key),
    h('button', {type: 'submit', class: 'primary'}, 'Sign in'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    session.set(key.value.trim());
    start();
  });
  clear(main, form);
  document.title = 'Sign in · ' + brandName();
  key.focus();
}

function shell() {
  const allowed = views.filter(v => v.allowed(me));
  clear(nav, h('ul', null, allowed.map(v => h('li', null, h('a', {href: '#/' + v.name, 'data-view': v.name}, v.title)))));
  nav.hidden = false;
  const tenant = me.tenant ? ['Tenant portal: ', h('strong', {id: 'tenant'}, me.tenant)] : me.admin ? 'Operator' : '';
  clear(who,
    h('span', null, tenant),
    h('span', {class: 'mono', title: 'Scopes: ' + (me.admin ? 'admin (every scope)' : me.scopes.join(', '))}, me.id),
    me.auth_enabled ? h('button', {type: 'button', id: 'signout', onclick: signOut}, 'Sign out') : h('span', {class: 'badge warn'}, 'access control off'));
  who.hidden = false;
}

function signOut() {
  if (current) current.abort();
  session.clear();
  me = null;
  location.hash = '#/';
  signIn(null);
}

// parseRoute reads #/view/arg?query.
function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, q] = raw.split('?', 2);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return {name: parts[0] || '', args: parts.slice(1), params: new URLSearchParams(q || '')};
}

// loadedBar says when the view was loaded, with its Refresh button.
function loadedBar(view) {
  const now = new Date();
  return h('p', {class: 'loaded muted', id: 'loaded', 'data-loaded': String(now.getTime())},
    'Loaded at ', h('time', {datetime: now.toISOString()}, now.toLocaleTimeString()),
    view.every ? ` · refreshes every ${view.every / 1000} s while shown` : '', ' ',
    h('button', {type: 'button', id: 'refresh', onclick: ev => {
      ev.currentTarget.disabled = true;
      ev.currentTarget.textContent = 'Refreshing…';
      route('button');
    }}, 'Refresh'));
}

// schedule refreshes view after view.every while the tab is visible; a
// refresh that comes due while it is hidden waits until it is shown.
function schedule(view, signal) {
  if (!view.every) return;
  const timer = setTimeout(() => {
    if (signal.aborted) return;
    if (document.visibilityState === 'visible') route('auto');
    else dueWhileHidden = true;
  }, view.every);
  signal.addEventListener('abort', () => clearTimeout(timer));
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && dueWhileHidden) route('auto');
});

// route shows the view the URL's fragment names. refresh is how a shown
// view is loaded again: 'button' (its Refresh button) or 'auto' (its
// timer); those keep the view on screen until the new one is in, and
// keep the keyboard's place. Otherwise focus moves to the new view's
// heading.
async function route(refresh) {
  if (!me) return;
  if (current) current.abort();
  current = new AbortController();
  dueWhileHidden = false;
  const allowed = views.filter(v => v.allowed(me));
  const r = parseRoute();
  let view = allowed.find(v => v.name === r.name);
  const refused = views.find(v => v.name === r.name && v.refused && !v.allowed(me));
  if (refused) {
    // A view the key may not use, opened by its address: say why
    // rather than show another view or a failed request.
    clear(main, refused.refused(me));
    document.title = refused.title + ' · Herald';
    main.querySelector('h1').tabIndex = -1;
    main.querySelector('h1').focus();
    return;
  }
  if (!view) {
    if (!allowed.length) {
      clear(main, h('h1', null, 'Nothing to show'), errorBox(new Error('This key has none of the scopes the dashboard uses (endpoints:read, deliveries:read, streams:read, subscriptions:read). Ask an administrator for a key with them.')));
      return;
    }
    view = allowed[0];
    history.replaceState(null, '', '#/' + view.name);
  }
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.view === view.name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = view.title + ' · ' + brandName();
  const ctx = {me, signal: current.signal, can: scope => can(me, scope), params: r.params};
  const focusWasInMain = main.contains(document.activeElement) && document.activeElement !== main;
  if (!refresh) {
    clear(main, h('p', {class: 'muted', role: 'status'}, 'Loading…'));
    main.focus({preventScroll: true});
  }
  let content;
  try {
    content = await view.render(ctx, ...r.args);
  } catch (e) {
    if (e.name === 'AbortError' || ctx.signal.aborted) return;
    if (e.status === 401) {
      signIn(e);
      return;
    }
    content = [h('h1', null, view.title), errorBox(e)];
  }
  if (ctx.signal.aborted) return;
  clear(main, content);
  const heading = main.querySelector('h1');
  if (!view.live) heading.after(loadedBar(view));
  heading.tabIndex = -1;
  if (refresh === 'button') document.getElementById('refresh').focus({preventScroll: true});
  else if (!refresh || focusWasInMain) heading.focus({preventScroll: refresh === 'auto'});
  schedule(view, ctx.signal);
}

window.addEventListener('hashchange', () => {
  if (/^#key=/.test(location.hash)) {
    start();
    return;
  }
  route(null);
});
applyBrand().finally(start);
