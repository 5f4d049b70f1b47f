/** The most an account's traits may hold, as JSON (the same bound as a profile's attributes). */
export const MAX_ACCOUNT_TRAIT_BYTES = 256 * 1024;

/** The longest group id an account may have: the `/v1` door refuses longer ones, the API reads up to it. */
export const MAX_ACCOUNT_ID_LENGTH = 1000;

/** The members GET /tenant/accounts/{id} shows: the most recently seen ones. */
export const MAX_LISTED_MEMBERS = 100;

/** `member_count` is counted up to this (a larger account answers this number). */
export const MEMBER_COUNT_CAP = 100_001;
