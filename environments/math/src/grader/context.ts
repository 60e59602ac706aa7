/**
 * Reading the words around a final answer, the way a careful grader does: "not \boxed{12}",
 * "either 12 or 13", "\boxed{12}?", "\boxed{12} is wrong" do not state 12 as the answer.
 *
 * Word lists are not a complete model of English, and they need not be: a policy gains nothing from
 * writing a retraction next to an answer it is graded on anyway. They keep the grader honest about
 * responses a person would mark wrong, and cost a rare false negative on a correct answer written
 * next to such a word ("since x is not 0, x = \boxed{2}" is fine: the comma ends the clause).
 */

/** Words that hedge or negate when they share a clause with the answer (just before it, or after it in its sentence). */
const HEDGE_OR_NEGATION =
  /\b(?:not|never|either|or|maybe|perhaps|possibly|probably|might|could\s+be|guess|guessing|unsure|uncertain|wrong|incorrect|false|mistake|mistaken|isn't|aren't|wasn't|can't|cannot|won't|doesn't|don't)\b|n't\b/i;

/** Words that take an answer back, anywhere after it. */
const RETRACTION =
  /\b(?:wrong|incorrect|mistake|mistaken|erroneous|not\s+(?:the\s+)?(?:right|correct|final)|isn't\s+(?:the\s+)?(?:right|correct|final)|scratch\s+that|disregard|ignore\s+(?:that|this|the\s+above))\b/i;

/** Before the answer, `or` only hedges right after another candidate (`12 or \boxed{13}`): "red or blue balls is" does not. */
const CANDIDATE_OR = /(?:\d|\})[\s$]*\bor[\s$]*$/i;
/** How many words before an answer are read: "the answer is not", "maybe it is", "I guess the answer is". */
const WORDS_BEFORE = 5;

/** Where a clause ends (for the words before an answer): sentence ends, commas, semicolons, line breaks. */
const CLAUSE_END = /[.!?;,](?=\s|$)|\n/g;
/** Where a sentence ends (for the words after an answer). */
const SENTENCE_END = /[.!?;](?=\s|$)|\n/;

/** Why the context of an answer disqualifies it, or null. */
export type ContextProblem = 'hedged' | 'retracted';

/**
 * Checks the text around an answer at `[start, end)` of `text`:
 * - the last words of the clause before it, and the rest of its sentence after it, must not hedge or
 *   negate (`not`, `either … or`, `maybe`, `wrong`, …), and a `?` must not follow it: else `'hedged'`;
 * - nothing after it may take it back (`wrong`, `incorrect`, `mistake`, `not correct`, …): else
 *   `'retracted'`.
 */
export function contextProblem(text: string, start: number, end: number): ContextProblem | null {
  const before = clauseBefore(text, start);
  const lastWords = before
    .split(/\s+/)
    .filter((w) => w !== '')
    .slice(-WORDS_BEFORE)
    .join(' ');
  if (HEDGE_OR_NEGATION.test(lastWords.replace(/\bor\b/gi, '')) || CANDIDATE_OR.test(before)) return 'hedged';
  const after = text.slice(end);
  // `\boxed{12}?`, `$\boxed{12}$?`: a question, not an answer.
  if (/^[\s$})\]*_]*\?/.test(after)) return 'hedged';
  const sentenceEnd = after.search(SENTENCE_END);
  const sameSentence = sentenceEnd < 0 ? after : after.slice(0, sentenceEnd);
  if (HEDGE_OR_NEGATION.test(sameSentence)) return 'hedged';
  if (RETRACTION.test(after)) return 'retracted';
  return null;
}

/** The text from the last clause end before `start` up to `start`. */
function clauseBefore(text: string, start: number): string {
  const head = text.slice(Math.max(0, start - 400), start);
  let from = 0;
  CLAUSE_END.lastIndex = 0;
  for (let m = CLAUSE_END.exec(head); m; m = CLAUSE_END.exec(head)) from = m.index + m[0].length;
  return head.slice(from);
}

/** Whether words next to an answer hedge or negate it (`12 or 13`, `not 12`). */
export function hedges(words: string): boolean {
  return HEDGE_OR_NEGATION.test(words);
}
