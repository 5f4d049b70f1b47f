import { Alert, Anchor, Card, Group, Stack, Text, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ApiError, api, type Pagination } from '../api/client';
import { useSession } from '../api/session';
import type { Profile, Segment } from '../api/types';
import { ErrorAlert, Loading } from '../components/states';
import { fmtNumber, personName } from '../lib/format';

// The live count beside the editor: the query counted as it is edited, and why a count failed.

interface PreviewData {
  count: number;
  profiles: Profile[];
  pagination: Pagination;
}

function usePreview(query: unknown, enabled: boolean) {
  const body = JSON.stringify(query);
  const [debounced] = useDebouncedValue(body, 500);
  return useQuery<PreviewData>({
    queryKey: ['calculate', debounced],
    queryFn: ({ signal }) =>
      api
        .post<{ data: { count: number; profiles: Profile[]; pagination: Pagination } }>(
          '/tenant/segments/calculate',
          {
            query: JSON.parse(debounced),
            limit: 5,
          },
        )
        .then((r) => {
          if (signal.aborted) throw new DOMException('aborted', 'AbortError');
          return r.data;
        }),
    enabled: enabled && debounced === body,
    placeholderData: keepPreviousData,
    // A bad query stays bad until edited; a 429 (too many calculations at once) passes.
    retry: (n, err) => err instanceof ApiError && err.status === 429 && n < 3,
    staleTime: 30_000,
  });
}

function PreviewError({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.code === 'BUDGET_EXCEEDED')
    return (
      <Alert color="orange" title="Too much work to count now" data-testid="preview-error">
        {error.message} Saved segments are computed in the background and kept current, so saving this query
        still works.
      </Alert>
    );
  if (error instanceof ApiError && error.status === 429)
    return (
      <Alert color="yellow" title="Busy" data-testid="preview-error">
        The workspace is already running as many calculations as it may at once. The count comes back when one
        ends.
      </Alert>
    );
  if (error instanceof ApiError && error.status === 400)
    return (
      <Alert color="red" title="The query is not valid yet" data-testid="preview-error">
        <Stack gap={2}>
          {(error.details.length ? error.details : [{ path: '', message: error.message }]).map((d) => (
            <Text size="sm" key={`${d.path}${d.message}`}>
              <code>{d.path.replace(/^\/query/, '') || '/'}</code> {d.message}
            </Text>
          ))}
        </Stack>
      </Alert>
    );
  return <ErrorAlert error={error} />;
}

/** The count of profiles the query matches now (an editor key counts as it edits). */
export function LiveCount({
  segment,
  query,
  empty,
}: {
  segment: Segment | null;
  query: unknown;
  empty: boolean;
}) {
  const session = useSession();
  const preview = usePreview(query, session.can.write && !empty);
  return (
    <Card withBorder pos="sticky" top={70}>
      <Title order={2} size="h4">
        Live count
      </Title>
      {!session.can.write ? (
        <Text size="sm" c="gray.8">
          Counting a query as you edit needs an editor key.{' '}
          {segment && `This segment has ${fmtNumber(segment.member_count)} members.`}
        </Text>
      ) : empty ? (
        <Text size="sm">Add a condition to see how many profiles match.</Text>
      ) : (
        <Stack gap="xs">
          <Group align="baseline" gap="xs">
            <Text fz={40} fw={700} data-testid="preview-count" aria-live="polite">
              {preview.data ? fmtNumber(preview.data.count) : '…'}
            </Text>
            <Text size="sm" c="gray.8">
              profiles match now
            </Text>
          </Group>
          {preview.isFetching && <Loading label="Counting…" />}
          {preview.error && <PreviewError error={preview.error} />}
          {preview.data && preview.data.profiles.length > 0 && (
            <Stack gap={2}>
              <Text size="xs" fw={700} c="gray.8">
                Oldest matching profiles
              </Text>
              {preview.data.profiles.map((p) => (
                <Anchor key={p.id} component={Link} to={`/profiles/${p.id}`} size="sm">
                  {personName(p)}
                </Anchor>
              ))}
            </Stack>
          )}
        </Stack>
      )}
    </Card>
  );
}
