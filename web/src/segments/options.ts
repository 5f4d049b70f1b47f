import { useQuery } from '@tanstack/react-query';
import { api, type Page } from '../api/client';
import type { Segment } from '../api/types';

/**
 * Segment choices for a select: the first 100 segments (a workspace holds at most 500), all but
 * `exclude` (a segment never refers to itself). One query, shared by every select that offers them.
 */
export function useSegmentOptions(exclude?: string): { value: string; label: string }[] {
  const q = useQuery({
    queryKey: ['segment-options'],
    queryFn: ({ signal }) => api.get<Page<Segment>>('/tenant/segments', { limit: 100 }, signal),
  });
  return (q.data?.data ?? [])
    .filter((s) => s.id !== exclude)
    .map((s) => ({ value: s.id, label: `${s.name} (${s.id})` }));
}
