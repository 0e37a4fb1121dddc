// Conformance plugin in JavaScript (QuickJS): the tool set every guest language
// implements. `host/tests/all/conformance.rs` states what each tool must do;
// its resources, templates and prompts are in catalog.js.
import { InvalidArguments, Output, Part, ToolError, exportTools, t, tool } from './toolhost-guest.js';

// A 1x1 red RGBA PNG (the same bytes as the Rust conformance plugin's).
const PIXEL_PNG = [
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
  0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
  0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
  0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7, 0x2f, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
  0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

const SIZES_ML = { small: 250, medium: 350, large: 500 };

const Inner = t.object({ depth: t.integer('How deep this is.') }, 'The innermost level.');

const Nested = t.object(
  {
    label: t.string('A label.'),
    tags: t.array(t.string(), 'Any tags.').default([]),
    inner: Inner.optional().describe('A deeper level.'),
  },
  'Structured data inside the echo arguments.',
);

tool(
  {
    name: 'echo',
    description: 'Echoes its arguments back as a JSON object.',
    args: {
      message: t.string('The message to echo.'),
      nested: Nested.optional().describe('Optional structured data, echoed as given.'),
    },
  },
  ({ message, nested }) => ({ message, nested }),
);

tool(
  {
    name: 'greet',
    description: 'Greets someone, optionally several times.',
    args: {
      name: t.string('Who to greet.'),
      greeting: t.string('The word of greeting.').default('Hello'),
      times: t.integer('How many greetings, from 1 to 5.').default(1),
    },
  },
  ({ name, greeting, times }) => {
    if (times < 1 || times > 5) throw new InvalidArguments('`times` must be from 1 to 5');
    return { text: Array(times).fill(`${greeting}, ${name}!`).join(' ') };
  },
);

tool(
  {
    name: 'add',
    description: 'Adds two integers; the host wraps the bare number as {"result": n}.',
    args: { a: t.integer('The first term.'), b: t.integer('The second term.') },
    title: 'Add',
    readOnly: true,
    idempotent: true,
    openWorld: false,
  },
  ({ a, b }) => a + b,
);

tool(
  {
    name: 'order',
    description: 'Orders a drink in one of three sizes.',
    args: {
      item: t.string('What to order.'),
      size: t.enum(['small', 'medium', 'large'], 'The size.'),
    },
  },
  ({ item, size }) => ({ item, size, ml: SIZES_ML[size] }),
);

tool(
  {
    name: 'fail',
    description: 'Always fails with the given message.',
    args: {
      message: t.string('The failure message.'),
      invalid: t.boolean('Report invalid arguments instead of a failure.').default(false),
    },
  },
  ({ message, invalid }) => {
    throw invalid ? new InvalidArguments(message) : new ToolError(message);
  },
);

tool(
  {
    name: 'countdown',
    description: 'Counts down to zero, one line per number, as a stream.',
    args: { start: t.integer('Where to start.') },
  },
  function* ({ start }) {
    for (let i = start; i >= 0; i -= 1) yield `${i}\n`;
  },
);

tool(
  { name: 'pixel', description: 'Returns a caption and a 1x1 red PNG image.' },
  () => new Output({ parts: [Part.text('a 1x1 red pixel'), Part.image('image/png', PIXEL_PNG)] }),
);

tool(
  {
    name: 'remember',
    description: "Stores a value in the invocation's scratch state, or reads it back.",
    args: {
      key: t.string('The key.'),
      value: t.string('The value to store; omit it to read the key instead.').optional(),
    },
  },
  ({ key, value }, cx) => {
    if (value === null) return { value: cx.stateGet(key) };
    cx.stateSet(key, value);
    return { stored: key };
  },
);

tool({ name: 'whoami', description: 'Tells the caller the IDs of this call.' }, (_args, cx) => {
  cx.info('whoami called');
  const out = { call_id: cx.callId, invocation_id: cx.invocationId };
  if (cx.caller) out.caller = cx.caller;
  return out;
});

tool(
  {
    name: 'crash',
    description: 'Divides one by the divisor: a bug when it is zero.',
    args: { divisor: t.integer('The divisor.').default(0) },
  },
  ({ divisor }) => {
    // JavaScript does not fail on 1 / 0 (it is Infinity, which is not JSON):
    // the bug here is calling a method of undefined.
    const table = divisor === 0 ? undefined : { inverse: 1 / divisor };
    return table.inverse;
  },
);

export const tools = exportTools();
export { catalog } from './catalog.js';
