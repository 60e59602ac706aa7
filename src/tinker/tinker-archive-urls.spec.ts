import { archivePath, archiveSignatureValid, signArchive } from './tinker-archive-urls';

describe('signed checkpoint archive URLs', () => {
  const key = Buffer.alloc(32, 7);
  const ref = { modelId: 's1:train:0', kind: 'weights', name: 'ckpt-a' };
  const now = 1_800_000_000;
  const query = (q: string) => Object.fromEntries(new URLSearchParams(q)) as { expires: string; signature: string };

  it('names the archive by its path, ids encoded, and signs it until it expires', () => {
    expect(archivePath(ref)).toBe('/api/v1/training_runs/s1%3Atrain%3A0/checkpoints/weights/ckpt-a/archive.tar');
    const { expires, signature } = query(signArchive(key, ref, 'owner-1', now + 900));
    expect(expires).toBe(String(now + 900));
    expect(archiveSignatureValid(key, ref, 'owner-1', expires, signature, now)).toBe(true);
    expect(archiveSignatureValid(key, ref, 'owner-1', expires, signature, now + 901)).toBe(false);
  });

  it('refuses the signature for another checkpoint, owner, expiry or key, and malformed values', () => {
    const { expires, signature } = query(signArchive(key, ref, 'owner-1', now + 900));
    expect(archiveSignatureValid(key, { ...ref, name: 'ckpt-b' }, 'owner-1', expires, signature, now)).toBe(false);
    expect(archiveSignatureValid(key, { ...ref, kind: 'sampler_weights' }, 'owner-1', expires, signature, now)).toBe(false);
    expect(archiveSignatureValid(key, { ...ref, modelId: 's2:train:0' }, 'owner-1', expires, signature, now)).toBe(false);
    expect(archiveSignatureValid(key, ref, 'owner-2', expires, signature, now)).toBe(false);
    expect(archiveSignatureValid(key, ref, 'owner-1', String(now + 9000), signature, now)).toBe(false);
    expect(archiveSignatureValid(Buffer.alloc(32, 8), ref, 'owner-1', expires, signature, now)).toBe(false);
    for (const [e, s] of [
      ['1e12', signature],
      ['-1', signature],
      [expires, ''],
      [expires, signature.slice(0, -2)],
      [expires, 'not base64 at all!'],
    ]) {
      expect(archiveSignatureValid(key, ref, 'owner-1', e, s, now)).toBe(false);
    }
  });
});
