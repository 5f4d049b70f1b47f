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
export {
  checkOrderPayload,
  DEFAULT_CURRENCY,
  DEFAULT_STATUS,
  MAX_AMOUNT,
  MAX_ITEMS,
  MAX_QUANTITY,
  MAX_TEXT,
  type NormalizedOrder,
  ORDER_STATUSES,
  type OrderItem,
  type OrderStatus,
  readOrder,
  readOrderPayload,
  withOrderDefaults,
} from './order-payload';
export { unlinkOrdersOfProfiles } from './orders.service';
// The processing pipeline's step.
export { applyOrders, type OrderStepEvent } from './orders.step';
