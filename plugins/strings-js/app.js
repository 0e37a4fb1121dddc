// Example plugin `strings-js`: identifier and text shaping with the JavaScript
// guest SDK (guest-sdk/js, QuickJS). `cargo xtask plugins` builds it into
// target/plugins/strings-js.wasm.
import { InvalidArguments, exportTools, t, tool } from './toolhost-guest.js';

/** Splits any identifier or phrase into lowercase words: `fooBar-baz qux` → foo, bar, baz, qux. */
function words(text) {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word.toLowerCase());
}

const capitalize = (word) => word.charAt(0).toUpperCase() + word.slice(1);

const CASES = {
  camel: (w) => w.map((word, i) => (i ? capitalize(word) : word)).join(''),
  pascal: (w) => w.map(capitalize).join(''),
  snake: (w) => w.join('_'),
  kebab: (w) => w.join('-'),
  constant: (w) => w.join('_').toUpperCase(),
  title: (w) => w.map(capitalize).join(' '),
};

tool(
  {
    name: 'convert_case',
    description:
      'Rewrites an identifier or phrase in another naming convention (camelCase, snake_case, ...). Accents are dropped.',
    args: {
      text: t.string('The identifier or phrase, in any convention.'),
      to: t.enum(Object.keys(CASES), 'The convention to convert to.'),
    },
  },
  ({ text, to }) => {
    const parts = words(text);
    if (parts.length === 0) throw new InvalidArguments('`text` has no letters or digits');
    return { text: CASES[to](parts), words: parts };
  },
);

tool(
  {
    name: 'slugify',
    description: 'Makes a URL slug from a title: lowercase ASCII words joined by a separator.',
    args: {
      title: t.string('The title.'),
      separator: t.enum(['-', '_', '.'], 'What joins the words.').default('-'),
      max_length: t.integer('Longest slug, cut at a word boundary; 0 for no limit.').default(0),
    },
  },
  ({ title, separator, max_length }) => {
    let slug = '';
    for (const word of words(title)) {
      const next = slug ? `${slug}${separator}${word}` : word;
      if (max_length > 0 && next.length > max_length) break;
      slug = next;
    }
    if (!slug) throw new InvalidArguments('the title gives an empty slug');
    return { slug };
  },
);

tool(
  {
    name: 'wrap_text',
    description: 'Wraps text to a line width at word boundaries, streaming one line at a time.',
    args: {
      text: t.string('The text; existing blank lines separate paragraphs.'),
      width: t.integer('The longest line, in characters (10 to 200).').default(72),
    },
  },
  function* ({ text, width }) {
    if (width < 10 || width > 200) throw new InvalidArguments('`width` must be from 10 to 200');
    const paragraphs = text.split(/\n\s*\n/);
    for (const [index, paragraph] of paragraphs.entries()) {
      if (index > 0) yield '\n';
      let line = '';
      for (const word of paragraph.split(/\s+/).filter(Boolean)) {
        if (line && line.length + 1 + word.length > width) {
          yield `${line}\n`;
          line = word;
        } else {
          line = line ? `${line} ${word}` : word;
        }
      }
      if (line) yield `${line}\n`;
    }
  },
);

export const tools = exportTools();
