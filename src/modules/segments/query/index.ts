/**
 * The segment query language (docs/segments.md): validation, reference handling, the SQL compiler
 * and the in-memory reference evaluator. Pure functions; the segments service does the I/O.
 */
export { type CompileContext, type CompiledSegment, compileSegment } from './compile';
export {
  type EvalEvent,
  type EvalOrder,
  type EvalProfile,
  type EvaluateContext,
  evaluateSegment,
} from './evaluate';
export { type ParseResult, parseSegmentQuery } from './parse';
export {
  expandSegments,
  findSegmentCycle,
  isSegmentExpandError,
  type SegmentExpandError,
  type SegmentExpandErrorCode,
  segmentReferences,
} from './references';
export {
  type AggregateTest,
  type AttributeCondition,
  type EventCondition,
  type FieldCondition,
  OPERATORS,
  type Operator,
  type OrderCondition,
  PROFILE_FIELD_KINDS,
  type QueryError,
  SEGMENT_LIMITS,
  type SegmentCondition,
  type SegmentQuery,
} from './types';
