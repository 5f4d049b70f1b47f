/**
 * What opening storage reports while it works, so that a long first start or a crash recovery is
 * never silent: the composition root logs these and says them on /ready while the service starts.
 */
export type OpenEvent =
  /** First start of an embedded database: its cluster is being created (initdb). */
  | { step: 'creating'; dataDir: string }
  | { step: 'created'; ms: number }
  /**
   * The data directory held files or directories other users could read, write or enter (an older
   * version left them so, or someone changed them): they are now 0600 and 0700. `modes` counts what
   * was found, by mode in octal.
   */
  | { step: 'narrowed'; dataDir: string; files: number; directories: number; modes: Record<string, number> }
  /** The embedded database was not stopped cleanly: its open replays this much WAL (at most). */
  | { step: 'recovering'; walBytes: number }
  /** Every second while it replays; `replayedBytes` is null where it cannot be told. */
  | { step: 'replaying'; replayedBytes: number | null; walBytes: number; elapsedMs: number }
  | { step: 'recovered'; ms: number }
  /** Storage answers (after any creation or recovery). */
  | { step: 'opened'; engine: 'pglite' | 'postgres'; ms: number };

export type OnOpenEvent = (event: OpenEvent) => void;
