/** Small string helpers shared by the grader's modules. */

/**
 * Trims whitespace without breaking a LaTeX control space: `\frac{1}{2}\ ` becomes `\frac{1}{2}`,
 * not `\frac{1}{2}\` (a dangling backslash no parser can read).
 */
export function trimLatex(s: string): string {
  let t = s.trim();
  // An odd run of backslashes at the end escaped the whitespace just trimmed.
  const run = /\\+$/.exec(t);
  if (run && run[0].length % 2 === 1 && t.length < s.trimStart().length) t = t.slice(0, -1).trim();
  return t;
}

/** Text (a word of at least three letters, no digits or commands): compared case-insensitively. */
export function isWords(s: string): boolean {
  return /^[A-Za-z()'.-]*[A-Za-z]{3,}[A-Za-z()'.-]*$/.test(s);
}
