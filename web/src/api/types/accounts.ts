// Accounts (groups named by `group` calls): GET /tenant/accounts and /tenant/accounts/{id}.

export interface Account {
  id: string;
  traits: Record<string, unknown>;
  first_seen: string;
  last_seen: string;
  created_at: string;
  updated_at: string;
}

export interface AccountMember {
  profile_id: string;
  first_seen: string;
  last_seen: string;
}

export interface AccountDetail extends Account {
  /** Counted up to 100,001. */
  member_count: number;
  /** The 100 most recently seen, latest first. */
  members: AccountMember[];
}
