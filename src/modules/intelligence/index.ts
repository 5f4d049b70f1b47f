/**
 * The intelligence module's public API. Tables: model_fits, customer_scores,
 * intelligence_dirty_profiles, intelligence_state (migrations/0012), model_backtests,
 * backtest_scores (migrations/0027). The maths are the pure models in ./models; this module reads
 * order summaries in SQL, fits per workspace on the job runner, and scores profiles (the score
 * columns of profiles are written through the profiles module). A back-test (backtest.ts) writes
 * only its own tables.
 */

export { enqueueFit, FIT_QUEUE, registerIntelligenceJobs, SCORE_QUEUE } from './intelligence.jobs';
export { registerIntelligenceRoutes } from './intelligence.routes';
export { fitAndRescore } from './intelligence.service';
// The processing pipeline's step.
export { markRescoring, type ScoredEvent } from './mark.step';
export { intelligencePersonalData } from './personal-data';
