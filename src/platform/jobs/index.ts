/**
 * The job runner: everything the service does later or repeatedly that is not event processing.
 *
 *   const runner = createJobRunner({ db, log });
 *   runner.register('webhooks', async (payload, { signal, job }) => …, { timeoutMs: 10_000 });
 *   await runner.schedule('segments.refresh', 'every 5m', 'segments', {});
 *   await registerMaintenance(runner, pruneJobsTask());
 *   runner.start();                       …   await runner.stop({ drainMs: 10_000 });
 *   await enqueue(tx, { queue: 'webhooks', payload, key, workspaceId });   // inside any transaction
 *   await listJobs(db, { queue, state, after }); await jobCounts(db);
 *
 * Guarantees: at-least-once (a job whose worker dies runs again once its lease expires, so
 * handlers must be idempotent); never two live runs of one job; failed attempts retry with
 * exponential backoff and full jitter, then dead-letter with the last error; one job per schedule
 * tick however many processes run; a storage outage is waited out and never counts as a failure.
 */
export { type BackoffPolicy, backoffCeilingMs, backoffMs, DEFAULT_BACKOFF } from './backoff';
export { type WorkspaceDrain, workspaceDrain } from './drain';
export {
  DEFAULT_MAX_ATTEMPTS,
  enqueue,
  JOB_STATES,
  type Job,
  type JobState,
  MAX_ATTEMPTS_LIMIT,
  MAX_PAYLOAD_BYTES,
  type NewJob,
  pruneJobs,
} from './jobs.repo';
export {
  type JobCounts,
  type JobPage,
  jobCounts,
  type ListJobsFilter,
  listJobs,
  listSchedules,
} from './jobs.view';
export { MAINTENANCE_QUEUE, type MaintenanceTask, pruneJobsTask, registerMaintenance } from './maintenance';
export {
  createJobRunner,
  type JobContext,
  type JobHandler,
  type JobRunner,
  type JobRunnerDeps,
  MAX_CONCURRENCY,
  MAX_TIMEOUT_MS,
  MIN_TIMEOUT_MS,
  type QueueOptions,
} from './runner';
export { nextTick, parseSchedule, type Schedule, ScheduleSpecError } from './schedule';
export { deleteSchedule } from './schedules.repo';
