import type { OpenTinkerClient } from '@opentinker/client';
import { EXIT, explain } from './cli-error';
import { applyEvent, initialSnapshot, PlainProgress, progressLine, summaryLines } from './job-progress';
import { printLine } from './output';
import { ask, interactive } from './prompt';

export interface WatchFlags {
  json: boolean;
  /** Print the job's log lines too. */
  logs: boolean;
  /** Metrics the progress line shows first when the job reports them (e.g. reward and accuracy). */
  metrics?: readonly string[];
}

class StoppedWatching extends Error {}

/**
 * Follows a job until it ends and returns the exit code (0 when it succeeded). On a terminal it
 * redraws one progress line and prints a summary at the end; otherwise plain lines, progress at a bounded
 * rate ({@link PlainProgress}); with
 * `--json` one JSON object per event, then `{"type":"summary","job":…}`. Ctrl-C asks whether to cancel
 * the job when a person can answer, and otherwise just stops watching (the job keeps running).
 */
export async function watchJobUntilEnd(client: OpenTinkerClient, id: string, flags: WatchFlags, url: string): Promise<number> {
  const snapshot = initialSnapshot(await client.jobs.get(id));
  const tty = !flags.json && process.stdout.isTTY === true;
  const controller = new AbortController();
  let prompting = false;
  let cancelling = false;
  let partialLog = '';
  const plain = new PlainProgress(flags.metrics);

  const clearLine = () => {
    if (tty) process.stdout.write('\r\x1b[K');
  };
  const render = () => {
    if (tty && !prompting) process.stdout.write(`\r\x1b[K${progressLine(snapshot, process.stdout.columns || 80, flags.metrics)}`);
  };
  const note = (text: string) => {
    clearLine();
    process.stderr.write(`${text}\n`);
    render();
  };
  const stop = () => controller.abort(new StoppedWatching());

  const onSigint = () => {
    if (prompting) return;
    if (!interactive() || flags.json || cancelling) return stop();
    prompting = true;
    clearLine();
    void ask(`Cancel job ${id}? [y/N] `).then(async (answer) => {
      prompting = false;
      if (!answer || !/^y(es)?$/i.test(answer.trim())) return stop();
      cancelling = true;
      try {
        await client.jobs.cancel(id);
        note(`Cancelling job ${id}; waiting for it to stop (Ctrl-C again stops watching).`);
      } catch (error) {
        note(`opentinker: ${explain(error, { url }).message}`);
      }
    });
  };
  process.on('SIGINT', onSigint);

  // Only whole lines are printed, so the progress line is never drawn in the middle of one.
  const printLogs = (text: string) => {
    partialLog += text;
    const cut = partialLog.lastIndexOf('\n');
    if (cut < 0) return;
    clearLine();
    process.stdout.write(partialLog.slice(0, cut + 1));
    partialLog = partialLog.slice(cut + 1);
  };

  try {
    render();
    for await (const event of client.watchJob(id, {
      signal: controller.signal,
      onReconnect: ({ lastEventId, delayMs }) => {
        if (!flags.json) note(`(connection lost; reconnecting in ${delayMs} ms, after event ${lastEventId ?? 0})`);
      },
    })) {
      applyEvent(snapshot, event);
      if (flags.json) {
        process.stdout.write(JSON.stringify(event) + '\n');
        continue;
      }
      if (event.type === 'log') {
        if (flags.logs) printLogs(event.data.text);
      } else if (!tty) {
        for (const line of plain.lines(snapshot, event)) printLine(line);
      }
      render();
    }
  } catch (error) {
    if (controller.signal.aborted) {
      clearLine();
      process.stderr.write(`Stopped watching job ${id}; it keeps running (opentinker jobs watch ${id}).\n`);
      return EXIT.INTERRUPTED;
    }
    throw error;
  } finally {
    process.off('SIGINT', onSigint);
  }
  if (partialLog) printLogs('\n');
  if (!tty && !flags.json) for (const line of plain.flush(snapshot)) printLine(line);
  clearLine();
  const job = await client.jobs.get(id);
  if (flags.json) process.stdout.write(JSON.stringify({ type: 'summary', job }) + '\n');
  else for (const line of summaryLines(job, snapshot, flags.metrics)) printLine(line);
  return job.state === 'succeeded' ? EXIT.OK : EXIT.FAILED;
}
