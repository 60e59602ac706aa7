import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { IpcMessageError, parseIpcMessage } from './ipc-message';
import { askOnce } from './one-shot-child';

const Reply = z.discriminatedUnion('type', [z.object({ type: z.literal('ok'), rows: z.number().int() }), z.object({ type: z.literal('failed'), message: z.string() })]);

describe('parseIpcMessage', () => {
  it("returns the schema's output", () => {
    expect(parseIpcMessage(Reply, { type: 'ok', rows: 3, extra: 1 }, 'The reader')).toEqual({ type: 'ok', rows: 3 });
  });

  it('names the sender and the first field at fault, never the value', () => {
    const secret = 'x'.repeat(50);
    expect(() => parseIpcMessage(Reply, { type: 'ok', rows: secret }, 'The reader')).toThrow(
      new IpcMessageError('The reader sent a message that does not fit its protocol (rows: Invalid input: expected number, received string)'),
    );
    expect(() => parseIpcMessage(Reply, { type: 'nope' }, 'The reader')).toThrow(/^The reader sent a message that does not fit its protocol \(type: /);
    expect(() => parseIpcMessage(z.object({ a: z.number() }).strict(), { a: 1, b: 2 }, 'A child')).toThrow('(unknown field b)');
    expect(() => parseIpcMessage(Reply, undefined, 'A child')).toThrow('(message: ');
  });
});

describe('askOnce', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ot-ask-once-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const child = (reply: string) => {
    const entry = join(dir, `child-${Math.random().toString(36).slice(2)}.cjs`);
    writeFileSync(entry, `process.once('message', (m) => process.send(${reply}));`);
    return entry;
  };
  const o = { memoryMb: 64, timeoutMs: 20_000 };

  it("settles on the child's reply, parsed with the reply's schema", async () => {
    await expect(askOnce(child('{ type: "ok", rows: m.n }'), { n: 7 }, Reply, 'The child', o)).resolves.toEqual({ reply: { type: 'ok', rows: 7 } });
  });

  it('reports a reply that does not fit as badReply, naming the field', async () => {
    await expect(askOnce(child('{ type: "ok", rows: "seven" }'), {}, Reply, 'The child', o)).resolves.toEqual({
      badReply: 'The child sent a message that does not fit its protocol (rows: Invalid input: expected number, received string)',
    });
  });
});
