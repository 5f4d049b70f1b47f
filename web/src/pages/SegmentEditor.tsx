import { Badge, Group, Stack, Tabs } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { api } from '../api/client';
import type { Segment } from '../api/types';
import { PageTitle, QueryState } from '../components/states';
import { fmtNumber } from '../lib/format';
import { Editor } from '../segments/Editor';
import { Changes, Members } from '../segments/Membership';

export default function SegmentEditor() {
  const { id } = useParams();
  const segment = useQuery({
    queryKey: ['segment', id],
    queryFn: ({ signal }) =>
      api.get<{ data: Segment }>(`/tenant/segments/${id}`, undefined, signal).then((r) => r.data),
    enabled: Boolean(id),
    refetchInterval: (q) => (q.state.data?.membership_status === 'computing' ? 2000 : false),
  });
  if (!id)
    return (
      <Stack>
        <PageTitle>New segment</PageTitle>
        <Editor segment={null} />
      </Stack>
    );
  return (
    <QueryState query={segment}>
      {(s) => (
        <Stack>
          <PageTitle
            actions={
              <Group gap="xs">
                <Badge variant="light" color={s.membership_status === 'current' ? 'teal' : 'yellow'}>
                  {s.membership_status}
                </Badge>
                <Badge variant="outline" data-testid="segment-member-count">
                  {fmtNumber(s.member_count)} members
                </Badge>
              </Group>
            }
          >
            {s.name}
          </PageTitle>
          <Tabs defaultValue="query" keepMounted={false}>
            <Tabs.List>
              <Tabs.Tab value="query">Query</Tabs.Tab>
              <Tabs.Tab value="members" data-testid="tab-members">
                Members
              </Tabs.Tab>
              <Tabs.Tab value="changes" data-testid="tab-changes">
                Entered / exited
              </Tabs.Tab>
            </Tabs.List>
            <Tabs.Panel value="query" pt="md">
              <Editor key={s.id} segment={s} />
            </Tabs.Panel>
            <Tabs.Panel value="members" pt="md">
              <Members id={s.id} />
            </Tabs.Panel>
            <Tabs.Panel value="changes" pt="md">
              <Changes id={s.id} />
            </Tabs.Panel>
          </Tabs>
        </Stack>
      )}
    </QueryState>
  );
}
