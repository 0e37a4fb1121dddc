// The catalog of a toolhost plugin in JavaScript: resources, resource
// templates, prompts and completions (MCP's other server features), besides
// its tools. Import it from toolhost-guest.js, which re-exports it:
//
//   import { resource, prompt, complete, Completion, exportCatalog, t } from './toolhost-guest.js';
//
//   resource({ uri: 'notes://today', name: 'today', mimeType: 'text/plain' }, () => 'Buy milk.');
//   prompt({ name: 'summarize', description: 'Summarizes a day.', args: { day: t.string('Which day.') } },
//     ({ day }) => `Summarize the notes of ${day}.`);
//   complete('summarize', 'day', ({ value }) => Completion.matching(['today', 'tuesday'], value));
//
//   export const catalog = exportCatalog();
//
// The build exports an empty catalog for a module that exports none, so a
// plugin that offers only tools needs no `catalog` export.

// What the catalog shares with the tools (their errors, argument filling, the
// call context) is toolhost-guest.js's, which hands it over when it loads
// (`linkCatalog`): importing it from there would be an import cycle and would
// make the SDK's private helpers part of its API.
let Part;
let Shape;
let ToolError;
let InvalidArguments;
let UnknownTool;
let Context;
let NAME;
let fillObject;
let asToolError;
let witError;

/** Internal: toolhost-guest.js calls it once, as it loads, before any declaration. */
export function linkCatalog(tools) {
  ({ Part, Shape, ToolError, InvalidArguments, UnknownTool, Context, NAME, fillObject, asToolError, witError } =
    tools);
}

/** The most values a completion serves; the SDK cuts a longer list and says there are more. */
export const MAX_COMPLETIONS = 100;

const VARIABLE = /\{\+?([^{}]*)\}/g;

/** The variables of a URI template, in order: `day` in `notes://{day}`. */
function variablesOf(uriTemplate) {
  return [...uriTemplate.matchAll(VARIABLE)].map((match) => match[1]);
}

function isBytes(value) {
  return value instanceof Uint8Array || value instanceof ArrayBuffer;
}

/**
 * One resource's content, as a read returns it or a prompt message embeds it:
 * `new Contents('Buy milk.')` is text, `new Contents(pngBytes, { mimeType: 'image/png' })`
 * bytes (a `Uint8Array`). A read may also return a bare string or `Uint8Array`.
 * `uri` left out in a read's result means the URI read (a prompt message that
 * embeds contents needs one); `mimeType` left out there means the declared one.
 */
export class Contents {
  constructor(body, { uri, mimeType } = {}) {
    if (typeof body === 'string') {
      this.body = body;
    } else if (isBytes(body)) {
      this.body = new Uint8Array(body);
    } else {
      throw new TypeError(`contents are a string or a Uint8Array, not ${describeType(body)}`);
    }
    this.uri = uri ?? null;
    this.mimeType = mimeType ?? null;
  }

  /** Text contents. */
  static text(text, options) {
    return new Contents(String(text), options);
  }

  /** Byte contents (an array of bytes or a `Uint8Array`). */
  static bytes(data, options) {
    return new Contents(Uint8Array.from(data), options);
  }

  /** The WIT `resource-contents`. */
  toWit() {
    return {
      uri: this.uri ?? '',
      mimeType: this.mimeType ?? undefined,
      body: typeof this.body === 'string' ? { tag: 'text', val: this.body } : { tag: 'bytes', val: this.body },
    };
  }
}

function describeType(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return value?.constructor?.name ?? typeof value;
}

const ROLES = ['user', 'assistant'];

/** One message of a filled-in prompt; build it with `user(...)` or `assistant(...)`. */
export class Message {
  constructor(role, content) {
    if (!ROLES.includes(role)) throw new TypeError(`role must be user or assistant, not ${role}`);
    if (typeof content === 'string') content = Part.text(content);
    if (!(content instanceof Part || content instanceof Contents)) {
      throw new TypeError(`a message holds a string, Part or Contents, not ${describeType(content)}`);
    }
    /** `user` or `assistant`. */
    this.role = role;
    /** Text, JSON or media (a `Part`), or an embedded resource (`Contents` with its `uri`). */
    this.content = content;
  }
}

/** A prompt message said by the user: text, a `Part` or an embedded resource (`Contents` with a `uri`). */
export function user(content) {
  return new Message('user', content);
}

/** A prompt message said by the model; see `user`. */
export function assistant(content) {
  return new Message('assistant', content);
}

/** What a prompt returns when it also describes the filled-in prompt. */
export class Messages {
  constructor(messages, description) {
    /** The messages, in order (strings are user messages). */
    this.messages = messages;
    /** A description of this filled-in prompt. */
    this.description = description ?? null;
  }
}

/** Suggested values, best first: at most 100 are served (the SDK cuts a longer
 * list and sets `hasMore`). A completion may return an array of strings instead. */
export class Completion {
  constructor(values, { total, hasMore = false } = {}) {
    /** The values, best first. */
    this.values = [...values].map(String);
    /** How many there are in all, when known. */
    this.total = total ?? null;
    /** Whether there are more than those returned. */
    this.hasMore = !!hasMore;
  }

  /** The `candidates` that start with `prefix` (case-sensitive), in order, with their count as the total. */
  static matching(candidates, prefix) {
    const values = [...candidates].map(String).filter((c) => c.startsWith(prefix ?? ''));
    return new Completion(values, { total: values.length });
  }

  /** At most 100 values; if it cut any, there are more. */
  capped() {
    if (this.values.length <= MAX_COMPLETIONS) return this;
    return new Completion(this.values.slice(0, MAX_COMPLETIONS), { total: this.total, hasMore: true });
  }
}

const resources = new Map();
const templates = new Map();
const prompts = new Map();
// `${target}\n${argument}` (argument '' for every argument) -> { target, argument, run }
const completions = new Map();

function optionalString(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string`);
  return value;
}

/**
 * Declares a resource at a fixed URI (MCP `Resource`). `spec`: `uri`, `name`,
 * and optionally `title`, `description`, `mimeType`, `size` (bytes).
 * `read(cx)` returns a string, a `Uint8Array`, a `Contents`, or an array of
 * them (sub-resources name their URIs). Contents without a URI are the
 * resource's and get its MIME type.
 */
export function resource(spec, read) {
  const { uri, name } = spec ?? {};
  if (typeof uri !== 'string' || !uri) throw new TypeError('a resource needs a `uri`');
  if (typeof name !== 'string' || !name) throw new TypeError(`resource ${uri}: it needs a \`name\``);
  if (typeof read !== 'function') throw new TypeError(`resource ${uri}: its reader is not a function`);
  if (resources.has(uri)) throw new TypeError(`two resources have the URI ${uri}`);
  if (spec.size !== undefined && spec.size !== null && !(Number.isInteger(spec.size) && spec.size >= 0)) {
    throw new TypeError(`resource ${uri}: \`size\` is a number of bytes`);
  }
  const info = {
    uri,
    name,
    title: optionalString(spec.title, `resource ${uri}: \`title\``),
    description: optionalString(spec.description, `resource ${uri}: \`description\``),
    mimeType: optionalString(spec.mimeType, `resource ${uri}: \`mimeType\``),
    size: spec.size ?? undefined,
  };
  resources.set(uri, { info, read });
}

/**
 * Declares a family of resources whose URIs follow an RFC 6570 URI template
 * (MCP `ResourceTemplate`): `{name}` matches one path segment, `{+name}` any
 * text. `spec`: `uriTemplate`, `name`, and optionally `title`, `description`,
 * `mimeType`. `read(variables, cx)` gets the template's variables,
 * percent-decoded, as an object (`cx.tool` is the URI read) and returns what
 * a resource's reader does.
 */
export function resourceTemplate(spec, read) {
  const { uriTemplate, name } = spec ?? {};
  if (typeof uriTemplate !== 'string' || !uriTemplate) {
    throw new TypeError('a resource template needs a `uriTemplate`');
  }
  const where = `resource template ${uriTemplate}`;
  if (typeof name !== 'string' || !name) throw new TypeError(`${where}: it needs a \`name\``);
  if (typeof read !== 'function') throw new TypeError(`${where}: its reader is not a function`);
  if (templates.has(uriTemplate)) throw new TypeError(`two resource templates are ${uriTemplate}`);
  const variables = variablesOf(uriTemplate);
  if (!variables.length) throw new TypeError(`${where}: no {variable} (use resource)`);
  const info = {
    uriTemplate,
    name,
    title: optionalString(spec.title, `${where}: \`title\``),
    description: optionalString(spec.description, `${where}: \`description\``),
    mimeType: optionalString(spec.mimeType, `${where}: \`mimeType\``),
  };
  templates.set(uriTemplate, { info, variables, read });
}

function isStringShape(shape) {
  const { type } = shape.schema;
  return type === 'string' || (Array.isArray(type) && type.every((k) => k === 'string' || k === 'null'));
}

/**
 * Declares a prompt: messages a user picks, filled in with arguments (MCP
 * `Prompt`). `spec`: `name`, `description`, and optionally `title`, `args`
 * (an object of string shapes: `t.string('Which day.')`, required unless
 * `.optional()` or `.default(...)`) and `argumentTitles` (`{ day: 'Day' }`).
 * `get(args, cx)` returns a string (one user message), a `Message`
 * (`user(...)`, `assistant(...)`), a `Part` or `Contents` (the user's), an
 * array of them, or `new Messages([...], description)`.
 */
export function prompt(spec, get) {
  const name = spec?.name;
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new TypeError(`prompt name ${name}: use 1 to 64 ASCII letters, digits, '_' or '-'`);
  }
  if (prompts.has(name)) throw new TypeError(`two prompts are named ${name}`);
  if (typeof get !== 'function') throw new TypeError(`prompt ${name}: it is not a function`);
  const args = spec.args ?? {};
  const titles = spec.argumentTitles ?? {};
  const argumentsInfo = Object.entries(args).map(([arg, shape]) => {
    if (!(shape instanceof Shape) || !isStringShape(shape)) {
      throw new TypeError(`prompt ${name}, argument ${arg}: prompt arguments are strings (t.string(...))`);
    }
    return {
      name: arg,
      title: optionalString(titles[arg], `prompt ${name}: the title of ${arg}`),
      description: shape.schema.description ?? undefined,
      required: shape.required,
    };
  });
  for (const arg of Object.keys(titles)) {
    if (!Object.hasOwn(args, arg)) throw new TypeError(`prompt ${name}: no argument ${arg} to title`);
  }
  const info = {
    name,
    title: optionalString(spec.title, `prompt ${name}: \`title\``),
    description: spec.description ?? '',
    arguments: argumentsInfo,
  };
  prompts.set(name, { info, args, get });
}

/**
 * Declares the completion of `argument` of the prompt named `target`, or of
 * the variable `argument` of the template whose URI template is `target` (one
 * with a `{`); `complete(target, run)` completes every argument of it.
 * `run({ value, argument, context }, cx)` gets what the user typed so far,
 * the argument's name and the arguments already filled in (an object), and
 * returns an array of strings or a `Completion`. An argument without one
 * completes nothing.
 */
export function complete(target, argument, run) {
  if (typeof argument === 'function' && run === undefined) {
    run = argument;
    argument = null;
  }
  if (typeof target !== 'string' || !target) throw new TypeError('a completion needs a prompt or template');
  if (typeof run !== 'function') throw new TypeError(`completion of ${target}: it is not a function`);
  const key = `${target}\n${argument ?? ''}`;
  if (completions.has(key)) {
    throw new TypeError(`two completions for ${argument ? `argument ${argument} of ${target}` : target}`);
  }
  completions.set(key, { target, argument: argument ?? null, run });
}

/** Every completion is for a declared prompt's argument or template's variable. */
function checkCompletions() {
  for (const { target, argument } of completions.values()) {
    const isTemplate = target.includes('{');
    const kind = isTemplate ? 'resource template' : 'prompt';
    const found = isTemplate ? templates.get(target) : prompts.get(target);
    if (!found) throw new TypeError(`completion of ${target}: no ${kind} ${target} is declared`);
    const names = isTemplate ? found.variables : found.info.arguments.map((a) => a.name);
    if (argument !== null && !names.includes(argument)) {
      throw new TypeError(`completion of ${target}: the ${kind} ${target} has no ${argument}`);
    }
  }
}

function intoContents(value) {
  if (Array.isArray(value)) return value.flatMap(intoContents);
  if (value instanceof Contents) return [value];
  if (typeof value === 'string' || isBytes(value)) return [new Contents(value)];
  throw new ToolError(`a read returns a string, Uint8Array or Contents, not ${describeType(value)}`);
}

/** Contents without a URI are the read's; those of the URI read get the declared MIME type. */
function readContents(value, uri, mimeType) {
  return intoContents(value).map((contents) => {
    const wit = contents.toWit();
    if (contents.uri === null) wit.uri = uri;
    if (wit.uri === uri && wit.mimeType === undefined && mimeType !== undefined) wit.mimeType = mimeType;
    return wit;
  });
}

function intoMessages(value) {
  let description;
  if (value instanceof Messages) {
    description = value.description ?? undefined;
    value = value.messages;
  }
  const items = Array.isArray(value) ? value : [value];
  const messages = items.map((item) => {
    if (typeof item === 'string' || item instanceof Part || item instanceof Contents) item = user(item);
    if (!(item instanceof Message)) {
      throw new ToolError(`a prompt returns a string, Message, Messages or an array, not ${describeType(item)}`);
    }
    if (item.content instanceof Contents) {
      if (item.content.uri === null) {
        throw new ToolError('a prompt message embeds a resource without a URI (set it with `{ uri }`)');
      }
      return { role: item.role, content: { tag: 'resource', val: item.content.toWit() } };
    }
    return { role: item.role, content: { tag: 'part', val: item.content.wit } };
  });
  return { description, messages };
}

function intoCompletion(value) {
  if (value instanceof Completion) return value.capped();
  if (typeof value === 'string' || value === null || typeof value?.[Symbol.iterator] !== 'function') {
    throw new ToolError(`a completion returns an array of strings or a Completion, not ${describeType(value)}`);
  }
  return new Completion(value).capped();
}

function pairs(list) {
  const out = {};
  for (const [key, value] of list ?? []) out[key] = value;
  return out;
}

/** Runs one catalog request; any error becomes a WIT `tool-error`. */
function serve(request, what, subject, run) {
  const cx = new Context({ ...request, tool: subject });
  try {
    return run(cx);
  } catch (err) {
    throw witError(asToolError(err, cx, what));
  }
}

/**
 * The WIT `catalog` interface over everything declared with `resource`,
 * `resourceTemplate`, `prompt` and `complete`: `export const catalog = exportCatalog();`.
 * (The build exports it for a module that does not.)
 */
export function exportCatalog() {
  checkCompletions();
  return {
    describe() {
      return {
        resources: [...resources.values()].map((entry) => entry.info),
        templates: [...templates.values()].map((entry) => entry.info),
        prompts: [...prompts.values()].map((entry) => entry.info),
      };
    },
    readResource(read) {
      return serve(read.request, 'resource', read.uri, (cx) => {
        let entry;
        let value;
        if (read.template !== undefined && read.template !== null) {
          entry = templates.get(read.template);
          if (!entry) throw new UnknownTool(read.uri);
          value = entry.read(pairs(read.variables), cx);
        } else {
          entry = resources.get(read.uri);
          if (!entry) throw new UnknownTool(read.uri);
          value = entry.read(cx);
        }
        return readContents(value, read.uri, entry.info.mimeType);
      });
    },
    getPrompt(get) {
      return serve(get.request, 'prompt', get.name, (cx) => {
        const entry = prompts.get(get.name);
        if (!entry) throw new UnknownTool(get.name);
        const given = pairs(get.arguments);
        for (const [name, shape] of Object.entries(entry.args)) {
          // The host checks first; this covers native calls.
          if (shape.required && given[name] === undefined) throw new InvalidArguments(`\`${name}\` is missing`);
        }
        const known = Object.fromEntries(Object.keys(entry.args).map((name) => [name, given[name]]));
        return intoMessages(entry.get(fillObject(entry.args, known), cx));
      });
    },
    complete(request) {
      const { tag, val: target } = request.target;
      return serve(request.request, 'completion of', target, (cx) => {
        const declared = tag === 'template' ? templates : prompts;
        if (!declared.has(target)) throw new UnknownTool(target);
        const handler =
          completions.get(`${target}\n${request.argument}`) ?? completions.get(`${target}\n`);
        if (!handler) return { values: [], total: undefined, hasMore: false };
        const done = intoCompletion(
          handler.run({ value: request.value, argument: request.argument, context: pairs(request.context) }, cx),
        );
        return { values: done.values, total: done.total ?? undefined, hasMore: done.hasMore };
      });
    },
  };
}
