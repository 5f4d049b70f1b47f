import { Badge, Card, Group, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { api, type Page } from '../api/client';
import type { Account, Segment } from '../api/types';
import { QueryState } from '../components/states';
import { accountLabel } from '../lib/format';

/**
 * A card of what a profile belongs to (its segments, its accounts): the first 50 of a listing
 * filtered by `profile_id`, each a badge linking to its page.
 */
function BelongsTo<T>({
  title,
  path,
  id,
  testid,
  empty,
  badge,
}: {
  title: string;
  path: string;
  id: string;
  testid: string;
  empty: string;
  badge: (x: T) => { key: string; to: string; label: ReactNode; color?: string };
}) {
  const q = useQuery({
    queryKey: [path, { profile_id: id }],
    queryFn: ({ signal }) => api.get<Page<T>>(path, { profile_id: id, limit: 50 }, signal),
  });
  return (
    <Card withBorder>
      <Title order={2} size="h5" mb="xs">
        {title}
      </Title>
      <QueryState query={q} isEmpty={(d) => d.data.length === 0} empty={<Text size="sm">{empty}</Text>}>
        {(d) => (
          <Group gap={6} data-testid={testid}>
            {d.data.map(badge).map((b) => (
              <Badge
                key={b.key}
                component={Link}
                to={b.to}
                variant="light"
                color={b.color}
                tt="none"
                style={{ cursor: 'pointer' }}
              >
                {b.label}
              </Badge>
            ))}
            {d.pagination.has_more && <Text size="xs">and more</Text>}
          </Group>
        )}
      </QueryState>
    </Card>
  );
}

/** The segments the profile is in now. */
export function Memberships({ id }: { id: string }) {
  return (
    <BelongsTo<Segment>
      title="Segments"
      path="/tenant/segments"
      id={id}
      testid="profile-segments"
      empty="In no segment now."
      badge={(s) => ({ key: s.id, to: `/segments/${s.id}`, label: s.name })}
    />
  );
}

/** The accounts (companies, teams) this profile's `group` calls named. */
export function ProfileAccounts({ id }: { id: string }) {
  return (
    <BelongsTo<Account>
      title="Accounts"
      path="/tenant/accounts"
      id={id}
      testid="profile-accounts"
      empty="In no account: no `group` call named one."
      badge={(a) => ({
        key: a.id,
        to: `/accounts/${encodeURIComponent(a.id)}`,
        label: `${accountLabel(a.traits)} (${a.id})`,
        color: 'grape',
      })}
    />
  );
}
