import { Anchor, Badge, Table } from '@mantine/core';
import { Link } from 'react-router';
import type { Profile, SegmentChange } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtMoney, fmtTime, personName } from '../lib/format';

// A saved segment's members now, and its log of entries and exits.

export function Members({ id }: { id: string }) {
  const paged = usePaged<Profile>(`/tenant/segments/${id}/members`);
  return (
    <>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No members">No profile matches this segment now.</Empty>}
      >
        {() => (
          <Table.ScrollContainer minWidth={600}>
            <Table striped data-testid="segment-members">
              <TableHead columns={['Profile', 'E-mail', 'Total spend', 'RFM']} />
              <Table.Tbody>
                {paged.rows.map((p) => (
                  <Table.Tr key={p.id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/profiles/${p.id}`}>
                        {personName(p)}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{p.email ?? '—'}</Table.Td>
                    <Table.Td>{fmtMoney(p.total_spend)}</Table.Td>
                    <Table.Td>{p.rfm_segment ?? '—'}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="members" />
    </>
  );
}

export function Changes({ id }: { id: string }) {
  const paged = usePaged<SegmentChange>(`/tenant/segments/${id}/changes`);
  return (
    <>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No changes yet">Entries and exits are logged as membership is decided.</Empty>}
      >
        {() => (
          <Table striped data-testid="segment-changes">
            <TableHead columns={['When', 'Change', 'Profile']} />
            <Table.Tbody>
              {paged.rows.map((c) => (
                <Table.Tr key={`${c.profile_id}-${c.at}-${c.change}`}>
                  <Table.Td>{fmtTime(c.at)}</Table.Td>
                  <Table.Td>
                    <Badge color={c.change === 'entered' ? 'teal' : 'orange'} variant="light">
                      {c.change}
                    </Badge>
                  </Table.Td>
                  <Table.Td>
                    <Anchor component={Link} to={`/profiles/${c.profile_id}`}>
                      {c.profile_id}
                    </Anchor>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </QueryState>
      <Pager paged={paged} label="changes" />
    </>
  );
}
