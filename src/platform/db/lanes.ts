import type { Priority } from '../priority-mutex';
import type { Db, Lane } from './port';

/** Where each lane queues for PGlite's single connection: foreground first (platform/priority-mutex.ts). */
export const LANE_PRIORITY: Readonly<Record<Lane, Priority>> = { foreground: 0, worker: 1, analytics: 2 };

/** What an adapter builds for one lane; the rest of the Db (lane switching) is added here. */
export type LaneDb = Omit<Db, 'lane' | 'laneName' | 'foregroundSeenAt' | 'interactiveSeenAt'>;

/**
 * A Db whose `lane(name)` hands out one handle per lane, each built once by `make`; the handles
 * share everything but how their statements queue (or which pool they use).
 */
export function withLanes(make: (lane: Lane) => LaneDb): Db {
  const handles = new Map<Lane, Db>();
  let foregroundAt = Number.NEGATIVE_INFINITY;
  let interactiveAt = Number.NEGATIVE_INFINITY;
  const foregroundSeenAt = () => foregroundAt;
  const interactiveSeenAt = () => interactiveAt;
  const get = (lane: Lane): Db => {
    let h = handles.get(lane);
    if (!h) {
      const base = make(lane);
      const seen =
        lane === 'foreground'
          ? () => {
              foregroundAt = performance.now();
            }
          : () => {};
      h = {
        engine: base.engine,
        query: (sql, params, options) => {
          seen();
          return base.query(sql, params, options);
        },
        exec: (sql) => {
          seen();
          return base.exec(sql);
        },
        transaction: (fn, options) => {
          seen();
          if (options?.interactive) interactiveAt = performance.now();
          return base.transaction(fn, options);
        },
        listen: base.listen,
        foregroundSeenAt,
        interactiveSeenAt,
        get listening() {
          return base.listening;
        },
        laneName: lane,
        lane: get,
        close: base.close,
      };
      handles.set(lane, h);
    }
    return h;
  };
  return get('foreground');
}
