import { Anchor, Badge, Button, Stack, Table, Text } from '@mantine/core';
import { Link } from 'react-router';
import { useSession } from '../api/session';
import type { Segment } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtNumber, fmtTime } from '../lib/format';

export default function Segments() {
  const session = useSession();
  const paged = usePaged<Segment>('/tenant/segments', {}, { refetchInterval: 10_000 });
  return (
    <Stack>
      <PageTitle
        actions={
          session.can.write && (
            <Button component={Link} to="/segments/new" data-testid="segment-new">
              New segment
            </Button>
          )
        }
      >
        Segments
      </PageTitle>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={
          <Empty title="No segments yet">
            A segment is a saved audience: profiles matching conditions on their fields, attributes, events
            and orders, kept current as events arrive.
          </Empty>
        }
      >
        {() => (
          <Table.ScrollContainer minWidth={640}>
            <Table striped highlightOnHover data-testid="segments-table">
              <TableHead columns={['Name', { label: 'Members', right: true }, 'Status', 'Updated']} />
              <Table.Tbody>
                {paged.rows.map((s) => (
                  <Table.Tr key={s.id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/segments/${s.id}`} fw={600}>
                        {s.name}
                      </Anchor>
                      {s.description && (
                        <Text size="xs" c="gray.7" lineClamp={1}>
                          {s.description}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td ta="right">{fmtNumber(s.member_count)}</Table.Td>
                    <Table.Td>
                      <Badge variant="light" color={s.membership_status === 'current' ? 'teal' : 'yellow'}>
                        {s.membership_status}
                      </Badge>
                    </Table.Td>
                    <Table.Td>{fmtTime(s.updated_at)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="segments" />
    </Stack>
  );
}
