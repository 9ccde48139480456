// Send a test event to an endpoint: herald.test, or a type of the event
// type catalogue with a payload taken from its examples, edited at will.
import {api, listAll} from './api.js';
import {h, clear, errorBox, field} from './dom.js';

// examplesOf are an event type's example payloads: its own examples
// when the catalogue keeps them, else its JSON Schema's "examples".
export function examplesOf(et) {
  if (Array.isArray(et.examples) && et.examples.length) return et.examples;
  if (et.schema && Array.isArray(et.schema.examples)) return et.schema.examples;
  return [];
}

// testSend is the test form of the endpoint at path; out shows the answer.
export async function testSend(path, out) {
  let types = [];
  try {
    types = (await listAll('/_herald/v1/event-types', 1000)).items;
  } catch {
    types = []; // the catalogue is optional: herald.test still works
  }
  const type = h('select', {name: 'test_type', id: 'test-type'},
    h('option', {value: ''}, 'herald.test'), types.map(et => h('option', {value: et.name}, et.name + (et.deprecated ? ' (deprecated)' : ''))));
  const example = h('select', {name: 'test_example', id: 'test-example'});
  const data = h('textarea', {name: 'test_data', id: 'test-data', rows: 6, spellcheck: 'false'});
  const exampleField = field('Example', example);
  const fill = () => {
    const et = types.find(t => t.name === type.value);
    const ex = et ? examplesOf(et) : [];
    clear(example, ex.map((_, i) => h('option', {value: String(i)}, `Example ${i + 1}`)));
    exampleField.hidden = ex.length < 2;
    data.value = ex.length ? JSON.stringify(ex[0], null, 2) : (et ? '{}' : '{"message": "a test event from Herald"}');
  };
  example.addEventListener('change', () => {
    const ex = examplesOf(types.find(t => t.name === type.value) || {});
    data.value = JSON.stringify(ex[Number(example.value)], null, 2);
  });
  type.addEventListener('change', fill);
  fill();
  const form = h('form', {class: 'inline', id: 'test-form'},
    field('Event type', type), exampleField, field('Data (JSON)', data, true),
    h('button', {type: 'submit', id: 'test'}, 'Send test event'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const body = {};
      if (type.value) body.type = type.value;
      try {
        if (data.value.trim()) body.data = JSON.parse(data.value);
      } catch {
        throw new Error('The data is not JSON.');
      }
      const r = await api('POST', path + '/test', body);
      clear(out, h('div', {class: r.ok ? 'notice' : 'error', id: 'test-result'},
        h('p', null, r.ok ? `The endpoint accepted the test event (${r.event.type})` : `The test event (${r.event.type}) failed`,
          ` (status ${r.status_code || 'none'}, ${r.latency}).`, r.error ? ' ' + r.error : ''),
        r.response_body ? h('pre', null, r.response_body) : null));
    } catch (e) {
      clear(out, errorBox(e));
    } finally {
      button.disabled = false;
    }
  });
  return [h('h2', null, 'Send a test event'), form];
}
