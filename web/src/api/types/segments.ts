export interface Segment {
  id: string;
  name: string;
  description: string | null;
  query: unknown;
  member_count: number;
  membership_status: 'current' | 'computing';
  created_at: string;
  updated_at: string;
}

export interface SegmentChange {
  profile_id: string;
  change: 'entered' | 'exited';
  at: string;
}
