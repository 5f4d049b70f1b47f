import { Anchor, Card, Grid, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import type { AccountDetail as Detail } from '../api/types';
import { JsonBlock, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { accountLabel, fmtNumber, fmtTime } from '../lib/format';
import { Field, get } from '../profile/shared';

/** The API counts members up to this (docs/api.md, "Accounts"): more reads as "more than". */
const MEMBER_COUNT_CAP = 100_001;

export default function AccountDetail() {
  const { id = '' } = useParams();
  const account = useQuery({
    queryKey: ['account', id],
    queryFn: get<Detail>(`/tenant/accounts/${encodeURIComponent(id)}`),
  });
  return (
    <QueryState query={account} loadingLabel="Loading the account…">
      {(a) => (
        <Stack>
          <div>
            <Title order={1} size="h2" data-testid="account-name">
              {accountLabel(a.traits)}
            </Title>
            <Text size="sm" c="gray.7">
              {a.id}
            </Text>
          </div>
          <Grid gap="md">
            <Grid.Col span={{ base: 12, md: 5 }}>
              <Card withBorder h="100%">
                <Title order={2} size="h5" mb="xs">
                  Account
                </Title>
                <SimpleGrid cols={2} spacing="xs" data-testid="account-fields">
                  <Field label="Members">
                    {a.member_count >= MEMBER_COUNT_CAP
                      ? `more than ${fmtNumber(MEMBER_COUNT_CAP - 1)}`
                      : fmtNumber(a.member_count)}
                  </Field>
                  <Field label="Traits written">{fmtTime(a.updated_at)}</Field>
                  <Field label="First seen">{fmtTime(a.first_seen)}</Field>
                  <Field label="Last seen">{fmtTime(a.last_seen)}</Field>
                </SimpleGrid>
              </Card>
            </Grid.Col>
            <Grid.Col span={{ base: 12, md: 7 }}>
              <Card withBorder h="100%">
                <Title order={2} size="h5" mb="xs">
                  Traits
                </Title>
                <div data-testid="account-traits">
                  {Object.keys(a.traits).length === 0 ? (
                    <Text size="sm">No traits yet: only `group` calls through /v1 write them.</Text>
                  ) : (
                    <JsonBlock value={a.traits} />
                  )}
                </div>
              </Card>
            </Grid.Col>
          </Grid>
          <Title order={2} size="h4">
            Members
          </Title>
          {a.members.length === 0 ? (
            <Text size="sm">No member yet: a profile becomes one when its `group` call is processed.</Text>
          ) : (
            <Table.ScrollContainer minWidth={600}>
              <Table striped data-testid="account-members">
                <TableHead columns={['Profile', 'First call', 'Latest call']} />
                <Table.Tbody>
                  {a.members.map((m) => (
                    <Table.Tr key={m.profile_id}>
                      <Table.Td>
                        <Anchor component={Link} to={`/profiles/${m.profile_id}`} size="sm">
                          {m.profile_id}
                        </Anchor>
                      </Table.Td>
                      <Table.Td>{fmtTime(m.first_seen)}</Table.Td>
                      <Table.Td>{fmtTime(m.last_seen)}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )}
          {a.member_count > a.members.length && (
            <Text size="xs" c="gray.7">
              The {a.members.length} most recently seen members are listed.
            </Text>
          )}
        </Stack>
      )}
    </QueryState>
  );
}
