import { Badge, Button, Code, Stack, Table, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Fragment, useState } from 'react';
import { api } from '../api/client';
import { useSession } from '../api/session';
import type { DeadLetter } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, ErrorAlert, JsonBlock, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtTime } from '../lib/format';

export default function DeadLetters() {
  const session = useSession();
  const qc = useQueryClient();
  const paged = usePaged<DeadLetter>('/tenant/dead-letters');
  const [open, setOpen] = useState<string | null>(null);
  const [requeued, setRequeued] = useState<Set<string>>(new Set());
  const retry = useMutation({
    mutationFn: (id: string) => api.post(`/tenant/dead-letters/${encodeURIComponent(id)}/retry`),
    onSuccess: (_r, id) => {
      setRequeued((s) => new Set(s).add(id));
      void qc.invalidateQueries({ queryKey: ['/tenant/dead-letters'] });
      void qc.invalidateQueries({ queryKey: ['stats'] });
    },
  });
  return (
    <Stack>
      <PageTitle>Dead letters</PageTitle>
      <Text size="sm" c="gray.7">
        Events that could not be processed, with the reason. Retrying puts an event back in the queue as it is
        (fix the cause first, e.g. a setting).
      </Text>
      {retry.error && <ErrorAlert error={retry.error} title="Not retried" />}
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No dead letters">Every event so far was processed.</Empty>}
      >
        {() => (
          <Table.ScrollContainer minWidth={760}>
            <Table data-testid="dead-letters-table">
              <TableHead columns={['Failed', 'Reason', 'Event', 'Attempts', 'Actions']} />
              <Table.Tbody>
                {paged.rows.map((d) => (
                  <Fragment key={d.id}>
                    <Table.Tr>
                      <Table.Td>{fmtTime(d.failed_at)}</Table.Td>
                      <Table.Td style={{ maxWidth: 360, wordBreak: 'break-word' }}>{d.reason}</Table.Td>
                      <Table.Td>
                        <Badge variant="light" size="sm">
                          {d.event.event_type}
                        </Badge>{' '}
                        {d.event.event_name}
                        <Text size="xs" c="gray.7">
                          <Code>{d.event.id}</Code>
                        </Text>
                      </Table.Td>
                      <Table.Td>{d.attempts}</Table.Td>
                      <Table.Td>
                        <Button
                          size="xs"
                          variant="subtle"
                          onClick={() => setOpen(open === d.id ? null : d.id)}
                          aria-expanded={open === d.id}
                        >
                          Payload
                        </Button>
                        {session.can.write &&
                          (requeued.has(d.id) ? (
                            <Badge color="teal" variant="light">
                              requeued
                            </Badge>
                          ) : (
                            <Button
                              size="xs"
                              variant="light"
                              onClick={() => retry.mutate(d.id)}
                              loading={retry.isPending && retry.variables === d.id}
                              data-testid={`dead-letter-retry-${d.id}`}
                            >
                              Retry
                            </Button>
                          ))}
                      </Table.Td>
                    </Table.Tr>
                    {open === d.id && (
                      <Table.Tr>
                        <Table.Td colSpan={5}>
                          <JsonBlock value={d.event} />
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
      <Pager paged={paged} label="dead letters" />
    </Stack>
  );
}
