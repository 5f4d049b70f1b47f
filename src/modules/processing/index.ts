/** The processing module's public API: what other modules may call. */

export { erasureHorizonsTask } from './horizons';
export { processingPersonalData } from './personal-data';
export { countBacklog } from './processing.repo';
export { backlogOf, COUNT_CAP, countDeadLetters } from './stats.repo';
export { oldestUnappliedSeq } from './unapplied.repo';
