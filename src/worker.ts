import { jobsWorker } from './jobs.worker';
import { processingWorker } from './modules/processing/processing.worker';
import type { AppDeps } from './platform/http/types';
import type { WorkerModule } from './platform/worker-module';
import { statisticsWorker } from './statistics.worker';

export type { WorkerModule };

/** Every background worker, registered explicitly (like the routes in app.ts). */
export const WORKERS: WorkerModule[] = [processingWorker, jobsWorker, statisticsWorker];

export async function startWorkers(deps: AppDeps): Promise<() => Promise<void>> {
  const stops: Array<() => Promise<void>> = [];
  for (const w of WORKERS) {
    stops.push(await w.start(deps));
    deps.log.debug({ worker: w.name }, 'worker started');
  }
  return async () => {
    for (const stop of stops.reverse()) await stop();
  };
}
