// JSON Schema in the browser, for the event type editor's checks as you
// type: parse errors with their line, a check of a schema's structure
// (its keywords' values have the shape the specification gives them),
// and a check of an example against the keywords most schemas use.
// Herald's own check (the one that counts) runs when the type is saved;
// these only answer sooner.

// parseJSON parses text: {value} or {error} saying where it fails.
export function parseJSON(text) {
  try {
    return {value: JSON.parse(text)};
  } catch (e) {
    const at = failsAt(text);
    const before = text.slice(0, at);
    const line = before.split('\n').length;
    const column = at - before.lastIndexOf('\n');
    const what = at >= text.length ? 'it ends too soon' : `unexpected ${JSON.stringify(text[at])}`;
    return {error: `${what} at line ${line}, column ${column}`};
  }
}

// failsAt is where text stops being JSON: a small scanner of the JSON
// grammar, so the place is the same in every browser, whatever its
// parser's messages say.
function failsAt(text) {
  let i = 0;
  const ws = () => { while (' \t\n\r'.includes(text[i]) && i < text.length) i++; };
  const fail = () => { throw i; };
  const lit = word => { for (const c of word) { if (text[i] !== c) fail(); i++; } };
  const str = () => {
    i++; // the opening quote
    for (;;) {
      if (i >= text.length || text[i] < ' ') fail();
      const c = text[i++];
      if (c === '"') return;
      if (c === '\\') {
        if (text[i] === 'u') {
          i++;
          for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] || '')) fail();
        } else if ('"\\/bfnrt'.includes(text[i]) && i < text.length) {
          i++;
        } else {
          fail();
        }
      }
    }
  };
  const num = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m) fail();
    i += m[0].length;
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++; ws();
      if (text[i] === '}') { i++; return; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        str(); ws();
        if (text[i] !== ':') fail();
        i++; value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return; }
        fail();
      }
    } else if (c === '[') {
      i++; ws();
      if (text[i] === ']') { i++; return; }
      for (;;) {
        value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return; }
        fail();
      }
    } else if (c === '"') {
      str();
    } else if (c === 't') {
      lit('true');
    } else if (c === 'f') {
      lit('false');
    } else if (c === 'n') {
      lit('null');
    } else {
      num();
    }
  };
  try {
    value(); ws();
    return i < text.length ? i : text.length;
  } catch (at) {
    return at;
  }
}

const types = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'];
const isObject = v => v !== null && typeof v === 'object' && !Array.isArray(v);
const isSchema = v => typeof v === 'boolean' || isObject(v);
const isCount = v => Number.isInteger(v) && v >= 0;

// What each keyword's value must be; subschemas are checked in turn.
const shapes = {
  type: v => typeof v === 'string' ? types.includes(v) : Array.isArray(v) && v.length > 0 && v.every(t => types.includes(t)),
  enum: v => Array.isArray(v),
  required: v => Array.isArray(v) && v.every(s => typeof s === 'string'),
  properties: v => isObject(v) && Object.values(v).every(isSchema),
  patternProperties: v => isObject(v) && Object.values(v).every(isSchema),
  additionalProperties: isSchema, items: isSchema, not: isSchema, contains: isSchema,
  propertyNames: isSchema, if: isSchema, then: isSchema, else: isSchema,
  prefixItems: v => Array.isArray(v) && v.every(isSchema),
  allOf: v => Array.isArray(v) && v.length > 0 && v.every(isSchema),
  anyOf: v => Array.isArray(v) && v.length > 0 && v.every(isSchema),
  oneOf: v => Array.isArray(v) && v.length > 0 && v.every(isSchema),
  $defs: v => isObject(v) && Object.values(v).every(isSchema),
  definitions: v => isObject(v) && Object.values(v).every(isSchema),
  minimum: Number.isFinite, maximum: Number.isFinite, exclusiveMinimum: Number.isFinite, exclusiveMaximum: Number.isFinite,
  multipleOf: v => Number.isFinite(v) && v > 0,
  minLength: isCount, maxLength: isCount, minItems: isCount, maxItems: isCount, minProperties: isCount, maxProperties: isCount,
  uniqueItems: v => typeof v === 'boolean',
  pattern: v => typeof v === 'string' && regexp(v) !== null,
  format: v => typeof v === 'string', title: v => typeof v === 'string', description: v => typeof v === 'string',
  examples: v => Array.isArray(v),
  $ref: v => typeof v === 'string' && v.startsWith('#'),
};

// What each shape means, for the message.
const expected = {
  type: `one of ${types.join(', ')}, or a list of them`,
  pattern: 'a regular expression',
  $ref: 'a reference within this schema ("#/$defs/…"): Herald loads no other',
  multipleOf: 'a number above 0',
};

function regexp(source) {
  try {
    return new RegExp(source, 'u');
  } catch {
    return null;
  }
}

// checkSchema lists what is wrong with a schema's structure, each as
// {path, message}, path as Herald's errors give it (schema/properties/x).
export function checkSchema(schema, path = 'schema') {
  if (typeof schema === 'boolean') return [];
  if (!isObject(schema)) return [{path, message: 'a schema is a JSON object (or true or false)'}];
  const out = [];
  for (const [k, v] of Object.entries(schema)) {
    const ok = shapes[k];
    if (ok && !ok(v)) {
      out.push({path: `${path}/${k}`, message: `${k} must be ${expected[k] || describeShape(k)}`});
      continue;
    }
    if (['properties', 'patternProperties', '$defs', 'definitions'].includes(k)) {
      for (const [name, sub] of Object.entries(v)) out.push(...checkSchema(sub, `${path}/${k}/${name}`));
    } else if (['allOf', 'anyOf', 'oneOf', 'prefixItems'].includes(k)) {
      v.forEach((sub, i) => out.push(...checkSchema(sub, `${path}/${k}/${i}`)));
    } else if (['additionalProperties', 'items', 'not', 'contains', 'propertyNames', 'if', 'then', 'else'].includes(k)) {
      out.push(...checkSchema(v, `${path}/${k}`));
    }
  }
  return out;
}

function describeShape(k) {
  if (['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'].includes(k)) return 'a whole number of 0 or more';
  if (['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].includes(k)) return 'a number';
  if (['enum', 'examples'].includes(k)) return 'a list';
  if (k === 'required') return 'a list of property names';
  if (['allOf', 'anyOf', 'oneOf'].includes(k)) return 'a non-empty list of schemas';
  if (['format', 'title', 'description'].includes(k)) return 'a string';
  if (k === 'uniqueItems') return 'true or false';
  return 'a schema (an object, or true or false)';
}

function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

const equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// resolve follows a local $ref ("#/$defs/x") within root.
function resolve(root, ref) {
  let at = root;
  for (const part of ref.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    at = at === null || typeof at !== 'object' ? undefined : at[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return at;
}

// checkValue lists where value fails schema, each as {path, message};
// the path is a JSON pointer into the value ("/items/0/sku"). It knows
// the keywords of checkSchema's list, and ignores format.
export function checkValue(schema, value, root = schema, path = '', depth = 0) {
  if (schema === true || depth > 64) return [];
  if (schema === false) return [{path: path || '/', message: 'no value is allowed here'}];
  if (!isObject(schema)) return [];
  const out = [];
  const fail = message => out.push({path: path || '/', message});
  const t = typeOf(value);
  if (schema.$ref) {
    const target = resolve(root, schema.$ref);
    if (target !== undefined) out.push(...checkValue(target, value, root, path, depth + 1));
  }
  if (schema.type !== undefined) {
    const want = [schema.type].flat();
    if (!want.some(w => w === t || (w === 'number' && t === 'integer'))) fail(`is ${t}, want ${want.join(' or ')}`);
  }
  if (schema.enum && !schema.enum.some(e => equal(e, value))) fail(`is not one of ${JSON.stringify(schema.enum)}`);
  if ('const' in schema && !equal(schema.const, value)) fail(`must be ${JSON.stringify(schema.const)}`);
  if (t === 'number' || t === 'integer') {
    if (schema.minimum !== undefined && value < schema.minimum) fail(`must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) fail(`must be at most ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) fail(`must be above ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) fail(`must be below ${schema.exclusiveMaximum}`);
  }
  if (t === 'string') {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) fail(`must be at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && n > schema.maxLength) fail(`must be at most ${schema.maxLength} characters`);
    const re = typeof schema.pattern === 'string' ? regexp(schema.pattern) : null;
    if (re && !re.test(value)) fail(`does not match ${schema.pattern}`);
  }
  if (t === 'array') {
    if (schema.minItems !== undefined && value.length < schema.minItems) fail(`must have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) fail(`must have at most ${schema.maxItems} items`);
    const prefix = schema.prefixItems || [];
    value.forEach((v, i) => {
      const sub = i < prefix.length ? prefix[i] : schema.items;
      if (sub !== undefined) out.push(...checkValue(sub, v, root, `${path}/${i}`, depth + 1));
    });
  }
  if (t === 'object') {
    const props = schema.properties || {};
    for (const name of schema.required || []) if (!(name in value)) fail(`lacks the required property ${name}`);
    for (const [name, v] of Object.entries(value)) {
      const at = `${path}/${name}`;
      const patterned = Object.entries(schema.patternProperties || {}).filter(([re]) => (regexp(re) || {test: () => false}).test(name));
      for (const [, sub] of patterned) out.push(...checkValue(sub, v, root, at, depth + 1));
      if (name in props) out.push(...checkValue(props[name], v, root, at, depth + 1));
      else if (!patterned.length && schema.additionalProperties !== undefined) out.push(...checkValue(schema.additionalProperties, v, root, at, depth + 1));
    }
  }
  if (Array.isArray(schema.allOf)) for (const s of schema.allOf) out.push(...checkValue(s, value, root, path, depth + 1));
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some(s => !checkValue(s, value, root, path, depth + 1).length)) fail('matches none of anyOf');
  if (Array.isArray(schema.oneOf)) {
    const n = schema.oneOf.filter(s => !checkValue(s, value, root, path, depth + 1).length).length;
    if (n !== 1) fail(`matches ${n} of oneOf, want exactly 1`);
  }
  if (schema.not !== undefined && !checkValue(schema.not, value, root, path, depth + 1).length) fail('matches the schema of not');
  return out;
}
