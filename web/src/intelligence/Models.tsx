/** The Intelligence page's current models: each component's parameters and fit time. */
import { Alert, Badge, Card, Code, Group, SimpleGrid, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api } from '../api/client';
import type { ModelComponent } from '../api/types';
import { QueryState } from '../components/states';
import { fmtNumber, fmtTime } from '../lib/format';

function ParamsTable({ params }: { params: Record<string, unknown> }) {
  const rows = Object.entries(params).filter(([, v]) => typeof v === 'number' || typeof v === 'string');
  return (
    <Table fz="xs">
      <Table.Tbody>
        {rows.map(([k, v]) => (
          <Table.Tr key={k}>
            <Table.Td>
              <Code>{k}</Code>
            </Table.Td>
            <Table.Td ta="right">{typeof v === 'number' ? v.toPrecision(4) : String(v)}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

export function Models() {
  const q = useQuery({
    queryKey: ['models'],
    queryFn: ({ signal }) =>
      api.get<{ data: ModelComponent[] }>('/intelligence/models', undefined, signal).then((r) => r.data),
  });
  return (
    <QueryState
      query={q}
      isEmpty={(d) => d.length === 0}
      empty={
        <Alert color="gray">
          No model has been fitted yet. Fits run by themselves as orders arrive, or fit now.
        </Alert>
      }
    >
      {(models) => (
        <SimpleGrid cols={{ base: 1, md: 3 }} data-testid="models">
          {models.map((m) => (
            <Card withBorder key={m.kind}>
              <Group justify="space-between">
                <Title order={3} size="h5">
                  {m.kind}
                </Title>
                <Badge variant="light" color={m.converged ? 'teal' : 'orange'}>
                  {m.converged ? 'converged' : 'not converged'}
                </Badge>
              </Group>
              <Text size="sm" fw={600}>
                {m.name}
              </Text>
              <Text size="xs" c="gray.7">
                fitted {fmtTime(m.fitted_at)} on {fmtNumber(m.customers)} customers
                {m.log_likelihood !== null ? ` · log-likelihood ${m.log_likelihood.toFixed(1)}` : ''}
              </Text>
              <ParamsTable params={m.params} />
            </Card>
          ))}
        </SimpleGrid>
      )}
    </QueryState>
  );
}
