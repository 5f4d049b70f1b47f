/**
 * The segments module's public API: what other modules may call. Tables: segments,
 * segment_memberships, segment_changes, segment_dirty_profiles. The query language is the pure
 * core in ./query (parse, compile to SQL, evaluate in memory).
 */

// Workspace exports (GET /tenant/exports/segments/{id}/members): pages of members, and where one stands.
export { exportMembersPage, findMemberSeq } from './export.repo';
export { markSegmentWork, type TouchedProfiles } from './mark.step';
export { segmentsPersonalData } from './personal-data';
export { markProfilesForRefresh } from './profile-hooks';
export { REFRESH_QUEUE, registerSegmentJobs, type SegmentJobOptions } from './refresh.job';
export { getSegment } from './segments.service';
