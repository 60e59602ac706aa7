import { z } from 'zod';
import { UploadName } from '../datasets/datasets.dto';

/** `POST /v1/models`: the body is the tar stream; the query names it. */
export const UploadModelQuery = z
  .object({
    name: UploadName.meta({ example: 'my-qwen' }),
  })
  .strict();
export type UploadModelQuery = z.output<typeof UploadModelQuery>;

/** OpenAI's answer to deleting a model. */
export const DeletedModelDto = z
  .object({ id: z.string().meta({ example: 'model:0b7e2c4a-5d1f-4e8a-9c3b-6f2d1a0e9b87' }), object: z.literal('model'), deleted: z.literal(true) })
  .meta({ id: 'DeletedModelDto' });
export type DeletedModelDto = z.output<typeof DeletedModelDto>;

/** Content types `POST /v1/models` takes: a tar stream of the folder. */
export const MODEL_UPLOAD_TYPES = ['application/x-tar', 'application/octet-stream'];
