import { age, bytes, cancellable, duration, metricValue, shortId } from './public/format.mjs';

describe('dashboard formatting', () => {
  const t0 = Date.parse('2026-01-01T10:00:00Z');

  it('says how long ago in the largest whole unit', () => {
    expect(age('2026-01-01T10:00:00Z', t0)).toBe('0 s');
    expect(age('2026-01-01T10:00:00Z', t0 + 42_000)).toBe('42 s');
    expect(age('2026-01-01T10:00:00Z', t0 + 330_000)).toBe('5 min');
    expect(age('2026-01-01T10:00:00Z', t0 + 3 * 3_600_000 + 59_000)).toBe('3 h');
    expect(age('2026-01-01T10:00:00Z', t0 + 2 * 86_400_000)).toBe('2 d');
    expect(age(null, t0)).toBe('—');
    // a clock slightly behind the server's never shows a negative age
    expect(age('2026-01-01T10:00:05Z', t0)).toBe('0 s');
  });

  it('gives run times in two units at most', () => {
    expect(duration('2026-01-01T10:00:00Z', '2026-01-01T10:01:12Z')).toBe('1 min 12 s');
    expect(duration('2026-01-01T10:00:00Z', '2026-01-01T10:00:00Z')).toBe('0 s');
    expect(duration('2026-01-01T10:00:00Z', '2026-01-02T12:30:00Z')).toBe('1 d 2 h');
    expect(duration('2026-01-01T10:00:00Z', null, t0 + 5_000)).toBe('5 s');
    expect(duration(null, null)).toBe('—');
  });

  it('formats sizes, ids and metric values for people', () => {
    expect(bytes(812)).toBe('812 B');
    expect(bytes(1536)).toBe('1.5 KiB');
    expect(bytes(3.2 * 1024 * 1024)).toBe('3.2 MiB');
    expect(shortId('4f0c1a2b-0000-4000-8000-000000000000')).toBe('4f0c1a2b');
    expect(metricValue(3)).toBe('3');
    expect(metricValue(0.123456)).toBe('0.1235');
    expect(metricValue(0.00001234)).toBe('1.234e-5');
    expect(metricValue(0)).toBe('0');
    expect(metricValue(NaN)).toBe('NaN');
  });

  it('knows which jobs can still be cancelled', () => {
    expect(cancellable({ state: 'running', cancel_requested: false })).toBe(true);
    expect(cancellable({ state: 'running', cancel_requested: true })).toBe(false);
    expect(cancellable({ state: 'succeeded', cancel_requested: false })).toBe(false);
  });
});
