import { formatAge, formatBytes, formatDuration, formatNumber, table } from './output';

describe('output helpers', () => {
  it('aligns table columns and marks empty cells', () => {
    const rows = [
      { id: 'a', state: 'running', note: null },
      { id: 'bbbb', state: 'queued', note: 'two\nlines' },
    ];
    expect(
      table(rows, [
        ['ID', (r) => r.id],
        ['STATE', (r) => r.state],
        ['NOTE', (r) => r.note],
      ]),
    ).toBe(['ID    STATE    NOTE', 'a     running  -', 'bbbb  queued   two lines'].join('\n'));
  });

  it('formats sizes, durations, ages and metric values compactly', () => {
    expect([0, 1023, 1536, 5 * 1024 ** 2, 300 * 1024 ** 3].map(formatBytes)).toEqual(['0 B', '1023 B', '1.5 KiB', '5.0 MiB', '300 GiB']);
    expect([850, 12_340, 245_000, 7_380_000].map(formatDuration)).toEqual(['850ms', '12.3s', '4m05s', '2h03m']);
    const now = Date.parse('2026-01-02T00:00:00Z');
    expect(['2026-01-01T23:59:55Z', '2026-01-01T23:57:00Z', '2026-01-01T21:00:00Z', '2025-12-29T00:00:00Z'].map((t) => formatAge(t, now))).toEqual([
      '5s ago',
      '3m ago',
      '3h ago',
      '4d ago',
    ]);
    expect([3, 0.123456, 1234.5678, 0.00001234, -12345678.9].map(formatNumber)).toEqual(['3', '0.1235', '1235', '1.23e-5', '-1.23e+7']);
  });
});
