import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Grid,
  Group,
  SimpleGrid,
  Stack,
  Tabs,
  Text,
  Title,
} from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useSession } from '../api/session';
import type { Profile } from '../api/types';
import { Empty, JsonBlock, QueryState } from '../components/states';
import { fmtMoney, fmtTime, personName } from '../lib/format';
import { Memberships, ProfileAccounts } from '../profile/Belongs';
import { ConsentCard } from '../profile/Consent';
import { EraseDialog } from '../profile/EraseDialog';
import { Graph } from '../profile/GraphTab';
import { Events, Lineage, Orders } from '../profile/History';
import { MergeDialog } from '../profile/Merge';
import { Predictions } from '../profile/Scores';
import { Field, get } from '../profile/shared';

export default function ProfileDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const [merging, setMerging] = useState(false);
  const [erasing, setErasing] = useState(false);
  const profile = useQuery({
    queryKey: ['profile', id],
    queryFn: get<Profile>(`/tenant/profiles/${encodeURIComponent(id)}`),
  });
  return (
    <QueryState query={profile} loadingLabel="Loading the profile…">
      {(p) => (
        <Stack>
          <Group justify="space-between" wrap="wrap">
            <div>
              <Title order={1} size="h2" data-testid="profile-name">
                {personName(p)}
              </Title>
              <Text size="sm" c="gray.7">
                {p.id}
              </Text>
            </div>
            {session.can.write && (
              <Group gap="xs">
                <Button
                  variant="light"
                  color="orange"
                  onClick={() => setMerging(true)}
                  data-testid="merge-button"
                >
                  Merge profiles…
                </Button>
                <Button
                  variant="light"
                  color="red"
                  onClick={() => setErasing(true)}
                  data-testid="erase-button"
                >
                  Erase…
                </Button>
              </Group>
            )}
          </Group>
          {p.id !== id && (
            <Alert color="blue">
              {id} was merged into this profile; it keeps resolving here.{' '}
              <Anchor component={Link} to={`/profiles/${p.id}`}>
                Open the surviving id
              </Anchor>
            </Alert>
          )}
          <Grid gap="md">
            <Grid.Col span={{ base: 12, md: 6 }}>
              <Card withBorder h="100%">
                <Title order={2} size="h5" mb="xs">
                  Fields
                </Title>
                <SimpleGrid cols={2} spacing="xs" data-testid="profile-fields">
                  <Field label="E-mail">{p.email ?? '—'}</Field>
                  <Field label="Name">{[p.first_name, p.last_name].filter(Boolean).join(' ') || '—'}</Field>
                  <Field label="Total spend">{fmtMoney(p.total_spend)}</Field>
                  <Field label="RFM segment">{p.rfm_segment ?? '—'}</Field>
                  <Field label="Created">{fmtTime(p.created_at)}</Field>
                  <Field label="Updated">{fmtTime(p.updated_at)}</Field>
                </SimpleGrid>
                <Text size="xs" fw={700} c="gray.8" tt="uppercase" mt="sm">
                  Identifiers
                </Text>
                <Group gap={4}>
                  {p.identities.map((i) => (
                    <Badge key={`${i.type}:${i.value}`} variant="outline" tt="none">
                      {i.type}: {i.value}
                    </Badge>
                  ))}
                </Group>
              </Card>
            </Grid.Col>
            <Grid.Col span={{ base: 12, md: 6 }}>
              <Stack>
                <Predictions id={p.id} />
                <Memberships id={p.id} />
                <ProfileAccounts id={p.id} />
              </Stack>
            </Grid.Col>
          </Grid>
          <ConsentCard profile={p} />
          <Tabs defaultValue="graph" keepMounted={false}>
            <Tabs.List>
              <Tabs.Tab value="graph" data-testid="tab-graph">
                Identity graph
              </Tabs.Tab>
              <Tabs.Tab value="events" data-testid="tab-events">
                Events
              </Tabs.Tab>
              <Tabs.Tab value="lineage" data-testid="tab-lineage">
                Lineage
              </Tabs.Tab>
              <Tabs.Tab value="orders" data-testid="tab-orders">
                Orders
              </Tabs.Tab>
              <Tabs.Tab value="attributes" data-testid="tab-attributes">
                Attributes
              </Tabs.Tab>
            </Tabs.List>
            <Tabs.Panel value="graph" pt="md">
              <Graph id={p.id} />
            </Tabs.Panel>
            <Tabs.Panel value="events" pt="md">
              <Events id={p.id} />
            </Tabs.Panel>
            <Tabs.Panel value="lineage" pt="md">
              <Lineage id={p.id} />
            </Tabs.Panel>
            <Tabs.Panel value="orders" pt="md">
              <Orders id={p.id} />
            </Tabs.Panel>
            <Tabs.Panel value="attributes" pt="md">
              {Object.keys(p.attributes).length ? (
                <JsonBlock value={p.attributes} maxHeight={480} />
              ) : (
                <Empty title="No attributes" />
              )}
            </Tabs.Panel>
          </Tabs>
          <MergeDialog primary={p} opened={merging} onClose={() => setMerging(false)} />
          <EraseDialog profile={p} opened={erasing} onClose={() => setErasing(false)} />
        </Stack>
      )}
    </QueryState>
  );
}
