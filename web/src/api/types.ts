// Shapes of the API's answers that the console reads (see /openapi.json for the full reference),
// one file per area under ./types.

export * from './types/accounts';
export * from './types/audit';
export * from './types/commerce';
export * from './types/intelligence';
export * from './types/profiles';
export * from './types/segments';
export * from './types/webhooks';
export * from './types/workspace';
