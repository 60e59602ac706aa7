/**
 * The first messages of an episode: the tool instructions and the problem.
 */
import type { Message } from '@opentinker/env-sdk';
import type { MathTask } from '@opentinker/env-math';

/** The built-in system message: how to run Python and how to answer, with the reply budget. */
export function toolInstructions(maxTurns: number): string {
  return [
    'You can run Python to help solve the problem. To run code, put it in a fenced block:',
    '```python',
    'print(2 + 2)',
    '```',
    'It runs in a fresh, isolated Python 3 (standard library; no network; nothing is kept between runs, ' +
      'so each block must define what it uses) and you are shown what it prints (stdout and stderr).',
    `Each reply counts as a turn and you have ${maxTurns} ${maxTurns === 1 ? 'turn' : 'turns'}. ` +
      'When you know the answer, give it as \\boxed{...}: a reply with a \\boxed{} answer ends the episode and its code is not run.',
  ].join('\n');
}

/**
 * The first messages for a task: the system message (the built-in instructions, `systemPrompt` when
 * given, nothing when it is empty) followed by the task's own prompt messages. A task prompt that
 * starts with its own system message keeps it, after the tool instructions in the same message.
 */
export function firstMessages(task: MathTask, maxTurns: number, systemPrompt: string | undefined): Message[] {
  const system = systemPrompt ?? toolInstructions(maxTurns);
  const messages: Message[] = task.prompt.map((m) => ({ role: m.role, content: m.content }));
  if (system === '') return messages;
  if (messages[0]?.role === 'system') {
    messages[0] = { role: 'system', content: `${system}\n\n${messages[0].content}` };
    return messages;
  }
  return [{ role: 'system', content: system }, ...messages];
}
