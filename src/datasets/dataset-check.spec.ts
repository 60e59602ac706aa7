import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { checkDatasetFile } from './dataset-check';
import { DatasetFormatError, parquetValueToJson, readDatasetRows } from './dataset-rows';

const needsAnswer = (row: unknown) => (typeof (row as { answer?: unknown })?.answer === 'string' ? null : 'no answer');

describe('dataset files: reading and checking rows', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ot-ds-check-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('numbers JSONL rows by line (BOM, CRLF and blank lines included) and keeps the first 20 bad rows', async () => {
    const lines = ['\uFEFF{"answer":"1"}', '', '{"answer":2}', ...Array.from({ length: 30 }, (_, i) => `{"q":${i}}`), '{"answer":"3"}'];
    const path = join(dir, 'rows.jsonl');
    writeFileSync(path, lines.join('\r\n'));
    const report = await checkDatasetFile(path, 'jsonl', needsAnswer);
    expect(report).toMatchObject({ rows: 33, valid_rows: 2, invalid_rows: 31, columns: ['answer', 'q'] });
    expect(report.bad_rows).toHaveLength(20);
    expect(report.bad_rows[0]).toEqual({ row: 3, reason: 'no answer' });
    expect(report.bad_rows[19]).toEqual({ row: 22, reason: 'no answer' });
  });

  it('reads parquet row group by row group without losing or renumbering rows across groups', async () => {
    const n = 9000;
    const answers = Array.from({ length: n }, (_, i) => (i === 2999 || i === 3000 || i === n - 1 ? null : String(i)));
    const path = join(dir, 'big.parquet');
    writeFileSync(
      path,
      Buffer.from(
        parquetWriteBuffer({
          columnData: [
            { name: 'answer', data: answers, type: 'STRING' },
            { name: 'id', data: answers.map((_, i) => BigInt(i)), type: 'INT64' },
          ],
          rowGroupSize: 3000,
        }),
      ),
    );
    const report = await checkDatasetFile(path, 'parquet', needsAnswer);
    expect(report).toMatchObject({ rows: n, valid_rows: n - 3, columns: ['answer', 'id'] });
    expect(report.bad_rows.map((b) => b.row)).toEqual([3000, 3001, n]);
    const seen: [number, number][] = [];
    for await (const r of readDatasetRows(path, 'parquet')) seen.push([r.row, (r.value as { id: number }).id]);
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => [i + 1, i]));
  });

  it('makes a row nested past the depth ceiling a bad row, naming the setting, before any check walks it', async () => {
    const path = join(dir, 'deep.jsonl');
    writeFileSync(path, ['{"answer":"1"}', `{"answer":"2","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, '{"answer":"3","x":[[[]]]}'].join('\n'));
    const report = await checkDatasetFile(path, 'jsonl', needsAnswer, { maxRows: 10, maxLineBytes: 1 << 20, maxDepth: 4 });
    expect(report).toMatchObject({ rows: 3, valid_rows: 2, invalid_rows: 1 });
    expect(report.bad_rows).toEqual([{ row: 2, reason: 'line 2 nests objects and arrays deeper than 4 levels (setting json_max_depth)' }]);
    // Without caps the default ceiling (64) holds.
    expect((await checkDatasetFile(path, 'jsonl', needsAnswer)).invalid_rows).toBe(1);
  });

  it('says when a file is not parquet at all', async () => {
    const path = join(dir, 'fake.parquet');
    writeFileSync(path, '{"answer":"1"}\n');
    await expect(checkDatasetFile(path, 'parquet', needsAnswer)).rejects.toBeInstanceOf(DatasetFormatError);
    writeFileSync(path, Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(64, 7), Buffer.from('PAR1')]));
    await expect(checkDatasetFile(path, 'parquet', needsAnswer)).rejects.toThrow(/footer/);
  });

  it('converts parquet values to plain JSON as the math loader does', () => {
    expect(parquetValueToJson({ a: 5n, b: 2n ** 60n, c: new Uint8Array([104, 105]), d: new Date(0), e: [1, NaN], f: undefined })).toEqual({
      a: 5,
      b: '1152921504606846976',
      c: 'hi',
      d: '1970-01-01T00:00:00.000Z',
      e: [1, null],
      f: null,
    });
  });
});
