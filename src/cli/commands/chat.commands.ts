import type { ChatRequest, OpenTinkerClient } from '@opentinker/client';
import type { Command } from 'commander';
import { createInterface } from 'node:readline';
import { CliError, EXIT } from './cli-error';
import { clientAction, intOption, withCommonOptions } from './command-kit';
import { resolveJobId } from './job-ref';
import { printJson } from './output';

type Message = ChatRequest['messages'][number];
type Sampling = Pick<ChatRequest, 'temperature' | 'top_p' | 'max_tokens' | 'seed' | 'stop'>;

interface ChatOptions {
  message?: string;
  system?: string;
  temperature?: string;
  topP?: string;
  maxTokens?: string;
  seed?: string;
  stop?: string[];
}

const PREFIX = /^[0-9a-f-]{4,36}$/i;
const STEP = /^(.*)\/step-(\d+)$/;

/**
 * `chat <model>`: talk to a job's checkpoint (`job:<id>[/step-<n>]`, the id a unique prefix), a model
 * folder you uploaded (`model:<id>`), or a Hub model of the server's cache (`hf:Org/Name[@rev]`),
 * through `POST /v1/chat/completions`. On a terminal without
 * `--message` it is a conversation (the history is sent each turn; `/reset` forgets it, `/exit` or
 * Ctrl-D leaves); with `--message`, or text on stdin, it answers once and exits. Answers stream.
 *
 * @example
 * ```bash
 * opentinker chat 4f0c                               # a conversation with the latest checkpoint
 * opentinker chat job:4f0c/step-20 --message '12+30=' --temperature 0
 * echo '7+8=' | opentinker chat math-grpo --json     # by job name; the whole completion as JSON
 * opentinker chat hf:Qwen/Qwen2.5-0.5B-Instruct      # a base model the server's Hub cache holds
 * ```
 */
export function registerChatCommands(program: Command): void {
  withCommonOptions(
    program
      .command('chat')
      .description("Chat with a job's checkpoint, an uploaded model or a cached Hugging Face model (OpenAI-compatible chat completions)")
      .argument(
        '<model>',
        "job:<id> (a unique prefix will do; the job: may be left out) or a job name, optionally /step-<n> (default: the latest checkpoint); model:<id> (an uploaded model); or hf:Org/Name[@revision] in the server's Hub cache",
      ),
  )
    .option('-m, --message <text>', 'ask once and exit (also: pipe the message on stdin)')
    .option('--system <text>', 'a system message first')
    .option('--temperature <t>', '0 = greedy (default 1)')
    .option('--top-p <p>', 'nucleus sampling mass (default 1)')
    .option('--max-tokens <n>', 'most tokens per answer (default: what the context leaves)')
    .option('--seed <n>', 'seed of the draws (repeatable answers)')
    .option('--stop <text...>', 'stop strings')
    .action(
      clientAction<ChatOptions, [string]>(async ({ client, json, options }, ref) => {
        const model = await modelName(client, ref);
        const params = samplingParams(options);
        const history: Message[] = options.system !== undefined ? [{ role: 'system', content: options.system }] : [];
        let message = options.message;
        if (message === undefined && !process.stdin.isTTY) message = (await readStdin()).replace(/\n$/, '');
        if (message !== undefined) {
          if (message.trim() === '') throw new CliError('The message is empty', EXIT.USAGE, undefined, '--message');
          const messages: Message[] = [...history, { role: 'user', content: message }];
          if (json) return printJson(await client.chat({ model, messages, ...params }));
          await streamAnswer(client, { model, messages, ...params });
          return;
        }
        if (json) throw new CliError('--json needs --message (or a message on stdin)', EXIT.USAGE, undefined, '--json');
        await conversation(client, model, history, params);
      }),
    );
}

/**
 * `4f0c`, `job:4f0c` and `job:4f0c/step-3` become `job:<full id>[/step-<n>]`, the names the server
 * answers with; anything else (a job name, `model:<id>`, `hf:Org/Name`) is sent as it is.
 */
async function modelName(client: OpenTinkerClient, ref: string): Promise<string> {
  const bare = ref.startsWith('job:') ? ref.slice(4) : ref;
  const m = STEP.exec(bare);
  const base = m ? m[1] : bare;
  if (!PREFIX.test(base)) return ref;
  const id = await resolveJobId(client, base);
  return m ? `job:${id}/step-${m[2]}` : `job:${id}`;
}

function samplingParams(o: ChatOptions): Sampling {
  const number = (flag: string, value: string | undefined, ok: (n: number) => boolean, what: string) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || !ok(n)) throw new CliError(`${flag} must be ${what}, got "${value}"`, EXIT.USAGE, undefined, flag);
    return n;
  };
  const out: Sampling = {};
  const temperature = number('--temperature', o.temperature, (n) => n >= 0 && n <= 2, 'a number from 0 to 2');
  const topP = number('--top-p', o.topP, (n) => n > 0 && n <= 1, 'a number above 0, at most 1');
  const maxTokens = intOption('--max-tokens', o.maxTokens, 1, 1_000_000);
  const seed = intOption('--seed', o.seed, 0, 2 ** 32 - 1);
  if (temperature !== undefined) out.temperature = temperature;
  if (topP !== undefined) out.top_p = topP;
  if (maxTokens !== undefined) out.max_tokens = maxTokens;
  if (seed !== undefined) out.seed = seed;
  if (o.stop?.length) out.stop = o.stop;
  return out;
}

/** Prints the answer as it arrives; returns its text. */
async function streamAnswer(client: OpenTinkerClient, request: ChatRequest): Promise<string> {
  let text = '';
  let finish: string | null | undefined = null;
  for await (const chunk of client.chat({ ...request, stream: true })) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.content) {
      process.stdout.write(choice.delta.content);
      text += choice.delta.content;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  process.stdout.write('\n');
  if (finish === 'length') process.stderr.write('(cut at the token limit)\n');
  return text;
}

async function conversation(client: OpenTinkerClient, model: string, start: Message[], params: Sampling): Promise<void> {
  let history = [...start];
  process.stderr.write(`Chatting with ${model}. /reset forgets the conversation, /exit or Ctrl-D leaves.\n`);
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  const ask = () =>
    new Promise<string | null>((resolve) => {
      const onClose = () => resolve(null);
      rl.once('close', onClose);
      rl.question('you> ', (line) => {
        rl.off('close', onClose);
        resolve(line);
      });
    });
  rl.on('SIGINT', () => rl.close());
  try {
    for (;;) {
      const line = await ask();
      if (line === null || line.trim() === '/exit') break;
      if (line.trim() === '/reset') {
        history = [...start];
        process.stderr.write('(conversation forgotten)\n');
        continue;
      }
      if (line.trim() === '') continue;
      history.push({ role: 'user', content: line });
      try {
        const answer = await streamAnswer(client, { model, messages: history, ...params });
        history.push({ role: 'assistant', content: answer });
      } catch (error) {
        // The conversation goes on after a refused turn (too long, model restarting), without that turn.
        history.pop();
        process.stderr.write(`opentinker: ${(error as Error).message}\n`);
      }
    }
  } finally {
    rl.close();
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
