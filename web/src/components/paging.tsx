import { Button, Group, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, type Page, type QueryParams } from '../api/client';

/**
 * One listing of the API, a page at a time: `next` follows the server's cursor, `previous` goes back
 * to a cursor already seen. Never fetches a whole collection. Changing `params` starts at page one
 * (a cursor is bound to its filter).
 */
export function usePaged<T>(
  path: string,
  params: QueryParams = {},
  options: { limit?: number; enabled?: boolean; refetchInterval?: number } = {},
) {
  const limit = options.limit ?? 25;
  const filterKey = JSON.stringify(params);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new filter (or path) starts at page one
  useEffect(() => setCursors([null]), [path, filterKey]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const query = useQuery({
    queryKey: [path, params, limit, cursor],
    queryFn: ({ signal }) => api.get<Page<T>>(path, { ...params, limit, cursor }, signal),
    placeholderData: keepPreviousData,
    enabled: options.enabled ?? true,
    // Only the first page follows new rows; later pages stay as they were when reached.
    refetchInterval: cursors.length === 1 ? options.refetchInterval : undefined,
  });
  const next = query.data?.pagination.next_cursor ?? null;
  return {
    query,
    rows: query.data?.data ?? [],
    page: cursors.length,
    hasNext: Boolean(query.data?.pagination.has_more && next),
    hasPrevious: cursors.length > 1,
    next: () => next && setCursors((c) => [...c, next]),
    previous: () => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c)),
    reset: () => setCursors([null]),
  };
}

export function Pager({
  paged,
  label = 'rows',
}: {
  paged: {
    page: number;
    hasNext: boolean;
    hasPrevious: boolean;
    next: () => void;
    previous: () => void;
    rows: unknown[];
    query: { isFetching: boolean };
  };
  label?: string;
}) {
  // Nothing to page through until the first page has arrived (its loader or error shows above).
  if (paged.rows.length === 0 && paged.page === 1) return null;
  return (
    <Group justify="space-between" mt="sm">
      <Text size="sm" c="gray.7">
        Page {paged.page} · {paged.rows.length} {label}
      </Text>
      <Group gap="xs">
        <Button
          variant="default"
          size="xs"
          onClick={paged.previous}
          disabled={!paged.hasPrevious}
          data-testid="page-previous"
        >
          Previous
        </Button>
        <Button
          variant="default"
          size="xs"
          onClick={paged.next}
          disabled={!paged.hasNext}
          loading={paged.query.isFetching}
          data-testid="page-next"
        >
          Next
        </Button>
      </Group>
    </Group>
  );
}
