import { Stack, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense } from 'react';
import type { IdentityGraph } from '../api/types';
import { Loading, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtTime } from '../lib/format';
import { get } from './shared';

const GraphView = lazy(() => import('./IdentityGraph'));

export function Graph({ id }: { id: string }) {
  const q = useQuery({ queryKey: ['graph', id], queryFn: get<IdentityGraph>(`/identity/graph/${id}`) });
  return (
    <QueryState query={q}>
      {(g) => (
        <Stack gap="xs">
          <Suspense fallback={<Loading label="Drawing the graph…" />}>
            <GraphView graph={g} />
          </Suspense>
          <Table.ScrollContainer minWidth={600}>
            <Table fz="xs" data-testid="identity-links">
              <TableHead columns={['Identifier', 'Type', 'First seen', 'Last seen']} />
              <Table.Tbody>
                {g.nodes.map((n) => (
                  <Table.Tr key={n.id}>
                    <Table.Td>{n.value}</Table.Td>
                    <Table.Td>{n.type}</Table.Td>
                    <Table.Td>{fmtTime(n.first_seen)}</Table.Td>
                    <Table.Td>{fmtTime(n.last_seen)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {g.edges.length > 0 && (
            <Text size="xs" c="gray.7">
              Links made by events:{' '}
              {g.edges
                .map((e) => {
                  const from = g.nodes.find((n) => n.id === e.from)?.value ?? e.from;
                  const to = g.nodes.find((n) => n.id === e.to)?.value ?? e.to;
                  return `${from} → ${to} (${e.event_id ?? 'no event'})`;
                })
                .join('; ')}
            </Text>
          )}
          {g.merged_profile_ids.length > 0 && (
            <Text size="xs" c="gray.7">
              Merged profiles: {g.merged_profile_ids.join(', ')}
            </Text>
          )}
        </Stack>
      )}
    </QueryState>
  );
}
