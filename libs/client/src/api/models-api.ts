import { OpenTinkerError } from '../errors';
import { isNode } from '../node-upload';
import type { Transport } from '../transport';
import type { DeletedModel, Model, ModelList, UploadedModel } from '../types';
import type { RequestOptions } from './request-options';
import { uploadFromNode } from './stream-upload';

/** What {@link ModelsApi.upload} sends: a tar stream of the folder (a path to a .tar file, a web stream, an async iterable of bytes, a Blob, or the bytes). */
export type ModelTarSource = string | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Uint8Array;

/**
 * Models (`/v1/models`): the checkpoints, uploaded model folders and Hub models you can name, and the
 * folders you upload. An uploaded folder is `model:<id>`, yours only, usable as chat's and completions'
 * `model` and as any job's `model.path`.
 *
 * @example
 * ```ts
 * const model = await client.modelsApi.upload(tarStream, { name: 'my-qwen' });
 * await client.jobs.submit({ kind: 'inference', environment: { id: 'math' }, model: { path: model.id } });
 * ```
 */
export class ModelsApi {
  constructor(private readonly t: Transport) {}

  /** What you can name: checkpoints (`job:<id>/step-<n>`), uploaded models (`model:<id>`), Hub models (`hf:Org/Name@<commit>`). */
  list(options: RequestOptions = {}): Promise<ModelList> {
    return this.t.call(this.t.api.GET('/v1/models', { signal: options.signal }), options.signal);
  }

  /** One model by any name `model` takes; the answer's `id` is its canonical name. */
  get(id: string, options: RequestOptions = {}): Promise<Model> {
    return this.t.call(this.t.api.GET('/v1/models/{id}', { params: { path: { id } }, signal: options.signal }), options.signal);
  }

  /**
   * Streams a Hugging Face model folder as a tar (its files at the top or under one folder: safetensors,
   * config, generation config, tokenizer and chat template files only). Rejects with
   * `OT_ERR_MODEL_INVALID` (anything else in the tar, or a folder the engine cannot load),
   * `OT_ERR_MODEL_TOO_LARGE` or `OT_ERR_QUOTA_EXCEEDED`. Not retried.
   */
  async upload(source: ModelTarSource, options: { name: string } & RequestOptions): Promise<UploadedModel> {
    const query = { name: options.name };
    if (isNode() && !(source instanceof Uint8Array) && !(typeof Blob !== 'undefined' && source instanceof Blob)) {
      return uploadFromNode<UploadedModel>(
        this.t,
        '/v1/models',
        query,
        'application/x-tar',
        source as string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
        options.signal,
      );
    }
    if (typeof source === 'string' || !(source instanceof Uint8Array || source instanceof Blob || source instanceof ReadableStream)) {
      throw new OpenTinkerError('OT_ERR_VALIDATION', 'In a browser, give the tar as a Blob, a ReadableStream or bytes', 0, { field: 'source' });
    }
    return this.t.call(
      this.t.api.POST('/v1/models', {
        params: { query },
        body: source as never,
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { 'content-type': 'application/x-tar' },
        ...(source instanceof ReadableStream ? { duplex: 'half' } : {}),
        signal: options.signal,
      }),
      options.signal,
    );
  }

  /** Deletes a model you uploaded and its files; `OT_ERR_MODEL_IN_USE` while an unfinished job names it. */
  delete(id: string, options: RequestOptions = {}): Promise<DeletedModel> {
    return this.t.call(this.t.api.DELETE('/v1/models/{id}', { params: { path: { id } }, signal: options.signal }), options.signal);
  }
}
