// Native unit tests of the JavaScript SDK: schemas from shapes, defaults,
// results, streams and errors (run: `cargo xtask sdk-test`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidArguments, Output, Part, ToolError, exportTools, t, tool } from '../toolhost-guest.js';
import { logs, state } from './host-stub.mjs';

tool(
  {
    name: 'book',
    description: 'Books.',
    args: {
      city: t.string('Where.'),
      nights: t.integer('How long.').default(1),
      room: t.enum(['single', 'double'], 'Room.').optional(),
      guest: t.object({ name: t.string('Name.'), tags: t.array(t.string()).default([]) }).optional(),
    },
  },
  (args) => args,
);
tool({ name: 'count', description: 'Counts.', args: { n: t.integer('N.') } }, function* ({ n }) {
  for (let i = 0; i < n; i += 1) yield `${i}`;
  yield { done: true };
  throw new RangeError('past the end');
});
tool({ name: 'pic', description: 'Pic.', title: 'Picture', readOnly: true, openWorld: false }, () => new Output({ json: [1], parts: [Part.image('image/png', [1, 2])] }));
tool({ name: 'bad', description: 'Bad.', args: { invalid: t.boolean('I.').default(false) } }, ({ invalid }) => {
  if (invalid) throw new InvalidArguments('nope');
  return undefined.x;
});
tool({ name: 'keep', description: 'State.', args: { v: t.string('V.') } }, ({ v }, cx) => {
  cx.stateSet('k', v);
  return cx.stateGet('k');
});

tool({ name: 'whoami', description: 'Who.' }, (_args, cx) => ({
  caller: cx.caller,
  reader: cx.caller?.hasScope('tools:read') ?? null,
  email: cx.caller?.claim('email') ?? null,
}));

tool({ name: 'lenient', description: 'Lenient.', args: { v: t.string('V.') }, allowUnknownArgs: true }, ({ v }) => v);
tool(
  {
    name: 'raw',
    description: 'Raw schema.',
    inputSchema: {
      type: 'object',
      properties: { p: { type: 'object', properties: { q: { type: 'string' } } }, m: { type: 'object', additionalProperties: { type: 'string' } } },
    },
  },
  (args) => args,
);

const tools = exportTools();
const call = (tool, args) => ({ callId: 'c', invocationId: 'i', tool, arguments: JSON.stringify(args) });

test('hints are optional fields of the declaration', () => {
  const hints = (name) => tools.declarations().find((d) => d.info.name === name).info.hints;
  assert.deepEqual(hints('pic'), {
    title: 'Picture',
    readOnly: true,
    destructive: undefined,
    idempotent: undefined,
    openWorld: false,
  });
  assert.deepEqual(hints('book'), {
    title: undefined,
    readOnly: undefined,
    destructive: undefined,
    idempotent: undefined,
    openWorld: undefined,
  });
});

test('the schema comes from the shapes', () => {
  const decl = tools.declarations().find((d) => d.info.name === 'book');
  assert.deepEqual(JSON.parse(decl.inputSchema), {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'Where.' },
      nights: { type: ['integer', 'null'], description: 'How long. Defaults to `1`.', default: 1 },
      room: { enum: ['single', 'double', null], type: ['string', 'null'], description: 'Room.' },
      guest: {
        type: ['object', 'null'],
        properties: {
          name: { type: 'string', description: 'Name.' },
          tags: { type: ['array', 'null'], items: { type: 'string' }, default: [], description: 'Defaults to `[]`.' },
        },
        required: ['name'],
        additionalProperties: false,
      },
    },
    required: ['city'],
    additionalProperties: false,
  });
  assert.equal(decl.streaming, false);
  assert.equal(tools.declarations().find((d) => d.info.name === 'count').streaming, true);
});

test('unknown argument keys are refused unless the tool allows them', () => {
  assert.throws(() => tools.invoke(call('book', { city: 'Oslo', seperator: '_' })), {
    tag: 'invalid-arguments',
    val: 'unknown argument `seperator`',
  });
  assert.equal(JSON.parse(tools.invoke(call('lenient', { v: 'x', seperator: '_' })).json), 'x');
  const schemaOf = (name) => JSON.parse(tools.declarations().find((d) => d.info.name === name).inputSchema);
  assert.equal(schemaOf('lenient').additionalProperties, true);
  // A hand-written schema is closed too, its nested objects as well; a map stays a map.
  const raw = schemaOf('raw');
  assert.equal(raw.additionalProperties, false);
  assert.equal(raw.properties.p.additionalProperties, false);
  assert.deepEqual(raw.properties.m.additionalProperties, { type: 'string' });
});

test('defaults and nulls are filled, nested too', () => {
  const out = tools.invoke(call('book', { city: 'Oslo', guest: { name: 'A' } }));
  assert.deepEqual(JSON.parse(out.json), {
    city: 'Oslo',
    nights: 1,
    room: null,
    guest: { name: 'A', tags: [] },
  });
  assert.throws(() => tools.invoke(call('book', {})), { tag: 'invalid-arguments', val: 'missing field `city`' });
});

tool(
  {
    name: 'opts',
    description: 'Optional means nullable.',
    args: {
      algorithm: t.enum(['sha256', 'md5']).default('sha256').describe('The hash.'),
      limit: t.integer('How many; the default is all.').default(0),
      any: t.schema({ description: 'Anything.' }).default(1),
      note: t.string('A note.').optional().default('x'),
    },
  },
  (args) => args,
);

test('optional means nullable: a default accepts null, is stated, and null means the default', () => {
  const schema = JSON.parse(tools.declarations().find((d) => d.info.name === 'opts').inputSchema);
  assert.deepEqual(schema.properties, {
    algorithm: {
      enum: ['sha256', 'md5', null],
      type: ['string', 'null'],
      default: 'sha256',
      description: 'The hash. Defaults to `sha256`.',
    },
    // A description that speaks of the default already is left alone.
    limit: { type: ['integer', 'null'], description: 'How many; the default is all.', default: 0 },
    // Without a plain type, the schema is wrapped; the note goes inside.
    any: { anyOf: [{ description: 'Anything. Defaults to `1`.' }, { type: 'null' }], default: 1 },
    note: { type: ['string', 'null'], description: 'A note. Defaults to `x`.', default: 'x' },
  });
  assert.equal(schema.required, undefined);
  const given = { algorithm: null, limit: null, any: null, note: null };
  const expected = { algorithm: 'sha256', limit: 0, any: 1, note: 'x' };
  assert.deepEqual(JSON.parse(tools.invoke(call('opts', given)).json), expected);
  assert.deepEqual(JSON.parse(tools.invoke(call('opts', {})).json), expected);
  // Nested: null for a field with a default is the default; an optional field stays null.
  const out = tools.invoke(call('book', { city: 'Oslo', nights: null, room: null, guest: { name: 'A', tags: null } }));
  assert.deepEqual(JSON.parse(out.json), { city: 'Oslo', nights: 1, room: null, guest: { name: 'A', tags: [] } });
});

test('results, parts and state', () => {
  const out = tools.invoke(call('pic', {}));
  assert.equal(out.json, '[1]');
  assert.equal(out.parts[0].tag, 'blob');
  assert.equal(out.parts[0].val.kind, 'image');
  assert.deepEqual([...out.parts[0].val.data], [1, 2]);
  assert.equal(tools.invoke(call('keep', { v: 'x' })).json, '"x"');
  assert.equal(state.get('k'), 'x');
});

test('a tool sees its caller, or null', () => {
  assert.deepEqual(JSON.parse(tools.invoke(call('whoami', {})).json), { caller: null, reader: null, email: null });
  const caller = {
    issuer: 'https://id.example.com',
    subject: 'ana',
    scopes: ['tools:read'],
    claims: '{"email":"ana@example.com"}',
  };
  assert.deepEqual(JSON.parse(tools.invoke({ ...call('whoami', {}), caller }).json), {
    caller: {
      issuer: 'https://id.example.com',
      subject: 'ana',
      scopes: ['tools:read'],
      claims: { email: 'ana@example.com' },
    },
    reader: true,
    email: 'ana@example.com',
  });
});

test('errors become tool errors; bugs are logged', () => {
  assert.throws(() => tools.invoke(call('bad', { invalid: true })), { tag: 'invalid-arguments', val: 'nope' });
  assert.throws(() => tools.invoke(call('bad', {})), (err) => err.tag === 'failed' && err.val.startsWith('TypeError: '));
  assert.ok(logs.some(([level, message]) => level === 'error' && message.includes('TypeError')));
  assert.throws(() => tools.invoke(call('nope', {})), { tag: 'unknown-tool', val: 'nope' });
  assert.ok(new ToolError('x') instanceof Error);
});

test('streams: chunks, then the error, then the end', () => {
  const chunks = tools.invokeStream(call('count', { n: 2 }));
  assert.deepEqual(chunks.next(), { tag: 'text', val: '0' });
  assert.deepEqual(chunks.next(), { tag: 'text', val: '1' });
  assert.deepEqual(chunks.next(), { tag: 'json', val: '{"done":true}' });
  assert.throws(() => chunks.next(), { tag: 'failed', val: 'RangeError: past the end' });
  assert.equal(chunks.next(), undefined);
  // A tool that does not stream gives its JSON, then its parts.
  const pic = tools.invokeStream(call('pic', {}));
  assert.equal(pic.next().tag, 'json');
  assert.equal(pic.next().tag, 'blob');
  assert.equal(pic.next(), undefined);
});
