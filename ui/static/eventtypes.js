// Event types: the installation's catalogue, read-only (endpoints:read,
// tenants included). Changing it needs an admin key, through the API.
import {api, query} from './api.js';
import {h, badge, pagedTable, pretty, time} from './dom.js';

// schemaCell shows an event type's schema as formatted JSON.
function schemaCell(schema) {
  if (schema === null || schema === undefined) return h('span', {class: 'muted'}, 'No schema: any data is accepted.');
  return h('pre', {class: 'schema'}, pretty(JSON.stringify(schema)));
}

export async function eventTypes() {
  const list = await pagedTable({
    id: 'event-type-list',
    caption: 'Event types',
    headers: ['Name', 'Description', 'Status', 'Schema of the data', 'Updated'],
    emptyText: 'No event type in the catalogue yet. An administrator adds them with POST /_herald/v1/event-types.',
    fetchPage: cursor => api('GET', '/_herald/v1/event-types' + query({limit: 100, cursor})),
    cells: et => [h('td', {class: 'mono'}, et.name), et.description || '—',
      et.deprecated ? badge('deprecated') : badge('current'), schemaCell(et.schema), time(et.updated_at)],
  });
  return [h('h1', null, 'Event types'),
    h('p', {class: 'muted'}, 'The event types Herald knows, with the JSON Schema their data must match. A deprecated type is still accepted.'),
    list];
}
