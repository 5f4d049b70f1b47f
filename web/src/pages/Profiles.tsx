import { Alert, Anchor, Badge, Button, Group, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useState } from 'react';
import { Link, useLocation, useSearchParams } from 'react-router';
import type { Profile } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtMoney, fmtPercent, fmtTime, personName } from '../lib/format';

export default function Profiles() {
  const [params, setParams] = useSearchParams();
  const erased = (useLocation().state as { erased?: string } | null)?.erased;
  const by = params.get('by') === 'identity' ? 'identity' : 'email';
  const q = params.get('q') ?? '';
  const [text, setText] = useState(q);
  const [kind, setKind] = useState<string>(by);
  const filter = q ? { [by]: by === 'email' ? q.toLowerCase() : q } : {};
  const paged = usePaged<Profile>('/tenant/profiles', filter);

  const search = (e: React.FormEvent) => {
    e.preventDefault();
    const value = text.trim();
    const k =
      kind === 'identity' || (kind === 'email' && value && !value.includes('@')) ? 'identity' : 'email';
    setKind(k);
    setParams(value ? { q: value, by: k } : {});
  };

  return (
    <Stack>
      <PageTitle>Profiles</PageTitle>
      {erased && (
        <Alert color="teal" role="status" data-testid="erased-notice">
          Profile {erased} was erased.
        </Alert>
      )}
      <form onSubmit={search}>
        <Group align="flex-end" gap="xs" wrap="wrap">
          <Select
            label="Search by"
            w={170}
            data={[
              { value: 'email', label: 'E-mail' },
              { value: 'identity', label: 'Any identifier' },
            ]}
            value={kind}
            allowDeselect={false}
            onChange={(v) => setKind(v ?? 'email')}
          />
          <TextInput
            label={kind === 'email' ? 'E-mail (exact)' : 'Identifier (e-mail, phone, CRM id, anonymous id)'}
            placeholder={kind === 'email' ? 'ada@example.com' : 'crm-1042 or +15550100'}
            value={text}
            onChange={(e) => setText(e.currentTarget.value)}
            w={{ base: '100%', sm: 360 }}
            data-testid="profile-search"
          />
          <Button type="submit" leftSection={<IconSearch size={16} />} data-testid="profile-search-submit">
            Search
          </Button>
          {q && (
            <Button
              variant="subtle"
              onClick={() => {
                setText('');
                setParams({});
              }}
            >
              Show all
            </Button>
          )}
        </Group>
      </form>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={
          <Empty title={q ? 'No profile matches' : 'No profiles yet'}>
            {q
              ? `No live profile has ${by === 'email' ? 'the e-mail' : 'the identifier'} “${q}”.`
              : 'Profiles appear as events arrive (identify, track, page, order) or through POST /tenant/profiles.'}
          </Empty>
        }
      >
        {() => (
          <Table.ScrollContainer minWidth={760}>
            <Table striped highlightOnHover data-testid="profiles-table">
              <TableHead
                columns={[
                  'Profile',
                  'E-mail',
                  { label: 'Total spend', right: true },
                  'RFM',
                  { label: 'Churn risk', right: true },
                  'Created',
                ]}
              />
              <Table.Tbody>
                {paged.rows.map((p) => (
                  <Table.Tr key={p.id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/profiles/${p.id}`} fw={600} data-testid="profile-link">
                        {personName(p)}
                      </Anchor>
                      <Text size="xs" c="gray.7">
                        {p.identities.length} identifiers
                      </Text>
                    </Table.Td>
                    <Table.Td>{p.email ?? '—'}</Table.Td>
                    <Table.Td ta="right">{fmtMoney(p.total_spend)}</Table.Td>
                    <Table.Td>
                      {p.rfm_segment ? <Badge variant="light">{p.rfm_segment}</Badge> : '—'}
                    </Table.Td>
                    <Table.Td ta="right">{fmtPercent(p.churn_risk_score)}</Table.Td>
                    <Table.Td>{fmtTime(p.created_at)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="profiles" />
    </Stack>
  );
}
