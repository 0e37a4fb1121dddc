// Write toolhost tools in JavaScript: declare each tool's arguments as a shape,
// get its JSON Schema, defaults, streaming and error handling from the SDK.
//
//   import { tool, t, exportTools, ToolError } from './toolhost-guest.js';
//
//   tool({
//     name: 'greet',
//     description: 'Greets someone.',
//     args: {
//       name: t.string('Who to greet.'),
//       times: t.integer('How many greetings.').default(1),
//     },
//   }, ({ name, times }, cx) => ({ text: `Hello, ${name}! `.repeat(times).trim() }));
//
//   export const tools = exportTools();
//
// A shape without `.default()` or `.optional()` is required (the rule of the
// Rust and Python SDKs). Optional means nullable: both also accept `null`, and
// `null` for a shape with a default means "use the default" (OpenAI strict mode
// makes every property required, so a model sends `null` for what it leaves
// out; Gemini reads it as nullable); the default is stated in the description.
// A generator function is a streaming tool: each yielded
// string is a text chunk, a `Part` is itself, anything else is a JSON chunk.
// Throw `ToolError` or `InvalidArguments` for failures the model can act on;
// anything else thrown is reported as a failure too (an uncaught exception would
// trap the guest and lose its message), and its stack goes to the host log.
//
// Resources, resource templates, prompts and completions (MCP's other server
// features) are in toolhost-catalog.js; import them from here too. A tool asks
// its user with `cx.ask(message, form)` and tells subscribers that a resource
// changed with `cx.resourceUpdated(uri)`.
//
// Build: `cargo xtask guests` (componentize-qjs, pinned in package.json).

import {
  ask as hostAsk,
  log,
  resourceUpdated,
  stateDelete,
  stateGet,
  stateSet,
} from 'toolhost:plugin/host@0.4.0';
import { linkCatalog } from './toolhost-catalog.js';

export {
  Completion,
  Contents,
  MAX_COMPLETIONS,
  Message,
  Messages,
  assistant,
  complete,
  exportCatalog,
  prompt,
  resource,
  resourceTemplate,
  user,
} from './toolhost-catalog.js';

/** The tool ran and failed; the message says why (WIT `tool-error.failed`). */
export class ToolError extends Error {
  constructor(message) {
    super(String(message));
    this.name = 'ToolError';
    this.kind = 'failed';
  }
}

/** The arguments were wrong in a way the schema could not express. */
export class InvalidArguments extends ToolError {
  constructor(message) {
    super(message);
    this.name = 'InvalidArguments';
    this.kind = 'invalid-arguments';
  }
}

/** The plugin has no tool of that name (the SDK throws it itself); in a
 * catalog request, no resource, template or prompt of that URI or name. */
class UnknownTool extends ToolError {
  constructor(message) {
    super(message);
    this.kind = 'unknown-tool';
  }
}

const ASK_REASONS = ['unavailable', 'invalid', 'too-many', 'timeout'];

/**
 * Why a question (`cx.ask`) got no answer. `reason`: `unavailable` (nobody can
 * be asked here: no client that supports it, no terminal; decide without an
 * answer), `invalid` (the form is not a flat JSON Schema object, or too large),
 * `too-many` (this call asked as many questions as it may) or `timeout` (the
 * user did not answer in time). It is a `ToolError`: left uncaught, the call
 * fails saying why.
 */
export class AskError extends ToolError {
  constructor(reason, detail = '') {
    if (!ASK_REASONS.includes(reason)) {
      throw new TypeError(`reason must be one of ${ASK_REASONS.join(', ')}, not ${reason}`);
    }
    const text = String(detail ?? '');
    super(
      {
        unavailable: `nobody can be asked: ${text}`,
        invalid: `invalid question: ${text}`,
        'too-many': `too many questions: ${text}`,
        timeout: 'the user did not answer in time',
      }[reason],
    );
    this.name = 'AskError';
    /** `unavailable`, `invalid`, `too-many` or `timeout`. */
    this.reason = reason;
    /** What the host said. */
    this.detail = text;
  }
}

/** The user's answer to a question (`cx.ask`). */
export class Answer {
  constructor(action, content = null) {
    /** What the user did: `accept` (submitted the form), `decline` (said no)
     * or `cancel` (dismissed it without choosing). */
    this.action = action;
    /** The submitted form (checked by the host against the question's
     * schema), an object; `null` unless accepted. */
    this.content = content;
    Object.freeze(this);
  }

  /** Whether the user submitted the form. */
  get accepted() {
    return this.action === 'accept';
  }
}

// --- shapes -----------------------------------------------------------------

/** A JSON Schema with what the SDK needs to know: required or not, a default. */
export class Shape {
  constructor(schema, fill) {
    this.schema = schema;
    this.isOptional = false;
    this.hasDefault = false;
    this.defaultValue = undefined;
    this.fill = fill ?? ((value) => value);
  }

  /** Not required; `null` when missing (nullable, like `Option<T>`). */
  optional() {
    const shape = this.clone();
    shape.isOptional = true;
    shape.schema = nullable(shape.schema);
    return shape;
  }

  /** Not required; `value` when missing or `null` (the type is nullable). */
  default(value) {
    const shape = this.clone();
    shape.hasDefault = true;
    shape.defaultValue = value;
    shape.schema = { ...nullable(shape.schema), default: value };
    return shape;
  }

  /** Sets the description. */
  describe(text) {
    const shape = this.clone();
    shape.schema = { ...shape.schema, description: text };
    return shape;
  }

  clone() {
    const shape = new Shape(this.schema, this.fill);
    Object.assign(shape, { ...this, schema: this.schema });
    return shape;
  }

  get required() {
    return !this.isOptional && !this.hasDefault;
  }
}

function described(schema, description) {
  return description === undefined ? schema : { ...schema, description };
}

/** The schema that also accepts `null`: in its type, its `enum`, or (no plain type) `anyOf`. */
function nullable(schema) {
  const { type } = schema;
  let out;
  if (typeof type === 'string') {
    out = { ...schema, type: [type, 'null'] };
  } else if (Array.isArray(type)) {
    out = { ...schema, type: type.includes('null') ? type : [...type, 'null'] };
  } else if (type === undefined && !schema.enum) {
    // `{}` takes null already; so does an `anyOf` with a null branch.
    const already = schema.anyOf?.some((branch) => branch.type === 'null');
    if (already || Object.keys(schema).length === 0) return schema;
    return { anyOf: [schema, { type: 'null' }] };
  } else {
    out = { ...schema };
  }
  if (out.enum && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

/** A property's schema: a default is also stated in the description (models read that). */
function propertySchema(shape) {
  const { schema } = shape;
  const value = shape.defaultValue;
  if (!shape.hasDefault || value === null || value === undefined) return schema;
  const note = `Defaults to \`${typeof value === 'string' ? value : JSON.stringify(value)}\`.`;
  const wrapped = schema.anyOf && schema.description === undefined;
  const target = wrapped ? schema.anyOf[0] : schema;
  const text = target.description ?? '';
  if (/default/i.test(text)) return schema;
  const noted = { ...target, description: text.trim() ? `${text.trimEnd()} ${note}` : note };
  return wrapped ? { ...schema, anyOf: [noted, ...schema.anyOf.slice(1)] } : noted;
}

function objectSchema(props, description) {
  const properties = {};
  const required = [];
  for (const [name, shape] of Object.entries(props)) {
    properties[name] = propertySchema(shape);
    if (shape.required) required.push(name);
  }
  const schema = { type: 'object', properties };
  if (required.length) schema.required = required;
  // Closed: a key that is not a field (a model's typo) is an error to fix.
  schema.additionalProperties = false;
  return described(schema, description);
}

const COMBINATORS = ['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else'];

/**
 * Closes every object schema of a hand-written JSON Schema that lists its
 * `properties` and says nothing about others (`"additionalProperties": false`),
 * in `properties`, `items` and `$defs`. Schemas under `allOf`/`anyOf`/`oneOf`
 * are left as written: closing a branch would refuse its siblings' keys.
 */
function closeObjects(schema) {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const out = { ...schema };
  const open = ['additionalProperties', 'patternProperties', 'unevaluatedProperties'].some(
    (key) => key in out,
  );
  if (out.properties && !open && !COMBINATORS.some((key) => key in out)) {
    out.additionalProperties = false;
  }
  for (const key of ['properties', '$defs']) {
    if (out[key] && typeof out[key] === 'object') {
      out[key] = Object.fromEntries(
        Object.entries(out[key]).map(([name, sub]) => [name, closeObjects(sub)]),
      );
    }
  }
  if (out.items) out.items = closeObjects(out.items);
  return out;
}

/** Fills missing defaults (and `null` for optional fields), recursively; `null`
 * where there is a default is missing (optional means nullable). */
function fillObject(props, value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out = { ...value };
  for (const [name, shape] of Object.entries(props)) {
    if (out[name] === undefined || (out[name] === null && shape.hasDefault)) {
      if (shape.hasDefault) out[name] = structuredCloneJson(shape.defaultValue);
      else if (shape.isOptional) out[name] = null;
    }
    if (out[name] !== undefined && out[name] !== null) out[name] = shape.fill(out[name]);
  }
  return out;
}

function structuredCloneJson(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/** Shape builders: `t.string('A name.')`, `t.array(t.integer())`, `t.object({...})`. */
export const t = {
  string: (description) => new Shape(described({ type: 'string' }, description)),
  integer: (description) => new Shape(described({ type: 'integer' }, description)),
  number: (description) => new Shape(described({ type: 'number' }, description)),
  boolean: (description) => new Shape(described({ type: 'boolean' }, description)),
  /** One of fixed values (strings or numbers). */
  enum: (values, description) => {
    const kinds = new Set(values.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
    const schema = { enum: [...values] };
    if (kinds.size === 1) {
      const [kind] = kinds;
      schema.type = kind === 'integer' ? 'integer' : kind === 'number' ? 'number' : kind;
    }
    return new Shape(described(schema, description));
  },
  array: (items, description) =>
    new Shape(described({ type: 'array', items: items.schema }, description), (value) =>
      Array.isArray(value) ? value.map((item) => items.fill(item)) : value,
    ),
  object: (props, description) =>
    new Shape(objectSchema(props, description), (value) => fillObject(props, value)),
  /** Any JSON value, with a hand-written JSON Schema. */
  schema: (schema) => new Shape({ ...schema }),
};

// --- results ----------------------------------------------------------------

/** One part of a multimodal result, or one chunk of a stream. */
export class Part {
  constructor(wit) {
    this.wit = wit;
  }

  /** Plain text. */
  static text(text) {
    return new Part({ tag: 'text', val: String(text) });
  }

  /** A JSON value. */
  static json(value) {
    return new Part({ tag: 'json', val: toJson(value) });
  }

  /** Bytes of a kind (`image`, `audio`, `video`, `file`) and MIME type. */
  static blob(kind, mimeType, data, name) {
    if (!['image', 'audio', 'video', 'file'].includes(kind)) {
      throw new TypeError(`media kind must be image, audio, video or file, not ${kind}`);
    }
    return new Part({
      tag: 'blob',
      val: { kind, mimeType, name: name ?? undefined, data: Uint8Array.from(data) },
    });
  }

  static image(mimeType, data, name) {
    return Part.blob('image', mimeType, data, name);
  }

  static audio(mimeType, data, name) {
    return Part.blob('audio', mimeType, data, name);
  }

  static video(mimeType, data, name) {
    return Part.blob('video', mimeType, data, name);
  }

  static file(mimeType, data, name) {
    return Part.blob('file', mimeType, data, name);
  }
}

/** A result with parts: `new Output({ json: {...}, parts: [Part.image(...)] })`. */
export class Output {
  constructor({ json, parts } = {}) {
    this.json = json;
    this.parts = parts ?? [];
  }
}

function toJson(value) {
  const text = JSON.stringify(value === undefined ? null : value);
  if (text === undefined) throw new ToolError('the result is not valid JSON');
  return text;
}

function intoOutput(value) {
  if (value instanceof Output) {
    return {
      json: value.json === undefined ? undefined : toJson(value.json),
      parts: value.parts.map((part) => part.wit),
    };
  }
  if (value instanceof Part) return { json: undefined, parts: [value.wit] };
  return { json: toJson(value), parts: [] };
}

function intoChunk(item) {
  if (item instanceof Part) return item.wit;
  if (typeof item === 'string') return { tag: 'text', val: item };
  return { tag: 'json', val: toJson(item) };
}

// --- tools ------------------------------------------------------------------

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const GeneratorFunction = Object.getPrototypeOf(function* () {}).constructor;
const registry = new Map();

/**
 * Who is calling, as the host authenticated them (MCP over HTTP with OAuth or a
 * static token); never their credentials. `claims` holds only the token claims
 * the operator lets this plugin see (its `caller_claims` grant).
 */
export class Caller {
  constructor({ issuer, subject, scopes = [], claims = {} }) {
    /** Who vouches for the subject: the OAuth issuer URL, or `toolhost:static-token`. */
    this.issuer = issuer;
    /** The caller, unique under its issuer (a token's `sub`). */
    this.subject = subject;
    /** The scopes the caller's credentials grant. */
    this.scopes = Object.freeze([...scopes]);
    /** The granted claims, by name. */
    this.claims = Object.freeze({ ...claims });
    Object.freeze(this);
  }

  /** Whether the caller's credentials grant `scope`. */
  hasScope(scope) {
    return this.scopes.includes(scope);
  }

  /** The granted claim `name`, or `null`. */
  claim(name) {
    return Object.hasOwn(this.claims, name) ? this.claims[name] : null;
  }

  /** The caller as JSON: `issuer`, `subject`, `scopes`, `claims`. */
  toJSON() {
    return { issuer: this.issuer, subject: this.subject, scopes: this.scopes, claims: this.claims };
  }
}

/** The WIT `option<caller>` as a `Caller`, or `null`. */
function callerOf(wit) {
  if (wit === undefined || wit === null) return null;
  let claims = {};
  try {
    const parsed = JSON.parse(wit.claims || '{}');
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) claims = parsed;
  } catch {
    // The host always sends a JSON object; anything else reads as none.
  }
  return new Caller({ issuer: wit.issuer, subject: wit.subject, scopes: wit.scopes, claims });
}

/** The context of one call: IDs, its caller, the invocation's scratch state, the host log. */
export class Context {
  constructor(call) {
    this.callId = call.callId;
    this.invocationId = call.invocationId;
    /** The tool's name; in a catalog request, what it is for: the URI read,
     * or the prompt's name (or template's) being filled in or completed. */
    this.tool = call.tool;
    /** Who is calling (a `Caller`), or `null` when nobody authenticated them
     * (stdio, the CLI, a server without authentication). */
    this.caller = callerOf(call.caller);
  }

  stateGet(key) {
    return stateGet(key) ?? null;
  }

  stateSet(key, value) {
    stateSet(key, String(value));
  }

  stateDelete(key) {
    stateDelete(key);
  }

  /**
   * Asks the user a question mid-call and waits for the answer (MCP
   * elicitation; on the CLI, the terminal). `schema` is the form: a JSON
   * Schema object (or its JSON text) whose properties are flat: strings
   * (`enum`, `format`...), numbers, integers, booleans or arrays of enum
   * strings. Returns an `Answer`; throws `AskError` when there is none.
   *
   *   const answer = cx.ask('Go on?', { type: 'object', properties: { go: { type: 'boolean' } } });
   *   if (answer.accepted && answer.content.go) { ... }
   */
  ask(message, schema) {
    const form = typeof schema === 'string' ? schema : JSON.stringify(schema);
    let answer;
    try {
      answer = hostAsk({ message: String(message), schema: form });
    } catch (err) {
      // componentize-qjs throws a WIT `err` as an Error whose `payload` is the variant.
      const why = err?.payload;
      if (why && typeof why === 'object' && ASK_REASONS.includes(why.tag)) {
        throw new AskError(why.tag, why.val ?? '');
      }
      throw err;
    }
    if (answer.tag !== 'accept') return new Answer(answer.tag);
    let content;
    try {
      content = JSON.parse(answer.val);
    } catch (err) {
      throw new AskError('invalid', `the answer is not a JSON object: ${err.message}`);
    }
    if (content === null || typeof content !== 'object' || Array.isArray(content)) {
      throw new AskError('invalid', 'the answer is not a JSON object');
    }
    return new Answer('accept', content);
  }

  /** Tells the host that the resource at `uri`, which this plugin offers, has
   * changed: clients that subscribed to it are told. A URI the plugin does not
   * offer is ignored (and logged by the host). */
  resourceUpdated(uri) {
    resourceUpdated(String(uri));
  }

  log(level, message) {
    log(level, String(message));
  }

  debug(message) {
    this.log('debug', message);
  }

  info(message) {
    this.log('info', message);
  }

  warn(message) {
    this.log('warn', message);
  }

  error(message) {
    this.log('error', message);
  }
}

/**
 * Declares a tool. `spec`: `name`, `description`, `args` (an object of shapes)
 * or `inputSchema` (a JSON Schema object), and optionally `longRunning`,
 * `outputSchema`, `stream` (defaults to: `run` is a generator function).
 * Hints about the tool's behaviour, which MCP clients see as its
 * `annotations`, are optional too: `title` (a string), `readOnly`,
 * `destructive`, `idempotent` and `openWorld` (booleans); one left out is not
 * sent, and the host enforces none of them.
 * Argument keys the tool does not declare are refused (the schema's objects
 * get `"additionalProperties": false`) unless `allowUnknownArgs: true`.
 * `run(args, cx)` returns the result (any JSON value, a `Part` or an `Output`).
 */
export function tool(spec, run) {
  const name = spec.name;
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new TypeError(`tool name ${name}: use 1 to 64 ASCII letters, digits, '_' or '-'`);
  }
  if (registry.has(name)) throw new TypeError(`two tools are named ${name}`);
  const args = spec.args ?? {};
  const inputSchema = spec.allowUnknownArgs
    ? { ...(spec.inputSchema ?? objectSchema(args)), additionalProperties: true }
    : closeObjects(spec.inputSchema ?? objectSchema(args));
  registry.set(name, {
    declaration: {
      info: {
        name,
        description: spec.description ?? '',
        longRunning: !!spec.longRunning,
        hints: {
          title: spec.title ?? undefined,
          readOnly: hint(spec.readOnly),
          destructive: hint(spec.destructive),
          idempotent: hint(spec.idempotent),
          openWorld: hint(spec.openWorld),
        },
      },
      inputSchema: JSON.stringify(inputSchema),
      outputSchema: spec.outputSchema ? JSON.stringify(spec.outputSchema) : undefined,
      streaming: spec.stream ?? run instanceof GeneratorFunction,
    },
    args,
    closed: inputSchema.additionalProperties === false,
    known: new Set(Object.keys(inputSchema.properties ?? {})),
    run,
  });
}

/** A boolean hint as the WIT `option<bool>`: left out stays `undefined`. */
function hint(value) {
  return value === undefined || value === null ? undefined : !!value;
}

function asToolError(err, cx, what = 'tool') {
  if (err instanceof ToolError) return err;
  const kind = err?.name ?? typeof err;
  const message = err?.message ?? String(err);
  try {
    cx?.error(`${what} \`${cx.tool}\` threw ${kind}: ${message}\n${err?.stack ?? ''}`);
  } catch {
    // Logging must not hide the original error.
  }
  return new ToolError(message ? `${kind}: ${message}` : kind);
}

function witError(err) {
  return { tag: err.kind, val: err.message };
}

function start(call) {
  const entry = registry.get(call.tool);
  if (!entry) throw new UnknownTool(call.tool);
  let raw;
  try {
    raw = call.arguments ? JSON.parse(call.arguments) : {};
  } catch (err) {
    throw new InvalidArguments(`the arguments are not JSON: ${err.message}`);
  }
  if (raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new InvalidArguments('the arguments must be a JSON object');
  }
  if (entry.closed) {
    // The host's schema check refuses them first; this covers native calls.
    const unknown = Object.keys(raw).filter((key) => !entry.known.has(key));
    if (unknown.length) {
      throw new InvalidArguments(`unknown argument ${unknown.map((k) => `\`${k}\``).join(', ')}`);
    }
  }
  for (const [name, shape] of Object.entries(entry.args)) {
    if (shape.required && raw[name] === undefined) {
      throw new InvalidArguments(`missing field \`${name}\``);
    }
  }
  const cx = new Context(call);
  return { entry, cx, value: entry.run(fillObject(entry.args, raw), cx) };
}

class Chunks {
  constructor(items, cx) {
    this.items = items;
    this.cx = cx;
  }

  next() {
    if (!this.items) return undefined;
    let step;
    try {
      step = this.items.next();
      if (step.done) {
        this.items = undefined;
        return undefined;
      }
      return intoChunk(step.value);
    } catch (err) {
      // After an error the stream is over: `none` from then on.
      this.items = undefined;
      throw witError(asToolError(err, this.cx));
    }
  }
}

function collect(items) {
  const parts = [];
  for (const item of items) {
    const chunk = intoChunk(item);
    const last = parts[parts.length - 1];
    if (chunk.tag === 'text' && last?.tag === 'text') last.val += chunk.val;
    else parts.push(chunk.tag === 'text' ? { ...chunk } : chunk);
  }
  const allText = parts.every((part) => part.tag === 'text');
  const json = allText ? JSON.stringify(parts.map((part) => part.val).join('')) : undefined;
  return { json, parts };
}

/** The WIT `tools` interface over every tool declared with `tool`: `export const tools = exportTools();`. */
export function exportTools() {
  return {
    Chunks,
    declarations() {
      return [...registry.values()].map((entry) => entry.declaration);
    },
    invoke(call) {
      let cx;
      try {
        const started = start(call);
        cx = started.cx;
        if (started.entry.declaration.streaming) return collect(started.value);
        return intoOutput(started.value);
      } catch (err) {
        throw witError(asToolError(err, cx ?? new Context(call)));
      }
    },
    invokeStream(call) {
      let cx;
      try {
        const started = start(call);
        cx = started.cx;
        if (started.entry.declaration.streaming) return new Chunks(started.value[Symbol.iterator](), cx);
        const output = intoOutput(started.value);
        const head = output.json === undefined ? [] : [{ tag: 'json', val: output.json }];
        return new Chunks([...head, ...output.parts].map((wit) => new Part(wit))[Symbol.iterator](), cx);
      } catch (err) {
        throw witError(asToolError(err, cx ?? new Context(call)));
      }
    },
  };
}

// The catalog (toolhost-catalog.js) shares these; see `linkCatalog`.
linkCatalog({
  Part,
  Shape,
  ToolError,
  InvalidArguments,
  UnknownTool,
  Context,
  NAME,
  fillObject,
  asToolError,
  witError,
});
