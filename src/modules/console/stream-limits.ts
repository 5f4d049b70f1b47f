/** The limits of the live event stream (docs/console.md, "Live events"). */
export const STREAM_LIMITS = {
  /** Open streams per workspace and process; one more is 429 with Retry-After. */
  perWorkspace: 10,
  /** Open streams per process, all workspaces; one more is 503 with Retry-After. */
  perProcess: 200,
  /**
   * Bytes a connection may hold for a client that reads slowly: messages waiting for its socket to
   * drain plus what the socket's own buffer holds. A message past it ends the stream (the client
   * is told what it missed and why, if it reads again). Twice a poll's bytes: a client that has not
   * taken one poll's messages by the next one's is not keeping up. 200 streams hold at most about
   * 210 MiB between them.
   */
  bufferBytes: 1_048_576,
  /** Bytes handed to the socket at once: a poll's messages go in pieces, so its buffer stays small. */
  writeChunkBytes: 65_536,
  /** How long a stream ended for its slow client may take to hand over its last words before it is cut. */
  endGraceMs: 10_000,
  /**
   * Bytes of messages one poll hands out (at least one message): a client that keeps up takes them
   * before the next poll, so it never nears bufferBytes; a log growing faster than this skips ahead.
   */
  pollBytes: 524_288,
  /** How often the log's tail is read while any stream is open. */
  pollMs: 250,
  /** Rows read per poll; a log growing faster skips ahead and tells every stream what it dropped. */
  rowsPerPoll: 2_000,
  /** How long a seq missing from a read is looked for again (an append still committing). */
  recheckMs: 2_000,
  /** A comment line this often keeps proxies from closing an idle stream; the credential is checked then too. */
  heartbeatMs: 15_000,
} as const;
