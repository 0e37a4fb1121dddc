// The conformance plugin's catalog in JavaScript, the same as every language's:
// resources (text, bytes, several contents, the request's IDs, a failure),
// templates (`{name}` and `{+name}`), prompts (arguments, roles, an embedded
// resource, an image, JSON, a description, a refusal) and completions (by
// prefix, from the context, past the cap). `host/tests/all/conformance/catalog.rs`
// states what each must do; `tests/plugins/conformance-c/catalog.c` is the C one.
import {
  Completion,
  Contents,
  InvalidArguments,
  Messages,
  Part,
  ToolError,
  assistant,
  complete,
  exportCatalog,
  prompt,
  resource,
  resourceTemplate,
  t,
  user,
} from './toolhost-guest.js';

// A 1x1 red RGBA PNG (the same bytes as app.js's).
const PIXEL_PNG = [
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
  0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
  0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
  0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7, 0x2f, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
  0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

resource(
  {
    uri: 'conformance://greeting',
    name: 'greeting',
    title: 'A greeting',
    description: 'Says hello.',
    mimeType: 'text/plain',
    size: 12,
  },
  // No MIME type: the declared one.
  () => 'Hello there!',
);

resource({ uri: 'conformance://pixel', name: 'pixel', mimeType: 'image/png', size: PIXEL_PNG.length }, () =>
  Uint8Array.from(PIXEL_PNG),
);

resource({ uri: 'conformance://bundle', name: 'bundle', mimeType: 'text/plain' }, () => [
  // The resource read, then a sub-resource with a type of its own.
  'the bundle',
  new Contents('{"part": 1}', { uri: 'conformance://bundle/part', mimeType: 'application/json' }),
]);

resource({ uri: 'conformance://request', name: 'request', mimeType: 'application/json' }, (cx) =>
  JSON.stringify({
    call_id: cx.callId,
    invocation_id: cx.invocationId,
    uri: cx.tool,
    caller: cx.caller ? cx.caller.subject : null,
  }),
);

resource({ uri: 'conformance://broken', name: 'broken' }, () => {
  throw new ToolError('the resource is broken');
});

resourceTemplate(
  {
    uriTemplate: 'conformance://words/{word}',
    name: 'words',
    description: 'A word, and where it was read.',
    mimeType: 'text/plain',
  },
  ({ word }, cx) => `${word} at ${cx.tool}`,
);

complete('conformance://words/{word}', ({ argument, value }) => {
  if (argument !== 'word') throw new InvalidArguments(`no variable \`${argument}\``);
  return Completion.matching(['alpha', 'beta', 'bravo'], value);
});

// A MIME type of its own, where the template declares none.
resourceTemplate(
  { uriTemplate: 'conformance://files/{+path}', name: 'files' },
  ({ path }) => new Contents(path, { mimeType: 'text/markdown' }),
);

prompt(
  {
    name: 'greet',
    title: 'Greeting',
    description: 'Greets someone, in a style if given.',
    args: { name: t.string('Who to greet.'), style: t.string('How to greet.').optional() },
    argumentTitles: { style: 'Style' },
  },
  ({ name, style }) => {
    const messages = [user(`Greet ${name}.`)];
    if (style !== null && style !== undefined) messages.push(assistant(`In a ${style} style.`));
    return new Messages(messages, `A greeting for ${name}`);
  },
);

complete('greet', ({ argument, value, context }) => {
  if (argument === 'style') return Completion.matching(['formal', 'friendly', 'funny'], value);
  return context.style === 'formal' ? ['Dr. Ada'] : ['Ada'];
});

prompt({ name: 'show', description: 'Shows a resource and an image.' }, () => [
  user(new Contents('Hello there!', { uri: 'conformance://greeting', mimeType: 'text/plain' })),
  assistant(Part.image('image/png', PIXEL_PNG)),
  assistant(Part.json({ shown: 2 })),
]);

prompt(
  {
    name: 'many',
    description: 'Offers more values than a completion serves.',
    args: { value: t.string().optional() },
  },
  ({ value }) => `Pick ${value ?? '?'}.`,
);

complete('many', () => Array.from({ length: 150 }, (_, i) => `v${String(i).padStart(3, '0')}`));

prompt({ name: 'refuse', description: 'Always refuses.' }, () => {
  throw new InvalidArguments('no prompt today');
});

export const catalog = exportCatalog();
