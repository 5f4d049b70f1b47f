import { consoleHousekeeping } from './modules/console';
import { registerIntelligenceJobs } from './modules/intelligence';
import { erasureHorizonsTask } from './modules/processing';
import { registerSegmentJobs } from './modules/segments';
import { consentDefaultFrom, registerWebhookJobs } from './modules/webhooks';
import { createJobRunner, pruneJobsTask, registerMaintenance } from './platform/jobs';
import type { WorkerModule } from './worker';
import { registerRepairJobs, registerRetentionJobs } from './workflows';

/** How long a SIGTERM waits for running jobs before releasing them to another process. */
const JOBS_DRAIN_MS = 10_000;

/**
 * The shared job runner (platform/jobs) of a worker process: the queues of webhook deliveries,
 * segment refreshes and model fits register here as those capabilities land: today the segment
 * membership refreshes (modules/segments), the model fits and per-order rescoring
 * (modules/intelligence), the one-off data repairs (workflows/repair.ts), the retention sweep
 * (workflows/retention.ts), the webhook fan-out and deliveries (modules/webhooks; its fan-out pump also
 * starts and stops here) and the maintenance schedule (pruning finished jobs and vacuuming their table).
 */
export const jobsWorker: WorkerModule = {
  name: 'jobs',
  async start(deps) {
    const runner = createJobRunner({ db: deps.db, log: deps.log });
    await registerMaintenance(runner, pruneJobsTask());
    await registerMaintenance(runner, consoleHousekeeping());
    await registerMaintenance(runner, erasureHorizonsTask());
    await registerSegmentJobs(runner, { log: deps.log });
    await registerIntelligenceJobs(runner, { log: deps.log, settings: deps.settings });
    registerRepairJobs(runner, { log: deps.log, settings: deps.settings });
    // Over the personal-data registry, which only the composition root holds (deps.personalData).
    await registerRetentionJobs(runner, {
      log: deps.log,
      settings: deps.settings,
      registry: deps.personalData,
    });
    const stopPump = await registerWebhookJobs(runner, {
      db: deps.db,
      log: deps.log,
      allowPrivate: deps.config.allowPrivateWebhooks,
      consentDefault: consentDefaultFrom(deps.settings),
    });
    runner.start();
    return async () => {
      await stopPump();
      const { finished, released } = await runner.stop({ drainMs: JOBS_DRAIN_MS });
      deps.log.debug({ finished, released }, 'job runner stopped');
    };
  },
};
