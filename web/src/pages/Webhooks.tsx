import { Badge, Button, Group, Modal, Stack, Table, Text } from '@mantine/core';
import { useState } from 'react';
import { useSession } from '../api/session';
import type { Webhook } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, Loading, NeedsScope, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtTime } from '../lib/format';
import { ConsentCategories, WebhookDetail } from '../webhooks/WebhookDetail';
import { WebhookForm } from '../webhooks/WebhookForm';

export default function Webhooks() {
  const session = useSession();
  const paged = usePaged<Webhook>('/tenant/webhooks', {}, { enabled: session.can.admin });
  const [creating, setCreating] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);

  if (!session.can.admin)
    return (
      <NeedsScope title="Webhooks">Webhooks are managed with a key that has the admin scope.</NeedsScope>
    );

  return (
    <Stack>
      <PageTitle
        actions={
          <Button onClick={() => setCreating(true)} data-testid="webhook-create">
            New webhook
          </Button>
        }
      >
        Webhooks
      </PageTitle>
      <Text size="sm" c="gray.8">
        Signed HTTP callbacks when profiles are created or merged, orders complete, churn risk rises, or
        profiles enter and leave segments.
      </Text>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No webhooks yet">Create one to send events to another system.</Empty>}
      >
        {() => (
          <Table.ScrollContainer minWidth={700}>
            <Table highlightOnHover data-testid="webhooks-table">
              <TableHead
                columns={[
                  'Destination',
                  'Events',
                  'Consent needed',
                  'State',
                  'Created',
                  { label: 'Actions', hidden: true },
                ]}
              />
              <Table.Tbody>
                {paged.rows.map((w) => (
                  <Table.Tr key={w.id} bg={selected === w.id ? 'indigo.0' : undefined}>
                    <Table.Td style={{ wordBreak: 'break-all' }}>{w.url}</Table.Td>
                    <Table.Td>
                      <Group gap={4}>
                        {w.events.map((e) => (
                          <Badge key={e} size="sm" variant="outline">
                            {e}
                          </Badge>
                        ))}
                      </Group>
                    </Table.Td>
                    <Table.Td data-testid={`webhook-consent-${w.id}`}>
                      <ConsentCategories categories={w.consent_categories} />
                    </Table.Td>
                    <Table.Td>
                      <Badge color={w.enabled ? 'teal' : 'red'} variant="light">
                        {w.enabled ? 'enabled' : 'disabled'}
                      </Badge>
                    </Table.Td>
                    <Table.Td>{fmtTime(w.created_at)}</Table.Td>
                    <Table.Td>
                      <Button
                        size="xs"
                        variant="light"
                        onClick={() => setSelected(w.id)}
                        data-testid={`webhook-open-${w.id}`}
                      >
                        Open
                      </Button>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="webhooks" />
      {selected && <WebhookDetail key={selected} id={selected} onDeleted={() => setSelected(null)} />}
      {paged.query.isFetching && !paged.query.data && <Loading />}
      <Modal opened={creating} onClose={() => setCreating(false)} title="New webhook" size="lg">
        <WebhookForm
          onCancel={() => setCreating(false)}
          onSaved={(w) => {
            setCreating(false);
            setSelected(w.id);
          }}
        />
      </Modal>
    </Stack>
  );
}
