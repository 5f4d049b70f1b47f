import { Badge, Button, Group, Stack, Table, Text } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Fragment, useState } from 'react';
import { api } from '../api/client';
import type { Attempt, Delivery, Webhook } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, ErrorAlert, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtTime } from '../lib/format';

// A webhook's delivery log, each delivery's attempts, and redelivery.

const STATUS_COLOR: Record<Delivery['status'], string> = {
  pending: 'yellow',
  delivered: 'teal',
  failed: 'red',
  dead: 'gray',
  erased: 'gray',
  cancelled: 'orange',
};

function Attempts({ webhookId, deliveryId }: { webhookId: string; deliveryId: string }) {
  const q = useQuery({
    queryKey: ['attempts', webhookId, deliveryId],
    queryFn: ({ signal }) =>
      api.get<{ data: Attempt[] }>(
        `/tenant/webhooks/${webhookId}/deliveries/${deliveryId}`,
        undefined,
        signal,
      ),
  });
  return (
    <QueryState query={q} isEmpty={(d) => d.data.length === 0} empty={<Text size="sm">No attempt yet.</Text>}>
      {(d) => (
        <Table data-testid={`attempts-${deliveryId}`} fz="xs">
          <TableHead columns={['Attempt', 'Response', 'Duration', 'Error', 'At']} />
          <Table.Tbody>
            {d.data.map((a) => (
              <Table.Tr key={a.n}>
                <Table.Td>#{a.n}</Table.Td>
                <Table.Td>{a.status_code ?? '—'}</Table.Td>
                <Table.Td>{a.duration_ms} ms</Table.Td>
                <Table.Td>{a.error ?? '—'}</Table.Td>
                <Table.Td>{fmtTime(a.attempted_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </QueryState>
  );
}

export function Deliveries({ webhook }: { webhook: Webhook }) {
  const qc = useQueryClient();
  const paged = usePaged<Delivery>(
    `/tenant/webhooks/${webhook.id}/deliveries`,
    {},
    { refetchInterval: 3000 },
  );
  const [open, setOpen] = useState<string | null>(null);
  const redeliver = useMutation({
    mutationFn: (id: string) => api.post(`/tenant/webhooks/${webhook.id}/deliveries/${id}/redeliver`),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [`/tenant/webhooks/${webhook.id}/deliveries`] }),
  });
  return (
    <Stack>
      <Group justify="space-between">
        <Text size="sm" c="gray.8">
          Newest first. Each delivery is retried with backoff until delivered or its retries are used up.
        </Text>
        <Button
          variant="default"
          size="xs"
          onClick={() => void paged.query.refetch()}
          loading={paged.query.isFetching}
        >
          Refresh
        </Button>
      </Group>
      {redeliver.error && <ErrorAlert error={redeliver.error} />}
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={
          <Empty title="No deliveries yet">
            Deliveries appear here when an event this webhook subscribes to happens. Send a test to check the
            destination.
          </Empty>
        }
      >
        {() => (
          <Table.ScrollContainer minWidth={820}>
            <Table data-testid="webhook-deliveries" highlightOnHover>
              <TableHead
                columns={[
                  'Event',
                  'Status',
                  'Attempts',
                  'Last response',
                  'Last error',
                  'Last attempt',
                  { label: 'Actions', hidden: true },
                ]}
              />
              <Table.Tbody>
                {paged.rows.map((d) => (
                  <Fragment key={d.id}>
                    <Table.Tr data-testid={`delivery-${d.id}`}>
                      <Table.Td>
                        <Text size="sm">{d.event_type}</Text>
                        <Text size="xs" c="gray.7">
                          {d.event_id}
                        </Text>
                      </Table.Td>
                      <Table.Td miw={110}>
                        <Badge
                          color={STATUS_COLOR[d.status]}
                          variant="light"
                          miw="max-content"
                          data-testid="delivery-status"
                        >
                          {d.status}
                        </Badge>
                      </Table.Td>
                      <Table.Td>{d.attempts}</Table.Td>
                      <Table.Td>{d.last_status_code ?? '—'}</Table.Td>
                      <Table.Td style={{ maxWidth: 240, wordBreak: 'break-word' }}>
                        {d.last_error ?? '—'}
                      </Table.Td>
                      <Table.Td>
                        {fmtTime(d.last_attempt_at)}
                        {d.next_attempt_at && (
                          <Text size="xs" c="gray.7">
                            next {fmtTime(d.next_attempt_at)}
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        <Group gap={4} wrap="nowrap">
                          <Button
                            size="xs"
                            variant="subtle"
                            onClick={() => setOpen(open === d.id ? null : d.id)}
                            aria-expanded={open === d.id}
                          >
                            Attempts
                          </Button>
                          <Button
                            size="xs"
                            variant="light"
                            onClick={() => redeliver.mutate(d.id)}
                            loading={redeliver.isPending && redeliver.variables === d.id}
                            data-testid={`redeliver-${d.id}`}
                          >
                            Redeliver
                          </Button>
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                    {open === d.id && (
                      <Table.Tr>
                        <Table.Td colSpan={7}>
                          <Attempts webhookId={webhook.id} deliveryId={d.id} />
                        </Table.Td>
                      </Table.Tr>
                    )}
                  </Fragment>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="deliveries" />
    </Stack>
  );
}
