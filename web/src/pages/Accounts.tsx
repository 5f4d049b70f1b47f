import { Anchor, Stack, Table, Text } from '@mantine/core';
import { Link } from 'react-router';
import type { Account } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { accountLabel, fmtTime } from '../lib/format';

export default function Accounts() {
  const paged = usePaged<Account>('/tenant/accounts', {});
  return (
    <Stack>
      <PageTitle>Accounts</PageTitle>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={
          <Empty title="No accounts">
            Accounts are the companies or teams named by `group` calls (POST /v1/group, from the Segment and
            RudderStack libraries).
          </Empty>
        }
      >
        {() => (
          <Table.ScrollContainer minWidth={700}>
            <Table striped highlightOnHover data-testid="accounts-table">
              <TableHead columns={['Account', 'Name or traits', 'First seen', 'Last seen']} />
              <Table.Tbody>
                {paged.rows.map((a) => (
                  <Table.Tr key={a.id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/accounts/${encodeURIComponent(a.id)}`} size="sm">
                        {a.id}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm" lineClamp={1}>
                        {accountLabel(a.traits)}
                      </Text>
                    </Table.Td>
                    <Table.Td>{fmtTime(a.first_seen)}</Table.Td>
                    <Table.Td>{fmtTime(a.last_seen)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="accounts" />
    </Stack>
  );
}
