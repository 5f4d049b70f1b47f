import type { Logger } from 'pino';
import type { OpenEvent } from './platform/db';
import type { MigrateProgress } from './platform/db/migrate';
import type { StartPhase } from './platform/http/front-door';

/**
 * What a start says while it works, in the log and on /ready: a first start of the embedded
 * database (its creation takes seconds to a minute on a busy machine), a recovery after a crash,
 * each migration. Nothing of a start is silent.
 */
export interface StartReport {
  open(e: OpenEvent): void;
  migrate(p: MigrateProgress): void;
  /** Storage is up to date: the caches and the app come next. */
  loading(): void;
}

/** Progress of a long recovery is logged this often (the /ready text follows every report). */
const LOG_REPLAY_EVERY_MS = 5000;

const mb = (bytes: number) => Math.round(bytes / 1048576);
const ms = (n: number) => Math.round(n);

export function createStartReport(
  log: Logger,
  setPhase: (phase: StartPhase, text: string) => void = () => {},
): StartReport {
  let lastReplayLog = 0;
  return {
    open(e) {
      switch (e.step) {
        case 'creating':
          log.info({ data_dir: e.dataDir }, 'creating the embedded database (first start)');
          setPhase('creating', 'creating the embedded database');
          return;
        case 'created':
          log.info({ ms: ms(e.ms) }, 'created the embedded database');
          setPhase('opening', 'opening storage');
          return;
        case 'narrowed': {
          const found = Object.entries(e.modes)
            .map(([mode, n]) => `${n} of mode ${mode}`)
            .join(', ');
          log.warn(
            { data_dir: e.dataDir, files: e.files, directories: e.directories, modes_found: e.modes },
            `the data directory was open to other users: made ${e.files} files 0600 and ${e.directories} directories 0700 (found ${found})`,
          );
          return;
        }
        case 'recovering':
          log.warn({ wal_mb: mb(e.walBytes) }, 'recovering the embedded database after an unclean stop');
          setPhase(
            'recovering',
            `recovering the embedded database after an unclean stop (up to ${mb(e.walBytes)} MB of log to replay)`,
          );
          return;
        case 'replaying': {
          const done = e.replayedBytes === null ? '' : `${mb(e.replayedBytes)} of `;
          setPhase(
            'recovering',
            `recovering the embedded database after an unclean stop (${done}${mb(e.walBytes)} MB of log replayed, ${Math.round(e.elapsedMs / 1000)} s)`,
          );
          if (e.elapsedMs - lastReplayLog >= LOG_REPLAY_EVERY_MS) {
            lastReplayLog = e.elapsedMs;
            log.info(
              {
                replayed_mb: e.replayedBytes === null ? null : mb(e.replayedBytes),
                wal_mb: mb(e.walBytes),
                elapsed_s: Math.round(e.elapsedMs / 1000),
              },
              'still recovering the embedded database',
            );
          }
          return;
        }
        case 'recovered':
          log.info({ ms: ms(e.ms) }, 'recovered the embedded database');
          return;
        case 'opened':
          log.info({ engine: e.engine, ms: ms(e.ms) }, 'storage open');
          setPhase('migrating', 'checking the database schema');
          return;
      }
    },
    migrate(p) {
      if (p.step === 'pending') {
        log.info({ pending: p.of }, 'migrating the database');
        setPhase('migrating', `migrating the database: 0 of ${p.of}`);
        return;
      }
      log.info(
        { version: p.version, name: p.name, n: p.n, of: p.of, ms: ms(p.ms) },
        `migration ${p.n} of ${p.of} applied`,
      );
      setPhase('migrating', `migrating the database: ${p.n} of ${p.of}`);
    },
    loading() {
      setPhase('loading', 'loading settings and keys');
    },
  };
}
