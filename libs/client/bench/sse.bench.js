'use strict';
/**
 * How fast the client reads a job's event stream, without a network: the SSE parser alone, and
 * watchJob end to end (fetch double → bytes → parser → JSON → typed events). Needs a build
 * (`npx tsc -b libs/client`). Run: node libs/client/bench/sse.bench.js [events]
 */
const { SseParser, OpenTinkerClient } = require('../dist/index.js');

const N = Number(process.argv[2] ?? 200_000);
const frame = (i) =>
  `id: ${i}\nevent: metrics\ndata: ${JSON.stringify({
    points: [
      { step: i, name: 'reward', value: Math.sin(i) },
      { step: i, name: 'kl', value: 0.001 * i },
    ],
    time: '2026-01-01T00:00:00.000Z',
  })}\n\n`;
const text = Array.from({ length: N }, (_, i) => frame(i + 1)).join('') + 'event: end\ndata: {"state":"succeeded"}\n\n';
const bytes = new TextEncoder().encode(text);
const CHUNK = 16 * 1024;

function parserOnly() {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  let n = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < bytes.length; i += CHUNK) n += parser.push(decoder.decode(bytes.subarray(i, i + CHUNK), { stream: true })).length;
  return { n, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

async function watchJob() {
  const fetch = async () =>
    new Response(
      new ReadableStream({
        start(c) {
          for (let i = 0; i < bytes.length; i += CHUNK) c.enqueue(bytes.subarray(i, i + CHUNK));
          c.close();
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    );
  const client = new OpenTinkerClient({ baseUrl: 'http://bench', apiKey: 'otk_bench', fetch });
  let n = 0;
  const t0 = process.hrtime.bigint();
  for await (const e of client.watchJob('job')) n += e.type === 'metrics' ? 1 : 0;
  return { n, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

(async () => {
  const mb = bytes.length / 1024 / 1024;
  for (const [name, run] of [
    ['SseParser.push', parserOnly],
    ['watchJob (typed events)', watchJob],
  ]) {
    await run(); // warm-up
    const { n, ms } = await run();
    console.log(
      `${name.padEnd(24)} ${n} events, ${mb.toFixed(1)} MiB in ${ms.toFixed(0)} ms: ${Math.round((n / ms) * 1000).toLocaleString('en')} events/s, ${((mb / ms) * 1000).toFixed(0)} MiB/s`,
    );
  }
})();
