import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { datasetFile, datasetPath, isDatasetId } from './dataset-files';

describe('dataset files', () => {
  const id = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'ot-ds-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('finds the jsonl or the parquet file of a dataset', () => {
    mkdirSync(join(root, id));
    writeFileSync(join(root, id, 'data.parquet'), 'x');
    expect(datasetFile(root, id)).toBe(join(root, id, 'data.parquet'));
    writeFileSync(join(root, id, 'data.jsonl'), '{}\n');
    expect(datasetFile(root, id)).toBe(join(root, id, 'data.jsonl'));
  });

  it('throws a clear error when the dataset has no file', () => {
    expect(() => datasetFile(root, id)).toThrow(`dataset ${id} has no file`);
  });

  it('refuses ids that are not uuids, so none can escape the folder', () => {
    expect(isDatasetId('../etc')).toBe(false);
    expect(() => datasetFile(root, '../../etc')).toThrow('invalid dataset id');
    expect(() => datasetPath(root, 'a/b', 'jsonl')).toThrow('invalid dataset id');
  });
});
