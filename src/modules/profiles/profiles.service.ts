/**
 * The profiles module's services in one namespace, for its routes and tests: reads, API writes,
 * erasure, merges. Other modules import from ./index.ts instead.
 */

export * from './erasure.service';
export * from './merge.service';
export * from './profiles.read';
export * from './profiles.write';
