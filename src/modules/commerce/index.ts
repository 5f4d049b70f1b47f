/**
 * The commerce module's public API: what other modules may call. Tables: orders, products.
 */

// Workspace exports (GET /tenant/exports/orders): finished lines, and where an order stands.
export { exportOrdersPage, findOrderKey, ORDER_EXPORT_FIELDS } from './export.repo';
export {
  applyOrderEvent,
  applyOrderEvents,
  type OrderEvent,
  type OrderOutcome,
  ownersOfOrders,
  reassignOrders,
  recomputeOrderSummary,
} from './order-events';
// The processing pipeline's step.
export { applyOrders, type OrderStepEvent } from './orders.step';
export { commercePersonalData } from './personal-data';
export { revenueSince } from './stats.repo';
