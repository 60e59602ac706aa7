/** Resource limits of one sandboxed Python run. */
export interface SandboxLimits {
  /** CPU time in seconds (RLIMIT_CPU soft limit; SIGXCPU there, SIGKILL one second later). */
  cpuSeconds: number;
  /** Wall-clock seconds before the whole process group is killed. */
  wallSeconds: number;
  /** Address space per process in MiB (RLIMIT_AS): big allocations raise MemoryError. */
  memoryMb: number;
  /**
   * Processes and threads the program may have, itself included (RLIMIT_NPROC inside the sandbox's
   * user namespace is this plus the sandbox's init). Stops fork bombs. Worst-case memory of one run
   * is `memoryMb * maxProcesses`.
   */
  maxProcesses: number;
  /** Largest file the program may write, in MiB (RLIMIT_FSIZE). */
  fileSizeMb: number;
  /** Size of the writable scratch folder `/tmp` (a tmpfs), in MiB. */
  scratchMb: number;
  /** Characters of output kept for the observation; the rest is replaced by a marker. */
  maxOutputChars: number;
  /**
   * Bytes of output read before the program is stopped (reading is capped: a program printing 100 MB
   * never makes the host buffer it).
   */
  maxOutputBytes: number;
}

/** Defaults: 5 s CPU, 10 s wall, 512 MiB, 6 processes, 16 MiB files, 64 MiB scratch, 4096 chars. */
export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  cpuSeconds: 5,
  wallSeconds: 10,
  memoryMb: 512,
  maxProcesses: 6,
  fileSizeMb: 16,
  scratchMb: 64,
  maxOutputChars: 4096,
  maxOutputBytes: 1 << 20,
});

/** The output byte budget for a character budget: at least 1 MiB, at least 16 bytes per kept char. */
export function outputByteBudget(maxOutputChars: number): number {
  return Math.max(1 << 20, maxOutputChars * 16);
}
