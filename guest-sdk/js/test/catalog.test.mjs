// Native unit tests of the JavaScript SDK's catalog (resources, templates,
// prompts, completions) and of asking the user (run: `cargo xtask sdk-test`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  Answer,
  AskError,
  Completion,
  Contents,
  Messages,
  Part,
  ToolError,
  assistant,
  complete,
  exportCatalog,
  exportTools,
  prompt,
  resource,
  resourceTemplate,
  t,
  tool,
  user,
} from '../toolhost-guest.js';
import { asking, logs, updates } from './host-stub.mjs';

resource({ uri: 'notes://today', name: 'today', mimeType: 'text/plain', description: "Today's notes." }, () => 'Buy milk.');
resource({ uri: 'notes://all', name: 'all', mimeType: 'text/plain' }, () => [
  'All notes.',
  new Contents(Uint8Array.from([1, 2]), { uri: 'notes://all/raw', mimeType: 'application/octet-stream' }),
  Contents.text('Raw text.', { uri: 'notes://all/text' }),
]);
resource({ uri: 'notes://bad', name: 'bad' }, () => undefined.x);
resource({ uri: 'notes://num', name: 'num' }, () => 42);
resourceTemplate(
  { uriTemplate: 'notes://day/{day}', name: 'day', mimeType: 'text/markdown', title: 'A day' },
  ({ day }, cx) => `Notes of ${day} (${cx.tool}).`,
);
resourceTemplate({ uriTemplate: 'files:///{+path}', name: 'file' }, ({ path }) => Contents.bytes([path.length]));
prompt(
  {
    name: 'summarize',
    description: "Summarizes a day's notes.",
    args: { day: t.string('Which day.'), style: t.string('How.').default('brief'), note: t.string().optional() },
    argumentTitles: { day: 'Day' },
  },
  ({ day, style, note }) => `Summarize the notes of ${day}, ${style}${note === null ? '' : `; ${note}`}.`,
);
prompt({ name: 'chat', description: 'A chat.' }, () =>
  new Messages(
    [
      'Hi.',
      assistant('Hello.'),
      user(Part.image('image/png', [1])),
      user(Contents.text('Buy milk.', { uri: 'notes://today', mimeType: 'text/plain' })),
    ],
    'A short chat.',
  ),
);
prompt({ name: 'embeds', description: 'Bad.' }, () => user(new Contents('x')));
prompt({ name: 'plain', description: 'No completion.', args: { x: t.string('X.') } }, ({ x }) => x);
complete('summarize', 'day', ({ value }) => Completion.matching(['today', 'tuesday', 'yesterday'], value));
complete('summarize', ({ argument, context }) => [`${argument}:${context.day ?? ''}`]);
complete('notes://day/{day}', 'day', () => Array.from({ length: 150 }, (_, i) => `d${i}`));

tool({ name: 'confirm', description: 'Asks.' }, (_args, cx) => {
  const answer = cx.ask('Go on?', { type: 'object', properties: { go: { type: 'boolean' } } });
  return answer.accepted ? { go: answer.content.go } : answer.action;
});
tool({ name: 'touch', description: 'Updates.', args: { uri: t.string('U.') } }, ({ uri }, cx) => {
  cx.resourceUpdated(uri);
  return 'ok';
});

const catalog = exportCatalog();
const tools = exportTools();
const request = { callId: 'c', invocationId: 'i', caller: null };
const read = (uri, template, variables = []) => catalog.readResource({ request, uri, template, variables });
const get = (name, args) => catalog.getPrompt({ request, name, arguments: Object.entries(args) });
const completeOf = (tag, target, argument, value, context = {}) =>
  catalog.complete({ request, target: { tag, val: target }, argument, value, context: Object.entries(context) });

test('describe lists what is declared, in order', () => {
  const described = catalog.describe();
  assert.deepEqual(described.resources[0], {
    uri: 'notes://today',
    name: 'today',
    title: undefined,
    description: "Today's notes.",
    mimeType: 'text/plain',
    size: undefined,
  });
  assert.deepEqual(
    described.resources.map((r) => r.uri),
    ['notes://today', 'notes://all', 'notes://bad', 'notes://num'],
  );
  assert.deepEqual(described.templates[0], {
    uriTemplate: 'notes://day/{day}',
    name: 'day',
    title: 'A day',
    description: undefined,
    mimeType: 'text/markdown',
  });
  assert.deepEqual(described.prompts[0], {
    name: 'summarize',
    title: undefined,
    description: "Summarizes a day's notes.",
    arguments: [
      { name: 'day', title: 'Day', description: 'Which day.', required: true },
      { name: 'style', title: undefined, description: 'How.', required: false },
      { name: 'note', title: undefined, description: undefined, required: false },
    ],
  });
});

test('a read gets the URI read and the declared MIME type when missing', () => {
  assert.deepEqual(read('notes://today'), [
    { uri: 'notes://today', mimeType: 'text/plain', body: { tag: 'text', val: 'Buy milk.' } },
  ]);
  const all = read('notes://all');
  assert.deepEqual(all[0], { uri: 'notes://all', mimeType: 'text/plain', body: { tag: 'text', val: 'All notes.' } });
  assert.equal(all[1].uri, 'notes://all/raw');
  assert.equal(all[1].mimeType, 'application/octet-stream');
  assert.deepEqual([...all[1].body.val], [1, 2]);
  // A sub-resource keeps what it says: no MIME type of the parent's.
  assert.deepEqual(all[2], { uri: 'notes://all/text', mimeType: undefined, body: { tag: 'text', val: 'Raw text.' } });
});

test('a template read gets its variables as an object', () => {
  assert.deepEqual(read('notes://day/monday', 'notes://day/{day}', [['day', 'monday']]), [
    {
      uri: 'notes://day/monday',
      mimeType: 'text/markdown',
      body: { tag: 'text', val: 'Notes of monday (notes://day/monday).' },
    },
  ]);
  const [file] = read('files:///a/b', 'files:///{+path}', [['path', 'a/b']]);
  assert.equal(file.body.tag, 'bytes');
  assert.deepEqual([...file.body.val], [3]);
});

test('unknown URIs, templates, prompts and targets are unknown-tool', () => {
  assert.throws(() => read('notes://nope'), { tag: 'unknown-tool', val: 'notes://nope' });
  assert.throws(() => read('x://1', 'x://{n}', [['n', '1']]), { tag: 'unknown-tool', val: 'x://1' });
  assert.throws(() => get('nope', {}), { tag: 'unknown-tool', val: 'nope' });
  assert.throws(() => completeOf('prompt', 'nope', 'x', ''), { tag: 'unknown-tool', val: 'nope' });
  assert.throws(() => completeOf('template', 'summarize', 'day', ''), { tag: 'unknown-tool', val: 'summarize' });
});

test('a reader that fails is a failed tool error, logged', () => {
  assert.throws(() => read('notes://bad'), (err) => err.tag === 'failed' && err.val.startsWith('TypeError: '));
  assert.ok(logs.some(([level, message]) => level === 'error' && message.startsWith('resource `notes://bad` threw')));
  assert.throws(() => read('notes://num'), {
    tag: 'failed',
    val: 'a read returns a string, Uint8Array or Contents, not Number',
  });
});

test('a prompt gets its arguments, defaults filled', () => {
  assert.deepEqual(get('summarize', { day: 'today' }), {
    description: undefined,
    messages: [{ role: 'user', content: { tag: 'part', val: { tag: 'text', val: 'Summarize the notes of today, brief.' } } }],
  });
  const filled = get('summarize', { day: 'today', style: 'long', note: 'n' });
  assert.equal(filled.messages[0].content.val.val, 'Summarize the notes of today, long; n.');
  assert.throws(() => get('summarize', {}), { tag: 'invalid-arguments', val: '`day` is missing' });
});

test('a prompt returns messages of every kind', () => {
  const chat = get('chat', {});
  assert.equal(chat.description, 'A short chat.');
  assert.deepEqual(
    chat.messages.map((m) => [m.role, m.content.tag, m.content.val.tag ?? m.content.val.uri]),
    [
      ['user', 'part', 'text'],
      ['assistant', 'part', 'text'],
      ['user', 'part', 'blob'],
      ['user', 'resource', 'notes://today'],
    ],
  );
  assert.deepEqual(chat.messages[3].content.val.body, { tag: 'text', val: 'Buy milk.' });
  assert.throws(() => get('embeds', {}), (err) => err.tag === 'failed' && err.val.includes('without a URI'));
});

test('completions: per argument, for every argument, none, capped at 100', () => {
  assert.deepEqual(completeOf('prompt', 'summarize', 'day', 't'), { values: ['today', 'tuesday'], total: 2, hasMore: false });
  assert.deepEqual(completeOf('prompt', 'summarize', 'style', 'b', { day: 'today' }), {
    values: ['style:today'],
    total: undefined,
    hasMore: false,
  });
  // A declared target without a handler completes nothing.
  assert.deepEqual(completeOf('prompt', 'plain', 'x', ''), { values: [], total: undefined, hasMore: false });
  const many = completeOf('template', 'notes://day/{day}', 'day', '');
  assert.equal(many.values.length, 100);
  assert.equal(many.hasMore, true);
  assert.equal(new Completion(['a']).capped().hasMore, false);
});

test('declaration mistakes are refused', () => {
  assert.throws(() => resource({ uri: 'notes://today', name: 'again' }, () => ''), /two resources/);
  assert.throws(() => resource({ uri: 'x://y' }, () => ''), /needs a `name`/);
  assert.throws(() => resourceTemplate({ uriTemplate: 'x://fixed', name: 'x' }, () => ''), /no \{variable\}/);
  assert.throws(() => prompt({ name: 'bad name', description: '' }, () => ''), /prompt name/);
  assert.throws(() => prompt({ name: 'n', description: '', args: { k: t.integer() } }, () => ''), /are strings/);
  assert.throws(() => complete('summarize', 'day', () => []), /two completions/);
});

test('a completion of something undeclared fails the build', () => {
  complete('ghost', 'x', () => []);
  assert.throws(() => exportCatalog(), /no prompt ghost is declared/);
});

test('ask: answers, declines, and errors with their reasons', () => {
  const call = { callId: 'c', invocationId: 'i', tool: 'confirm', arguments: '{}' };
  // Nobody can be asked: uncaught, the call fails saying why.
  assert.throws(() => tools.invoke(call), { tag: 'failed', val: 'nobody can be asked: no client' });
  asking.answer = () => ({ tag: 'accept', val: '{"go":true}' });
  assert.deepEqual(JSON.parse(tools.invoke(call).json), { go: true });
  assert.deepEqual(asking.questions.at(-1), {
    message: 'Go on?',
    schema: '{"type":"object","properties":{"go":{"type":"boolean"}}}',
  });
  asking.answer = () => ({ tag: 'decline' });
  assert.equal(JSON.parse(tools.invoke(call).json), 'decline');
  asking.answer = () => ({ tag: 'accept', val: '[1]' });
  assert.throws(() => tools.invoke(call), { tag: 'failed', val: 'invalid question: the answer is not a JSON object' });
  asking.answer = () => {
    throw Object.assign(new Error('timeout'), { payload: { tag: 'timeout' } });
  };
  assert.throws(() => tools.invoke(call), { tag: 'failed', val: 'the user did not answer in time' });
  const err = new AskError('too-many', '3');
  assert.ok(err instanceof ToolError);
  assert.equal(err.reason, 'too-many');
  assert.equal(err.message, 'too many questions: 3');
  assert.equal(new Answer('cancel').accepted, false);
});

test('resourceUpdated tells the host', () => {
  tools.invoke({ callId: 'c', invocationId: 'i', tool: 'touch', arguments: '{"uri":"notes://today"}' });
  assert.deepEqual(updates, ['notes://today']);
});
