// API keys: list, create (the key shown once), revoke; and portal tokens,
// a tenant's short-lived key for the embedded tenant portal, with the
// snippet that embeds it. The key API needs the admin scope; an admin key
// of a tenant sees and makes keys of its own tenant only.
import {api, query} from './api.js';
import {h, clear, pagedTable, errorBox, field, time, idText, shownOnce, copyButton} from './dom.js';
import {onSubmit, confirmedButton} from './forms.js';

// scopeList is every scope Herald knows, read from its OpenAPI document
// (the Scope schema's enum), so the form offers exactly the server's.
async function scopeList() {
  const doc = await api('GET', '/_herald/v1/openapi.json');
  const scope = doc && doc.components && doc.components.schemas && doc.components.schemas.Scope;
  if (!scope || !Array.isArray(scope.enum)) throw new Error('Herald\'s OpenAPI document lists no scopes: the key form cannot offer them.');
  return scope.enum;
}

// lines splits a list typed one a line or comma-separated.
const lines = text => text.split(/[\n,]/).map(s => s.trim()).filter(Boolean);

// rfc3339 is a datetime-local value, read in the viewer's zone, as UTC
// RFC 3339; '' when empty.
function rfc3339(value) {
  if (!value) return '';
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? value : at.toISOString();
}

function createForm(ctx, scopes, onCreated) {
  const boxes = scopes.map(s => h('input', {type: 'checkbox', name: 'scope', value: s}));
  const scopeSet = h('fieldset', {class: 'scopes', id: 'key-scopes', tabindex: -1},
    h('legend', null, 'Scopes (admin grants every other scope, and these key pages)'),
    boxes.map(b => h('label', {class: 'check'}, b, ' ', b.value)));
  const inputs = {
    scopes: scopeSet,
    tenant: h('input', {type: 'text', name: 'tenant', maxlength: 128, spellcheck: 'false', placeholder: ctx.me.tenant || 'none: every tenant',
      value: ctx.me.tenant || '', readonly: ctx.me.tenant ? true : null}),
    paths: h('textarea', {name: 'paths', rows: 2, spellcheck: 'false', placeholder: 'every path; or /orders/**, /agents/* (one a line or comma-separated)'}),
    expires_at: h('input', {type: 'datetime-local', name: 'expires_at', step: 1}),
    description: h('input', {type: 'text', name: 'description', maxlength: 256}),
  };
  const out = h('div', {id: 'key-created'});
  const form = h('form', {class: 'stack', id: 'create-key'},
    scopeSet,
    h('div', {class: 'inline'},
      field(ctx.me.tenant ? 'Tenant (yours)' : 'Tenant (optional)', inputs.tenant),
      field('Stream paths (optional)', inputs.paths, true),
      field('Expires (your time zone; optional)', inputs.expires_at),
      field('Description', inputs.description, true)),
    h('button', {type: 'submit', class: 'primary'}, 'Create key'));
  onSubmit(form, inputs, out, async () => {
    const body = {scopes: boxes.filter(b => b.checked).map(b => b.value)};
    if (!body.scopes.length) throw Object.assign(new Error('Choose at least one scope.'), {field: 'scopes'});
    if (inputs.tenant.value.trim()) body.tenant = inputs.tenant.value.trim();
    const paths = lines(inputs.paths.value);
    if (paths.length) body.paths = paths;
    if (inputs.expires_at.value) body.expires_at = rfc3339(inputs.expires_at.value);
    if (inputs.description.value.trim()) body.description = inputs.description.value.trim();
    const k = await api('POST', '/_herald/v1/keys', body);
    form.reset();
    clear(out, h('div', {class: 'notice', role: 'status'},
      h('p', null, 'Created key ', h('span', {class: 'mono'}, k.id), ` with ${k.scopes.join(', ')}`, k.tenant ? ` for tenant ${k.tenant}` : '', '.'),
      shownOnce('API key', k.key, 'new-key')));
    await onCreated();
  });
  return [h('h2', null, 'New key'), form, out];
}

// embedSnippet is the HTML that frames the portal at url
// (docs/dashboard.md, Embedding the portal).
export function embedSnippet(url, tenant) {
  return `<iframe src="${url.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}" title="Webhooks of ${tenant.replace(/[<>&"]/g, '')}" width="100%" height="800"></iframe>`;
}

function portalForm(ctx, onMinted) {
  const inputs = {
    tenant: h('input', {type: 'text', name: 'tenant', required: !ctx.me.tenant, maxlength: 128, spellcheck: 'false',
      value: ctx.me.tenant || '', readonly: ctx.me.tenant ? true : null, placeholder: 'acme'}),
    ttl: h('select', {name: 'ttl'}, ['15m', '1h', '4h', '24h'].map(v => h('option', {value: v}, v))),
  };
  const out = h('div', {id: 'portal-token'});
  const form = h('form', {class: 'inline', id: 'mint-portal-token'},
    field('Tenant', inputs.tenant), field('Works for', inputs.ttl),
    h('button', {type: 'submit', class: 'primary'}, 'Mint portal token'));
  onSubmit(form, inputs, out, async () => {
    const body = {ttl: inputs.ttl.value};
    if (inputs.tenant.value.trim()) body.tenant = inputs.tenant.value.trim();
    const p = await api('POST', '/_herald/v1/portal-tokens', body);
    const snippet = embedSnippet(p.url, p.tenant);
    clear(out, h('div', {class: 'notice', role: 'status'},
      h('p', null, 'Portal token ', h('span', {class: 'mono'}, p.id), ` of tenant ${p.tenant}, until `, time(p.expires_at), `: ${p.scopes.join(', ')}.`),
      shownOnce('Portal token', p.token, 'portal-token-value'),
      h('p', null, h('strong', null, 'Portal address'), ' (the token travels in the fragment, never sent to a server)'),
      h('p', {class: 'idbox'}, h('code', {class: 'mono secret-value', id: 'portal-url'}, p.url), copyButton(p.url, 'Copy the portal address')),
      h('p', null, h('strong', null, 'Embed snippet'), ' (allow your origin with --ui-frame-ancestors first)'),
      h('div', {class: 'snippet'}, h('pre', {id: 'portal-snippet'}, snippet), copyButton(snippet, 'Copy the embed snippet'))));
    await onMinted();
  });
  return [h('h2', null, 'Portal tokens'),
    h('p', {class: 'muted'}, 'A portal token opens the tenant portal for one tenant: its endpoints and deliveries only. Mint one on your server each time the page that frames the portal loads; it is listed above like any key and revoked the same way.'),
    form, out];
}

export async function keys(ctx) {
  const tenantFilter = h('input', {type: 'text', name: 'tenant', id: 'key-tenant-filter', spellcheck: 'false', value: ctx.params.get('tenant') || ''});
  const body = h('div', {id: 'keys'});
  const problem = h('div', {role: 'status'});
  const load = async () => {
    const tenant = ctx.me.tenant ? '' : tenantFilter.value.trim();
    clear(body, await pagedTable({
      id: 'key-list', caption: tenant ? `Keys of tenant ${tenant}` : 'Keys',
      headers: ['Key', 'Description', 'Tenant', 'Scopes', 'Stream paths', 'Expires', 'Created', ''],
      fetchPage: cursor => api('GET', '/_herald/v1/keys' + query({limit: 100, cursor, tenant})),
      cells: k => [idText(k.id), k.description || '—', k.tenant || h('span', {class: 'muted'}, 'every tenant'), k.scopes.join(', '),
        k.paths.length ? h('td', {class: 'mono'}, k.paths.join(', ')) : 'every path',
        k.expires_at ? time(k.expires_at) : 'never', time(k.created_at), revokeButton(ctx, k, problem, load)],
      emptyText: 'No key yet besides the one you signed in with (a configured key is not listed).',
    }));
  };
  const filter = ctx.me.tenant ? null : h('form', {class: 'inline', id: 'key-filter'}, field('Tenant', tenantFilter), h('button', {type: 'submit'}, 'List'));
  if (filter) {
    filter.addEventListener('submit', async ev => {
      ev.preventDefault();
      try {
        await load();
      } catch (e) {
        clear(body, errorBox(e));
      }
    });
  }
  await load();
  let create;
  try {
    create = createForm(ctx, await scopeList(), load);
  } catch (e) {
    create = [h('h2', null, 'New key'), errorBox(e)];
  }
  return [h('h1', null, 'Keys'),
    h('p', {class: 'muted'}, ctx.me.tenant ? `The keys of tenant ${ctx.me.tenant}. A key is shown once, when it is made; revoking one works at once.`
      : 'Every key Herald stores. A key is shown once, when it is made; revoking one works at once.'),
    filter, problem, body, create, portalForm(ctx, load)];
}

// revokeButton revokes key k after a confirmation, then reloads.
function revokeButton(ctx, k, out, reload) {
  const self = k.id === ctx.me.id ? ' This is the key you are signed in with: the dashboard will ask for another.' : '';
  return confirmedButton('Revoke…', {class: 'danger revoke-key', 'data-id': k.id},
    `Revoke key ${k.id}? Every request with it fails from now on.${self}`, 'Revoke',
    async () => {
      await api('DELETE', '/_herald/v1/keys/' + encodeURIComponent(k.id));
      await reload();
    }, out);
}

// keysNeedAdmin is what a key without the admin scope sees on the keys
// view: the key API is the admin's.
export function keysNeedAdmin() {
  return [h('h1', null, 'Keys'),
    h('p', {class: 'notice', id: 'keys-not-allowed', role: 'status'},
      'This key cannot manage keys: the key API needs a key with the admin scope (an admin key of a tenant manages that tenant\'s keys). Ask an administrator for one, or for the key you need.')];
}
