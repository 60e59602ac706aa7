/**
 * The output of a Python program of named checks (test/clients/openai_sdk_checks.py,
 * test/tinker/sdk_server_checks.py): one JSON line per check, `{"check": name, "ok": true, …what it saw}`
 * or `{"check": name, "ok": false, "error", "trace"}`.
 */
export interface CheckLine {
  check: string;
  ok: boolean;
  error?: string;
  trace?: string;
  [seen: string]: unknown;
}

/** The check lines of a program's standard output (other lines are its own chatter). */
export function checkLines(stdout: string): CheckLine[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as CheckLine);
}

/** One check's line; throws with the check's error and Python trace when it failed or did not run. */
export function checkResult(lines: readonly CheckLine[], name: string): CheckLine {
  const line = lines.find((l) => l.check === name);
  if (!line) throw new Error(`${name}: the check did not run`);
  if (!line.ok) throw new Error(`${name}: ${line.error}\n${line.trace}`);
  return line;
}
