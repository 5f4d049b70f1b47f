/** The limits of the live event stream (docs/console.md, "Live events"). */
export const STREAM_LIMITS = {
  /** Open streams per workspace and process; one more is 429 with Retry-After. */
  perWorkspace: 10,
  /** Open streams per process, all workspaces; one more is 503 with Retry-After. */
  perProcess: 200,
  /** Messages a connection holds while its client reads slowly; past it they are dropped and counted. */
  buffer: 500,
  /** How often the log's tail is read while any stream is open. */
  pollMs: 250,
  /** Rows read per poll; a log growing faster skips ahead and tells every stream what it dropped. */
  rowsPerPoll: 2_000,
  /** How long a seq missing from a read is looked for again (an append still committing). */
  recheckMs: 2_000,
  /** A comment line this often keeps proxies from closing an idle stream; the credential is checked then too. */
  heartbeatMs: 15_000,
} as const;
