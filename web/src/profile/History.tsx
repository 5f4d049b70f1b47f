import { Badge, Code, Group, Spoiler, Table, Text, Timeline } from '@mantine/core';
import type { LineageEntry, Order, TimelineEvent } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, JsonBlock, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtMoney, fmtTime } from '../lib/format';

// The profile's history tabs: its events, its traits' lineage and its orders.

export function Events({ id }: { id: string }) {
  const paged = usePaged<TimelineEvent>(`/tenant/profiles/${id}/events`);
  return (
    <>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No events" />}
      >
        {() => (
          <Timeline bulletSize={14} lineWidth={2} data-testid="profile-events">
            {paged.rows.map((e) => (
              <Timeline.Item
                key={e.id}
                title={
                  <Group gap="xs">
                    <Badge size="sm" variant="light">
                      {e.event_type}
                    </Badge>
                    <Text fw={600} size="sm">
                      {e.event_name}
                    </Text>
                  </Group>
                }
              >
                <Text size="xs" c="gray.7">
                  {fmtTime(e.timestamp)} · {e.id}
                  {e.anonymous_id ? ` · anonymous ${e.anonymous_id}` : ''}
                  {e.identity ? ` · identity ${e.identity}` : ''}
                </Text>
                {Object.keys(e.payload).length > 0 && (
                  <Spoiler maxHeight={0} showLabel="payload" hideLabel="hide payload">
                    <JsonBlock value={e.payload} maxHeight={200} />
                  </Spoiler>
                )}
              </Timeline.Item>
            ))}
          </Timeline>
        )}
      </QueryState>
      <Pager paged={paged} label="events" />
    </>
  );
}

const show = (v: unknown) =>
  v === undefined || v === null ? '∅' : typeof v === 'string' ? v : JSON.stringify(v);

export function Lineage({ id }: { id: string }) {
  const paged = usePaged<LineageEntry>(`/tenant/profiles/${id}/lineage`);
  return (
    <>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No field changes yet" />}
      >
        {() => (
          <Timeline bulletSize={12} data-testid="profile-lineage">
            {paged.rows.map((l) => (
              <Timeline.Item key={`${l.path}-${l.recorded_at}-${l.source_id}`} title={<Code>{l.path}</Code>}>
                <Text size="sm">
                  {show(l.old)} → <b>{show(l.new)}</b>
                </Text>
                <Text size="xs" c="gray.7">
                  {fmtTime(l.occurred_at)} · by {l.source_type === 'event' ? 'event' : 'API key'}{' '}
                  {l.source_id ?? ''}
                  {l.merged_from ? ` · from merged profile ${l.merged_from}` : ''}
                </Text>
              </Timeline.Item>
            ))}
          </Timeline>
        )}
      </QueryState>
      <Pager paged={paged} label="changes" />
    </>
  );
}

export function Orders({ id }: { id: string }) {
  const paged = usePaged<Order>('/tenant/orders', { profile_id: id });
  return (
    <>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No orders" />}
      >
        {() => (
          <Table.ScrollContainer minWidth={600}>
            <Table striped data-testid="profile-orders">
              <TableHead columns={['Order', 'Status', { label: 'Total', right: true }, 'Items', 'Placed']} />
              <Table.Tbody>
                {paged.rows.map((o) => (
                  <Table.Tr key={o.order_id}>
                    <Table.Td>{o.order_id}</Table.Td>
                    <Table.Td>
                      <Badge variant="light">{o.status}</Badge>
                    </Table.Td>
                    <Table.Td ta="right">{fmtMoney(o.total, o.currency)}</Table.Td>
                    <Table.Td>
                      {o.items.map((i) => `${i.quantity}× ${i.name ?? i.product_id ?? '?'}`).join(', ')}
                    </Table.Td>
                    <Table.Td>{fmtTime(o.occurred_at)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="orders" />
    </>
  );
}
