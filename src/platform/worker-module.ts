import type { AppDeps } from './http/types';

/** A background loop run by ROLE=worker|all (src/worker.ts lists them). start() returns its stop function. */
export interface WorkerModule {
  name: string;
  start(deps: AppDeps): Promise<() => Promise<void>>;
}
