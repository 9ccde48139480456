// A key handed over in a link (#key=hk_…, how a platform hands the tenant
// portal its key) signs in only once the visitor has seen who it is and
// said yes: a link is easy to send, and one to another tenant's key would
// otherwise sign a visitor into that tenant without their knowing, or
// quietly replace the session they are in.
import {whoamiOf, ApiError} from './api.js';
import {h, clear, errorBox, props, time} from './dom.js';

// keyFromFragment takes a key given in the URL's fragment out of the
// address bar and the history at once (so it is neither shown, bookmarked
// nor shared by accident) and returns it; null when there is none.
export function keyFromFragment() {
  const m = /^#key=([^&]+)/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, '', location.pathname + location.search + '#/');
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return '';
  }
}

// describe is who a whoami answer is, in words.
function describe(who) {
  return [
    ['Tenant', who.tenant ? h('strong', {id: 'key-offer-tenant'}, who.tenant) : h('strong', {id: 'key-offer-tenant'}, 'none: every tenant')],
    ['Scopes', h('span', {id: 'key-offer-scopes'}, who.admin ? 'admin (every scope)' : who.scopes.join(', ') || 'none')],
    ['Paths', who.paths.length ? who.paths.join(', ') : 'every path'],
    ['Key', h('span', {class: 'mono'}, who.id)],
    ['Expires', who.expires_at ? time(who.expires_at) : 'never'],
  ];
}

// offerKey shows, in main, who the offered key would sign in as (asked of
// Herald with that key, which is not kept) and, when current (the
// signed-in session's whoami, or null) is someone else, that signing in
// replaces it. It resolves true when the visitor signs in with the key,
// false when they keep what they had.
export async function offerKey(main, offered, current) {
  let who = null;
  let err = null;
  try {
    if (!offered) throw new ApiError(400, 'INVALID_KEY', 'The link holds no key.');
    who = await whoamiOf(offered);
  } catch (e) {
    err = e;
  }
  return new Promise(resolve => {
    const keep = current ? 'Keep my session' : 'Do not sign in';
    const answer = yes => ev => {
      ev.preventDefault();
      resolve(yes);
    };
    const card = h('form', {class: 'signin card', id: 'key-offer', onsubmit: answer(true)},
      h('h1', {tabindex: '-1'}, 'Sign in from a link?'),
      err
        ? [h('p', null, 'The link you opened holds a key that cannot sign in.'), errorBox(err)]
        : [h('p', null, 'The link you opened signs in to Herald with a key of its own. Sign in only if you expected this link and trust who sent it; you will then see and act as:'),
          props(describe(who))],
      current ? h('p', {id: 'key-offer-current', class: 'warn'},
        'You are signed in as ', h('strong', null, current.tenant ? 'tenant ' + current.tenant : current.admin ? 'an operator' : current.id),
        ' (', h('span', {class: 'mono'}, current.id), '). Signing in with the link ends that session.') : null,
      h('div', {class: 'actions'},
        h('button', {type: 'button', id: 'key-offer-reject', onclick: answer(false)}, keep),
        err ? null : h('button', {type: 'submit', id: 'key-offer-accept', class: 'primary'},
          'Sign in as ' + (who.tenant ? 'tenant ' + who.tenant : who.id))));
    clear(main, card);
    document.title = 'Sign in from a link? · Herald';
    card.querySelector('h1').focus();
  });
}
