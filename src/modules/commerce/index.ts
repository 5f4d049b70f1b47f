/**
 * The commerce module's public API: what other modules may call. Tables: orders, products.
 */

export {
  applyOrderEvent,
  applyOrderEvents,
  type OrderEvent,
  type OrderOutcome,
  reassignOrders,
  recomputeOrderSummary,
} from './order-events';
// The processing pipeline's step.
export { applyOrders, type OrderStepEvent } from './orders.step';
export { commercePersonalData } from './personal-data';
export { revenueSince } from './stats.repo';
