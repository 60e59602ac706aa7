/**
 * The units an answer may carry next to its number (`5\text{ cm}`, `18 dollars`, `3 \text{ m}^2`).
 * Only these are dropped: any other word beside a number stays in the answer, so `12 is wrong`,
 * `\text{not }12` or `\textbf{(C) }12` are not the number 12. The list is closed on purpose: a grader
 * that drops whatever text sits next to a number rewards hedges and negations.
 */

/** Units of measure, money, angle and time, singular and plural, and common abbreviations. */
const MEASURES = [
  // length
  'mm',
  'cm',
  'km',
  'in',
  'inch',
  'inches',
  'ft',
  'foot',
  'feet',
  'yd',
  'yard',
  'yards',
  'mi',
  'mile',
  'miles',
  'meter',
  'meters',
  'metre',
  'metres',
  'millimeter',
  'millimeters',
  'millimetre',
  'millimetres',
  'centimeter',
  'centimeters',
  'centimetre',
  'centimetres',
  'kilometer',
  'kilometers',
  'kilometre',
  'kilometres',
  // mass
  'mg',
  'kg',
  'gm',
  'gram',
  'grams',
  'milligram',
  'milligrams',
  'kilogram',
  'kilograms',
  'lb',
  'lbs',
  'pound',
  'pounds',
  'oz',
  'ounce',
  'ounces',
  'ton',
  'tons',
  'tonne',
  'tonnes',
  // volume
  'ml',
  'mL',
  'liter',
  'liters',
  'litre',
  'litres',
  'milliliter',
  'milliliters',
  'millilitre',
  'millilitres',
  'gallon',
  'gallons',
  'quart',
  'quarts',
  'pint',
  'pints',
  'cup',
  'cups',
  // time
  'sec',
  'secs',
  'second',
  'seconds',
  'min',
  'mins',
  'minute',
  'minutes',
  'hr',
  'hrs',
  'hour',
  'hours',
  'day',
  'days',
  'week',
  'weeks',
  'month',
  'months',
  'year',
  'years',
  // speed
  'mph',
  'kph',
  'km/h',
  'm/s',
  // money
  'dollar',
  'dollars',
  'cent',
  'cents',
  'euro',
  'euros',
  // angle
  'degree',
  'degrees',
  'deg',
  'radian',
  'radians',
  'rad',
  // generic
  'unit',
  'units',
];

/** The counting words verl's math_dapo normalisation drops (`204 ways`, `12 students`). */
const COUNTS = ['ways', 'integers', 'points', 'digits', 'edges', 'students', 'meals', 'multiples'];

/** One-letter units (`m`, `g`, `s`, `h`, `L`): only inside `\text{}`-like commands, where they cannot be a variable. */
const LETTERS = ['m', 'g', 's', 'h', 'l', 'L'];

const escape = (w: string) => w.replace(/[/]/g, '\\/');
const WORD = `(?:${[...MEASURES, ...COUNTS]
  .sort((a, b) => b.length - a.length)
  .map(escape)
  .join('|')})`;
const LETTER_OR_WORD = `(?:${WORD}|${LETTERS.join('|')})`;
/** `square feet`, `sq. ft`, `cubic meters`, `miles per hour`, `m^2`, `cm^{3}`. */
const compound = (unit: string) => `(?:(?:square|sq\\.?|cubic|cu\\.?)\\s+)?${unit}(?:\\s*\\^\\s*(?:\\{\\s*[23]\\s*\\}|[23]))?(?:\\s+per\\s+${unit})?`;

const PLAIN_UNIT = new RegExp(`^${compound(WORD)}\\.?$`, 'i');
const TEXT_UNIT = new RegExp(`^${compound(LETTER_OR_WORD)}\\.?$`);

/** Whether a plain-text word group (`cm`, `square feet`, `dollars.`) is a known unit. */
export function isPlainUnit(words: string): boolean {
  return PLAIN_UNIT.test(words.trim());
}

/** Whether the content of a `\text{…}`-like command (`cm`, ` m`, `square units`) is a known unit. */
export function isTextUnit(content: string): boolean {
  const t = content.trim();
  return TEXT_UNIT.test(t) || PLAIN_UNIT.test(t);
}

/** The list, for the README and tests. */
export const KNOWN_UNITS: readonly string[] = [...MEASURES, ...COUNTS, ...LETTERS.map((l) => `${l} (in \\text{} only)`)];
