import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Signed download URLs of Tinker checkpoints. The SDK asks for a checkpoint's archive URL with its key
 * and then fetches that URL without it (`urllib`), so the URL carries its own proof: an HMAC-SHA256,
 * under a key derived from the operator's secrets key, of the archive's path, its owner and when it
 * expires. Nothing else about the caller is in the URL; a changed path, owner or expiry, or another
 * server's key, gives another signature.
 */

/** How long a download URL works. */
export const ARCHIVE_URL_SECONDS = 15 * 60;

/** What {@link SecretsCipher.derive} is asked for: the key of these signatures and nothing else. */
export const ARCHIVE_KEY_PURPOSE = 'tinker checkpoint archive urls';

/** The query of a download URL. */
export const ArchiveQuery = z.object({ expires: z.string().max(20), signature: z.string().max(100) });

/** The answer to a request for a download URL (the SDK's `CheckpointArchiveUrlResponse`). */
export interface CheckpointArchiveUrlResponse {
  url: string;
  /** When the URL stops working, ISO 8601. */
  expires: string;
}

/** The archive a URL names. */
export interface ArchiveRef {
  modelId: string;
  kind: string;
  name: string;
}

/** The download route's path for an archive, the ids encoded as the SDK encodes them. */
export function archivePath(ref: ArchiveRef): string {
  return `/api/v1/training_runs/${encodeURIComponent(ref.modelId)}/checkpoints/${encodeURIComponent(ref.kind)}/${encodeURIComponent(ref.name)}/archive.tar`;
}

function mac(key: Buffer, ref: ArchiveRef, ownerId: string, expires: number): Buffer {
  return createHmac('sha256', key)
    .update(['GET', ref.modelId, ref.kind, ref.name, ownerId, String(expires)].join('\0'))
    .digest();
}

/** The query that makes {@link archivePath} downloadable by whoever holds it until `expires` (Unix seconds). */
export function signArchive(key: Buffer, ref: ArchiveRef, ownerId: string, expires: number): string {
  return `expires=${expires}&signature=${mac(key, ref, ownerId, expires).toString('base64url')}`;
}

/** Whether `signature` is this server's for the archive, its owner and `expires`, and `expires` has not passed. */
export function archiveSignatureValid(key: Buffer, ref: ArchiveRef, ownerId: string, expires: string, signature: string, nowSeconds: number): boolean {
  if (!/^\d{1,12}$/.test(expires) || Number(expires) < nowSeconds) return false;
  const got = Buffer.from(signature, 'base64url');
  const want = mac(key, ref, ownerId, Number(expires));
  return got.length === want.length && timingSafeEqual(got, want);
}
