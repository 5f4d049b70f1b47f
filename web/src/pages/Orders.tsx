import { Anchor, Badge, Select, Stack, Table, Text } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router';
import type { Order } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtMoney, fmtTime } from '../lib/format';

const STATUS_COLOR: Record<string, string> = {
  completed: 'teal',
  pending: 'yellow',
  cancelled: 'gray',
  refunded: 'orange',
};

export default function Orders() {
  const [status, setStatus] = useState<string | null>(null);
  const paged = usePaged<Order>('/tenant/orders', { status });
  return (
    <Stack>
      <PageTitle>Orders</PageTitle>
      <Select
        label="Status"
        placeholder="any status"
        data={['pending', 'completed', 'cancelled', 'refunded']}
        value={status}
        onChange={setStatus}
        clearable
        w={220}
        data-testid="orders-filter-status"
      />
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={
          <Empty title="No orders">
            Orders arrive as `order` events (POST /api/ingest with event_type order).
          </Empty>
        }
      >
        {() => (
          <Table.ScrollContainer minWidth={800}>
            <Table striped highlightOnHover data-testid="orders-table">
              <TableHead
                columns={['Order', 'Status', { label: 'Total', right: true }, 'Items', 'Customer', 'Placed']}
              />
              <Table.Tbody>
                {paged.rows.map((o) => (
                  <Table.Tr key={o.order_id}>
                    <Table.Td>{o.order_id}</Table.Td>
                    <Table.Td>
                      <Badge variant="light" color={STATUS_COLOR[o.status] ?? 'gray'}>
                        {o.status}
                      </Badge>
                    </Table.Td>
                    <Table.Td ta="right">{fmtMoney(o.total, o.currency)}</Table.Td>
                    <Table.Td>
                      <Text size="sm" lineClamp={2}>
                        {o.items.map((i) => `${i.quantity}× ${i.name ?? i.product_id ?? '?'}`).join(', ')}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      {o.profile_id ? (
                        <Anchor component={Link} to={`/profiles/${o.profile_id}`} size="sm">
                          {o.profile_id.slice(0, 8)}…
                        </Anchor>
                      ) : (
                        '—'
                      )}
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
    </Stack>
  );
}
