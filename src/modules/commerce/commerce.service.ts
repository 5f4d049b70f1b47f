/**
 * The commerce module's services in one namespace, for its routes and tests: order events (the
 * worker), order reads, the product catalogue. Other modules import from ./index.ts instead.
 */

export * from './order-events';
export * from './orders.service';
export * from './products.service';
