/**
 * Helpers to read a policy's text. They never throw: unparsable input gives `null`, so the environment
 * can answer with an error observation.
 */

/**
 * The content of the last `<tag>…</tag>` in the text, trimmed.
 *
 * @example
 * ```ts
 * parseTaggedAction('I will play <move>3,4</move>', 'move'); // '3,4'
 * ```
 */
export function parseTaggedAction(text: string, tag: string): string | null {
  if (typeof text !== 'string' || !/^[A-Za-z][\w-]*$/.test(tag)) return null;
  const close = `</${tag}>`;
  const end = text.lastIndexOf(close);
  if (end < 0) return null;
  const start = text.lastIndexOf(`<${tag}>`, end);
  if (start < 0) return null;
  return text.slice(start + tag.length + 2, end).trim();
}

/**
 * Fenced code blocks of a language (```` ```python ````), in order. `language` matching is
 * case-insensitive; `py` counts as `python`.
 *
 * @example
 * ```ts
 * extractCodeBlocks('```python\nprint(1)\n```', 'python'); // ['print(1)']
 * ```
 */
export function extractCodeBlocks(text: string, language = 'python'): string[] {
  if (typeof text !== 'string') return [];
  const wanted = language.toLowerCase();
  const aliases = wanted === 'python' ? ['python', 'py', 'python3'] : [wanted];
  const blocks: string[] = [];
  const fence = /```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n([\s\S]*?)```/g;
  for (let m = fence.exec(text); m; m = fence.exec(text)) {
    if (aliases.includes(m[1].toLowerCase())) blocks.push(m[2].replace(/\n$/, ''));
  }
  return blocks;
}

/**
 * The content of the last `\boxed{…}` (also `\fbox{…}` and `\boxed …` without braces), with nested
 * braces balanced. Returns null when there is none or its braces never close.
 *
 * @example
 * ```ts
 * extractBoxed('so $\\boxed{\\frac{1}{2}}$'); // '\\frac{1}{2}'
 * ```
 */
export function extractBoxed(text: string): string | null {
  if (typeof text !== 'string') return null;
  const at = Math.max(text.lastIndexOf('\\boxed'), text.lastIndexOf('\\fbox'));
  if (at < 0) return null;
  let i = at + (text.startsWith('\\boxed', at) ? 6 : 5);
  while (i < text.length && text[i] === ' ') i++;
  if (text[i] !== '{') {
    // `\boxed 5`: up to the next space, `$` or end.
    const m = /^[^\s$]+/.exec(text.slice(i));
    return m ? m[0] : null;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === '\\') {
      j++;
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return text.slice(i + 1, j).trim();
    }
  }
  return null;
}
