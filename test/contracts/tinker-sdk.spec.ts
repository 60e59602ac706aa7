import {
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  decodeSampleResponse,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  JSON_FUTURE_RESULTS,
  matchTinkerRoute,
  proto,
  RECOMMENDED_CLIENT_CONFIG,
  RequestFailedResponse,
  SampleRequest,
  TryAgainResponse,
  type ForwardBackwardRequestPlain,
  type PlainTensor,
} from '@opentinker/tinker-wire';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCapture, runWithSdk, SCENARIO, SDK_VERSIONS, sdkMissing, versionAtLeast, type CapturedExchange } from '../support/tinker-sdk';

/**
 * The Tinker wire package against the official Python SDK. Part one reads the captures committed in
 * test/fixtures/tinker (what each SDK release really sent to a recording server, test/tinker/capture.sh)
 * and needs nothing else. Part two has the SDK itself read what the package encodes; it needs
 * .venv-tinker (test/tinker/setup-sdk.sh) and says so when it is missing.
 */

/** The routes each end of the supported range called in the capture's scenario (every SDK feature a server needs). */
const COMMON_ROUTES = [
  'DELETE /api/v1/training_runs/:training_run_id/checkpoints/:checkpoint',
  'GET /api/v1/checkpoints',
  'GET /api/v1/get_server_capabilities',
  'GET /api/v1/samplers/:sampler_id',
  'GET /api/v1/training_runs',
  'GET /api/v1/training_runs/:training_run_id',
  'GET /api/v1/training_runs/:training_run_id/checkpoints',
  'POST /api/v1/asample',
  'POST /api/v1/client/config',
  'POST /api/v1/create_model',
  'POST /api/v1/create_sampling_session',
  'POST /api/v1/create_session',
  'POST /api/v1/forward_backward',
  'POST /api/v1/get_info',
  'POST /api/v1/load_weights',
  'POST /api/v1/optim_step',
  'POST /api/v1/retrieve_future',
  'POST /api/v1/save_weights',
  'POST /api/v1/save_weights_for_sampler',
  'POST /api/v1/session_heartbeat',
  'POST /api/v1/telemetry',
  'POST /api/v1/weights_info',
];
const ROUTES_BY_VERSION: Record<string, string[]> = {
  '0.22.3': COMMON_ROUTES,
  '0.25.0': [...COMMON_ROUTES, 'POST /api/v1/client/dynamic_config'],
  '0.38.0': [...COMMON_ROUTES, 'POST /api/v1/client/dynamic_config', 'POST /api/v1/sessions/:session_id/finish'],
};

type ScenarioDatum = { chunks: number[][]; target_tokens: number[]; weights?: number[]; logprobs?: number[]; advantages?: number[] };

/** What a dense scenario datum decodes to: tokens, and each loss input's dtype, shape and values. */
function expectedDatum(d: ScenarioDatum) {
  const inputs: Record<string, { dtype: string; shape: number[]; data: number[] }> = {
    target_tokens: { dtype: 'int64', shape: [d.target_tokens.length], data: d.target_tokens },
  };
  for (const name of ['weights', 'logprobs', 'advantages'] as const) {
    const values = d[name];
    if (values) inputs[name] = { dtype: 'float32', shape: [values.length], data: values };
  }
  return { tokens: d.chunks.flat(), inputs };
}

function plainDatum(d: ForwardBackwardRequestPlain['data'][number]) {
  const inputs: Record<string, { dtype: string; shape: number[]; data: number[] }> = {};
  for (const [name, t] of Object.entries(d.lossFnInputs)) inputs[name] = { dtype: t.dtype, shape: t.shape, data: Array.from(t.data as ArrayLike<number | bigint>, Number) };
  return { tokens: Array.from(d.tokens), inputs };
}

const base64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

/** What test/tinker/dump_descriptor.py prints: per message, fields by name. */
type SdkField = { number: number; type?: number; repeated?: boolean; type_name?: string; map?: [number, number, string] };
type SdkDescriptor = { messages: Record<string, Record<string, SdkField>>; enums: Record<string, Record<string, number>> };

/** Our generated descriptor in the same form. */
function ourDescriptor(): SdkDescriptor {
  const short = (n: string) => n.slice(n.lastIndexOf('.') + 1);
  const messages: SdkDescriptor['messages'] = {};
  for (const m of proto.file_tinker.proto.messageType) {
    const entries = new Map(m.nestedType.filter((n) => n.options?.mapEntry).map((n) => [n.name, n]));
    messages[m.name] = {};
    for (const f of m.field) {
      const entry = f.type === 11 ? entries.get(short(f.typeName)) : undefined;
      messages[m.name][f.name] = entry
        ? { number: f.number, map: [entry.field[0].type, entry.field[1].type, entry.field[1].typeName ? short(entry.field[1].typeName) : ''] }
        : { number: f.number, type: f.type, repeated: f.label === 3, type_name: f.typeName ? short(f.typeName) : '' };
    }
  }
  const enums = Object.fromEntries(proto.file_tinker.proto.enumType.map((e) => [e.name, Object.fromEntries(e.value.map((v) => [v.name, v.number]))]));
  return { messages, enums };
}

/** The chunk length the chunked session's client config asked for; SDKs before 0.25 have a fixed 1,024. */
const chunkLength = (version: string) => (versionAtLeast(version, '0.25.0') ? SCENARIO.chunked.client_config.fwdbwd_max_chunk_len : 1024);

/** What each forward_backward step of the scenario put in. */
function scenarioFor(
  version: string,
  exchange: CapturedExchange,
  plain: ForwardBackwardRequestPlain,
): { lossFn: string; forwardOnly: boolean; datums: ScenarioDatum[]; config: Record<string, unknown> } | 'sparse' {
  const ce = SCENARIO.cross_entropy as ScenarioDatum[];
  const is = SCENARIO.importance_sampling as ScenarioDatum[];
  switch (exchange.step) {
    case 'forward_backward cross_entropy and optim_step, submitted back to back':
      return { lossFn: 'cross_entropy', forwardOnly: false, datums: ce, config: {} };
    case 'forward_backward cross_entropy sparse':
      return 'sparse';
    case 'forward_backward importance_sampling':
      return { lossFn: 'importance_sampling', forwardOnly: false, datums: is, config: {} };
    case 'forward_backward ppo with loss_fn_config':
      return { lossFn: 'ppo', forwardOnly: false, datums: is, config: SCENARIO.ppo_config };
    case 'forward_backward cispo with a text-valued loss_fn_config':
      return { lossFn: 'cispo', forwardOnly: false, datums: is, config: SCENARIO.text_config };
    case 'forward_backward with provenance spans':
      return { lossFn: 'importance_sampling', forwardOnly: false, datums: [is[0]], config: {} };
    case 'forward (forward_only)':
      return { lossFn: 'cross_entropy', forwardOnly: true, datums: ce, config: {} };
    case 'create_training_client_from_state, then forward_backward on it':
      return { lossFn: 'cross_entropy', forwardOnly: false, datums: [ce[0]], config: {} };
    case 'chunked: forward_backward of 5 datums in chunks of 2, zstd': {
      const all = SCENARIO.chunked.datums as ScenarioDatum[];
      const n = chunkLength(version);
      return { lossFn: 'cross_entropy', forwardOnly: false, datums: all.slice((plain.seqId - 1) * n, plain.seqId * n), config: {} };
    }
    default:
      throw new Error(`no scenario for forward_backward in step ${exchange.step}`);
  }
}

describe.each(SDK_VERSIONS)('tinker %s: what the SDK sent (recorded)', (version) => {
  const capture = loadCapture(version);
  const exchanges = capture.exchanges;

  test('it called exactly the routes listed for it, all in the route table', () => {
    const seen = new Set<string>();
    for (const e of exchanges) {
      const match = matchTinkerRoute(e.method, e.path);
      expect([e.method, e.path, match !== undefined]).toEqual([e.method, e.path, true]);
      seen.add(`${match!.route.method} ${match!.route.path}`);
    }
    expect([...seen].sort()).toEqual([...ROUTES_BY_VERSION[version]].sort());
  });

  test('every JSON body and query it sent passes the route schema, and every JSON answer the SDK took passes ours', () => {
    for (const e of exchanges) {
      const { route } = matchTinkerRoute(e.method, e.path)!;
      const where = `${e.method} ${e.path} (${e.step})`;
      // The fake refused some requests on purpose, at submission (a 4xx) or in the future (a negative
      // learning rate): the schemas refuse them at submission.
      if (e.body !== undefined && route.request && e.path !== '/api/v1/telemetry') {
        const issues = route.request.safeParse(e.body).error?.issues ?? null;
        const refused = (e.status >= 400 && e.status !== 408) || (e.path === '/api/v1/optim_step' && e.step.includes('negative learning rate'));
        if (refused) expect([where, issues]).not.toEqual([where, null]);
        else expect([where, issues]).toEqual([where, null]);
      }
      if (e.query && route.query) expect([where, route.query.safeParse(e.query).error?.issues ?? null]).toEqual([where, null]);
      if (e.status === 200 && e.response !== undefined && e.response !== null && route.response) {
        expect([where, route.response.safeParse(e.response).error?.issues ?? null]).toEqual([where, null]);
      }
      if (e.path === '/api/v1/retrieve_future' && e.response !== undefined) {
        const requestType = e.headers['x-tinker-request-type'] as keyof typeof JSON_FUTURE_RESULTS;
        const answer = e.response as Record<string, unknown>;
        const schema = answer.type === 'try_again' ? TryAgainResponse : 'error' in answer ? RequestFailedResponse : JSON_FUTURE_RESULTS[requestType];
        expect([where, schema.safeParse(answer).error?.issues ?? null]).toEqual([where, null]);
      }
    }
  });

  test('the headers a server reads: the key, protobuf content types, request types while polling', () => {
    for (const e of exchanges) expect(e.headers['x-api-key']).toMatch(/^tml-/);
    for (const e of exchanges.filter((x) => x.path === '/api/v1/forward_backward')) expect(e.headers['content-type']).toBe('application/x-protobuf');
    // Before 0.25 the SDK still took a JSON result, and said so.
    const protobufAccept = !versionAtLeast(version, '0.25.0') ? 'application/x-protobuf, application/json' : 'application/x-protobuf';
    const polls = exchanges.filter((x) => x.path === '/api/v1/retrieve_future');
    for (const e of polls) {
      const protobuf = ['ForwardBackward', 'Forward', 'Sample'].includes(e.headers['x-tinker-request-type']);
      expect([e.headers['x-tinker-request-type'], e.headers.accept]).toEqual([e.headers['x-tinker-request-type'], protobuf ? protobufAccept : 'application/json']);
    }
    expect(exchanges.filter((x) => x.path === '/api/v1/asample').every((e) => e.headers['x-tinker-sampling-backpressure'] === '1')).toBe(true);
    expect(exchanges.filter((x) => x.method !== 'GET').every((e) => /^stainless-python-retry-<uuid>$/.test(e.headers['x-idempotency-key']))).toBe(true);
  });

  test('forward_backward bodies decode to what the script put in, and agree with protobuf’s own reading', () => {
    const bodies = exchanges.filter((x) => x.path === '/api/v1/forward_backward');
    // Eight steps, then a chunked one cut in chunks of two (three requests, zstd) by the client config where the
    // SDK lets a server set the chunk length (0.25+); SDKs before 0.27 skip the text-valued config and
    // provenance steps (capture.skipped says which).
    const chunks = Math.ceil(SCENARIO.chunked.datums.length / chunkLength(version));
    expect(bodies.length).toBe(8 + chunks - capture.skipped.filter((s) => /loss_fn_config_v2|provenance/.test(s)).length);
    expect(bodies.filter((e) => e.headers['content-encoding'] === 'zstd')).toHaveLength(chunks);
    for (const e of bodies) {
      const plain = decodeForwardBackwardRequest(base64(e.body_base64!), { contentEncoding: e.headers['content-encoding'] });
      const proto = e.body_proto as {
        model_id: string;
        seq_id?: number;
        loss_fn: string;
        forward_only?: boolean;
        data: Array<{ model_input: Array<{ encoded_text: { tokens: string } }> }>;
      };
      expect([plain.modelId, plain.seqId, plain.lossFn, plain.forwardOnly]).toEqual([proto.model_id, proto.seq_id ?? 0, proto.loss_fn, proto.forward_only ?? false]);
      expect(plain.data.map((d) => Array.from(d.tokens))).toEqual(
        proto.data.map((d) => d.model_input.flatMap((c) => Array.from(new Int32Array(base64(c.encoded_text.tokens).slice().buffer)))),
      );
      const expected = scenarioFor(version, e, plain);
      if (expected === 'sparse') {
        const sp = SCENARIO.cross_entropy_sparse;
        const [d] = plain.data;
        expect(Array.from(d.tokens)).toEqual(sp.chunks.flat());
        const t = d.lossFnInputs.target_tokens as PlainTensor;
        expect([t.dtype, t.shape, Array.from(t.sparse!.crowIndices), Array.from(t.sparse!.colIndices), Array.from(t.sparse!.values as BigInt64Array, Number)]).toEqual([
          'int64',
          sp.shape,
          sp.target_tokens.crow_indices,
          sp.target_tokens.col_indices,
          sp.target_tokens.values,
        ]);
        expect(Array.from(d.lossFnInputs.weights.data as Float32Array)).toEqual([1, 0.25, 1, 0, 1, 0]);
        continue;
      }
      expect([e.step, plain.lossFn, plain.forwardOnly]).toEqual([e.step, expected.lossFn, expected.forwardOnly]);
      expect(plain.data.map(plainDatum)).toEqual(expected.datums.map(expectedDatum));
      // Text-valued entries exist since 0.27; older SDKs cannot send them (the script skips that step).
      expect({ ...plain.lossFnConfig }).toEqual(expected.config);
      if (e.step === 'forward_backward with provenance spans') {
        const spans = (items: Array<{ kind: string; sequence_id: string; offset: number; length: number }>) =>
          items.map((s) => ({ kind: s.kind, sequenceId: s.sequence_id, offset: s.offset, length: s.length }));
        expect(plain.data[0].modelInputSpans).toEqual(spans(SCENARIO.provenance.model_input));
        expect(plain.data[0].lossFnInputSpans).toEqual(spans(SCENARIO.provenance.loss_fn_inputs));
      }
    }
  });

  test('asample bodies carry the scenario’s prompts and sampling parameters', () => {
    const samples = exchanges.filter((x) => x.path === '/api/v1/asample').map((e) => SampleRequest.parse(e.body));
    const first = samples.find((s) => s.num_samples === SCENARIO.sample.num_samples && s.prompt_logprobs)!;
    expect(first.prompt.chunks).toEqual([{ type: 'encoded_text', tokens: SCENARIO.sample.prompt }]);
    expect(first.sampling_params).toMatchObject(SCENARIO.sample.params);
    expect(first.topk_prompt_logprobs).toBe(SCENARIO.sample.topk_prompt_logprobs);
    expect(samples.some((s) => JSON.stringify(s.sampling_params.stop) === JSON.stringify(SCENARIO.sample_stop_tokens.params.stop))).toBe(true);
    expect(samples.some((s) => s.sampling_params.stop === '\n')).toBe(true);
    const logprobs = samples.find((s) => JSON.stringify(s.prompt.chunks[0]) === JSON.stringify({ type: 'encoded_text', tokens: SCENARIO.compute_logprobs.prompt }))!;
    expect([logprobs.num_samples, logprobs.sampling_params.max_tokens, logprobs.prompt_logprobs]).toEqual([1, 1, true]);
  });

  test('the protobuf results the SDK accepted decode with this package to the values the fake computed', () => {
    for (const e of exchanges.filter((x) => x.response_content_type === 'application/x-protobuf')) {
      const bytes = base64(e.response_base64!);
      if (e.headers['x-tinker-request-type'] === 'Sample') {
        const out = decodeSampleResponse(bytes);
        for (const s of out.sequences) expect(s.logprobs && Array.from(s.logprobs).slice(0, 2)).toEqual([Math.fround(-0.1), Math.fround(-0.2)].slice(0, s.tokens.length));
      } else {
        const out = decodeForwardBackwardOutput(bytes);
        expect(out.lossFnOutputs.length).toBe(Number(out.metrics['datums:sum']));
        const lp = out.lossFnOutputs[0].logprobs.data as Float32Array;
        expect(lp.every((v) => v < 0)).toBe(true);
      }
    }
  });
});

describe.each(SDK_VERSIONS)('tinker %s reads what this package writes', (version) => {
  const missing = sdkMissing(version);
  const run = missing ? test.skip : test;
  if (missing) test(`(skipped: ${missing})`, () => undefined);

  run('proto/tinker.proto agrees with the schema embedded in the SDK: same numbers and types for every field both have', async () => {
    const sdk = JSON.parse(await runWithSdk(version, 'dump_descriptor.py', [])) as SdkDescriptor;
    const ours = ourDescriptor();
    // Messages in the SDK's descriptor that no request or result carries (sampling parameters travel as JSON).
    const unused = ['SamplingParams', 'StopStrings', 'StopTokens'];
    // Before 0.28 the SDK called TopkLogprobs TopkPromptLogprobs (and its field 4 prompt_length).
    const ourName = (sdkName: string) => (sdkName === 'TopkPromptLogprobs' ? 'TopkLogprobs' : sdkName);
    const normalized = (f: SdkField): SdkField => (f.map ? { number: f.number, map: [f.map[0], f.map[1], ourName(f.map[2])] } : { ...f, type_name: ourName(f.type_name ?? '') });
    for (const [name, fields] of Object.entries(sdk.messages)) {
      if (unused.includes(name)) continue;
      const mine = ours.messages[ourName(name)];
      expect([name, mine !== undefined]).toEqual([name, true]);
      const byNumber = new Map(Object.values(mine).map((f) => [f.number, f]));
      for (const [fieldName, f] of Object.entries(fields)) {
        const other = byNumber.get(f.number);
        expect([name, fieldName, other && normalized(other)]).toEqual([name, fieldName, normalized(f)]);
      }
    }
    for (const [name, values] of Object.entries(sdk.enums)) expect([name, ours.enums[name]]).toEqual([name, values]);
    if (version === SDK_VERSIONS[0]) {
      // The newest release: nothing of ours is missing from it, names included.
      const sdkFields = Object.entries(sdk.messages).filter(([n]) => !unused.includes(n));
      expect(Object.keys(ours.messages).sort()).toEqual(sdkFields.map(([n]) => n).sort());
      for (const [name, fields] of sdkFields) expect([name, Object.keys(ours.messages[name]).sort()]).toEqual([name, Object.keys(fields).sort()]);
    }
  });

  run(
    'forward/backward and sample results, chunked results, and JSON answers: directly and through the SDK’s HTTP path',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tinker-wire-'));
      try {
        const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
        const fbChunk1 = encodeForwardBackwardOutput({
          lossFnOutputs: [
            { logprobs: new Float32Array([-0.5, -1.25]), elementwise_loss: [0.5, 1.25] },
            { logprobs: new Float32Array([-2]), elementwise_loss: [2] },
          ],
          metrics: { 'loss:sum': 3.75, 'tokens:mean': 1.5 },
        });
        const fbChunk2 = encodeForwardBackwardOutput({ lossFnOutputs: [{ logprobs: [-0.25], elementwise_loss: [0.25] }], metrics: { 'loss:sum': 0.25, 'tokens:mean': 1 } });
        const fbTyped = encodeForwardBackwardOutput({
          lossFnOutputs: [
            { topk: { dtype: 'int32', data: [1, 2, 3, 4], trailingShape: [2] }, lp: { dtype: 'bfloat16', data: [1.00390625, -3] } },
            { topk: { dtype: 'int32', data: [7, 8], trailingShape: [2] }, lp: { dtype: 'bfloat16', data: [0.5] } },
          ],
          metrics: {},
          lossFnOutputType: 'tinker:ArrayRecord',
        });
        const fbRagged = encodeForwardBackwardOutput(
          {
            lossFnOutputs: [
              { topk: { dtype: 'int32', data: [1, 2, 3, 4], trailingShape: [2] }, lp: { dtype: 'bfloat16', data: [1.00390625, -3] } },
              { topk: { dtype: 'int64', data: [7, 8, 9], trailingShape: [3] }, lp: { dtype: 'bfloat16', data: [0.5] } },
            ],
            metrics: {},
          },
          { mixedLayouts: true },
        );
        const datumFb = (lp: number[], loss: number[]) => ({
          logprobs: { dtype: 'float32', shape: [lp.length], data: lp },
          elementwise_loss: { dtype: 'float32', shape: [loss.length], data: loss },
        });
        const sampleBytes = encodeSampleResponse({
          sequences: [
            { stopReason: 'stop', tokens: [5, 151645], logprobs: [-0.25, -0.5] },
            { stopReason: 'length', tokens: [9, 9, 9], logprobs: [-1, -1.5, -2] },
          ],
          promptLogprobs: [null, -1.5, -0.75],
          topkPromptLogprobs: { k: 2, tokenIds: [0, 0, 8, 3, 9, 0], logprobs: [-99999, -99999, -1, -2, -0.5, -99999] },
          promptCacheHitTokens: 2,
        });
        const sampleExpect = (ids: boolean) => ({
          sequences: [
            { stop_reason: 'stop', tokens: [5, 151645], logprobs: [-0.25, -0.5], ...(ids ? { sequence_id: 'session-1:sample:0:seq:0:0' } : {}) },
            { stop_reason: 'length', tokens: [9, 9, 9], logprobs: [-1, -1.5, -2], ...(ids ? { sequence_id: 'session-1:sample:0:seq:0:1' } : {}) },
          ],
          prompt_logprobs: [null, -1.5, -0.75],
          // a row whose first cell is (0, -99999) is "not computed"; trailing masked cells are cut
          topk_prompt_logprobs: [
            null,
            [
              [8, -1],
              [3, -2],
            ],
            [[9, -0.5]],
          ],
          prompt_cache_hit_tokens: 2,
        });
        const newer = encodeSampleResponse({
          sequences: [{ stopReason: 'stop', tokens: [4, 5], logprobs: [-0.5, -0.25], topkLogprobs: { k: 2, tokenIds: [4, 1, 5, 2], logprobs: [-0.5, -3, -0.25, -4] } }],
          targetPromptLogprobs: { dtype: 'float32', data: [-0.05, -0.09, -0.07], shape: [3, 2], sparse: { crowIndices: [0, 2, 2, 3], colIndices: [0, 1, 0] } },
        });
        const cases = {
          forward_backward_outputs: [
            {
              name: 'two chunks merged by metric suffix',
              chunks_base64: [b64(fbChunk1), b64(fbChunk2)],
              expect: {
                loss_fn_output_type: 'ArrayRecord',
                outputs: [datumFb([-0.5, -1.25], [0.5, 1.25]), datumFb([-2], [2]), datumFb([-0.25], [0.25])],
                metrics: { 'loss:sum': 4, 'tokens:mean': 4 / 3 },
              },
            },
            {
              name: 'int32 and bfloat16 outputs with a trailing shape',
              chunks_base64: [b64(fbTyped)],
              expect: {
                loss_fn_output_type: 'ArrayRecord',
                outputs: [
                  { topk: { dtype: 'int64', shape: [2, 2], data: [1, 2, 3, 4] }, lp: { dtype: 'float32', shape: [2], data: [1, -3] } },
                  { topk: { dtype: 'int64', shape: [1, 2], data: [7, 8] }, lp: { dtype: 'float32', shape: [1], data: [0.5] } },
                ],
                metrics: {},
              },
            },
            {
              name: 'int32, int64 and bfloat16 outputs with trailing shapes that change, in two records',
              min_version: '0.24.1',
              chunks_base64: [b64(fbRagged)],
              expect: {
                loss_fn_output_type: 'ArrayRecord',
                outputs: [
                  { topk: { dtype: 'int64', shape: [2, 2], data: [1, 2, 3, 4] }, lp: { dtype: 'float32', shape: [2], data: [1, -3] } },
                  { topk: { dtype: 'int64', shape: [1, 3], data: [7, 8, 9] }, lp: { dtype: 'float32', shape: [1], data: [0.5] } },
                ],
                metrics: {},
              },
            },
          ],
          sample_responses: [
            { name: 'sequences, prompt logprobs with NaN at 0, masked top-k', base64: b64(sampleBytes), expect: sampleExpect(false) },
            {
              name: 'top-k sampled logprobs and sparse target prompt logprobs',
              min_version: '0.30.0',
              base64: b64(newer),
              expect: {
                sequences: [
                  {
                    stop_reason: 'stop',
                    tokens: [4, 5],
                    logprobs: [-0.5, -0.25],
                    topk_logprobs: [
                      [
                        [4, -0.5],
                        [1, -3],
                      ],
                      [
                        [5, -0.25],
                        [2, -4],
                      ],
                    ],
                  },
                ],
                prompt_logprobs: null,
                topk_prompt_logprobs: null,
                target_prompt_logprobs: { shape: [3, 2], sparse_crow_indices: [0, 2, 2, 3], sparse_col_indices: [0, 1, 0], data: [-0.05, -0.09, -0.07] },
              },
            },
          ],
          json: [
            {
              name: 'try_again',
              type: 'TryAgainResponse',
              body: TryAgainResponse.parse({ type: 'try_again', request_id: 'r', queue_state: 'paused_capacity', queue_state_reason: 'busy' }),
            },
            { name: 'failed', type: 'RequestFailedResponse', body: RequestFailedResponse.parse({ error: 'learning_rate must be non-negative', category: 'user' }) },
            { name: 'optim metrics', type: 'OptimStepResponse', body: JSON_FUTURE_RESULTS.OptimStep.parse({ metrics: { 'grad_norm:mean': 0.5 } }) },
            { name: 'create_model', type: 'CreateModelResponse', body: JSON_FUTURE_RESULTS.CreateModel.parse({ model_id: 's:train:0', type: 'create_model' }) },
            { name: 'save', type: 'SaveWeightsResponse', body: JSON_FUTURE_RESULTS.SaveWeights.parse({ path: 'tinker://s:train:0/weights/a' }) },
            { name: 'load', type: 'LoadWeightsResponse', body: JSON_FUTURE_RESULTS.LoadWeights.parse({ path: 'tinker://s:train:0/weights/a', model_id: 's:train:1' }) },
          ],
          full_path: {
            client_config: RECOMMENDED_CLIENT_CONFIG,
            datums: [
              { tokens: [1, 2, 3], target_tokens: [2, 3] },
              { tokens: [4, 5], target_tokens: [5] },
            ],
            pending: [
              TryAgainResponse.parse({ type: 'try_again', request_id: 'r', queue_state: 'paused_capacity', queue_state_reason: 'loading the base model' }),
              TryAgainResponse.parse({ type: 'try_again', request_id: 'r', queue_state: 'active' }),
            ],
            forward_backward_base64: [b64(fbChunk1)],
            forward_backward_expect: {
              loss_fn_output_type: 'ArrayRecord',
              outputs: [datumFb([-0.5, -1.25], [0.5, 1.25]), datumFb([-2], [2])],
              metrics: { 'loss:sum': 3.75, 'tokens:mean': 1.5 },
            },
            optim_step_results: [
              RequestFailedResponse.parse({ error: 'learning_rate must be non-negative', category: 'user' }),
              JSON_FUTURE_RESULTS.OptimStep.parse({ metrics: { 'grad_norm:mean': 0.5 } }),
            ],
            optim_step_category: 'user',
            optim_step_metrics: { 'grad_norm:mean': 0.5 },
            asample_base64: [b64(sampleBytes)],
            sample: { prompt: [3, 9, 17], num_samples: 2, topk_prompt_logprobs: 2, expect: sampleExpect(true) },
          },
        };
        const file = join(dir, 'cases.json');
        writeFileSync(file, JSON.stringify(cases));
        const report = JSON.parse(await runWithSdk(version, 'check_wire.py', [file])) as { sdk_version: string; results: Array<{ name: string; ok: boolean; detail: string }> };
        expect(report.sdk_version).toBe(version);
        expect(report.results.filter((r) => !r.ok)).toEqual([]);
        expect(report.results.filter((r) => r.name.startsWith('full path')).length).toBe(4);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
