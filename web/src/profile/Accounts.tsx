import { Badge, Card, Group, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, type Page } from '../api/client';
import type { Account } from '../api/types';
import { QueryState } from '../components/states';
import { accountLabel } from '../lib/format';

/** The accounts (companies, teams) this profile's `group` calls named. */
export function ProfileAccounts({ id }: { id: string }) {
  const q = useQuery({
    queryKey: ['/tenant/accounts', { profile_id: id }],
    queryFn: ({ signal }) =>
      api.get<Page<Account>>('/tenant/accounts', { profile_id: id, limit: 50 }, signal),
  });
  return (
    <Card withBorder>
      <Title order={2} size="h5" mb="xs">
        Accounts
      </Title>
      <QueryState
        query={q}
        isEmpty={(d) => d.data.length === 0}
        empty={<Text size="sm">In no account: no `group` call named one.</Text>}
      >
        {(d) => (
          <Group gap={6} data-testid="profile-accounts">
            {d.data.map((a) => (
              <Badge
                key={a.id}
                component={Link}
                to={`/accounts/${encodeURIComponent(a.id)}`}
                variant="light"
                color="grape"
                tt="none"
                style={{ cursor: 'pointer' }}
              >
                {accountLabel(a.traits)} ({a.id})
              </Badge>
            ))}
            {d.pagination.has_more && <Text size="xs">and more</Text>}
          </Group>
        )}
      </QueryState>
    </Card>
  );
}
