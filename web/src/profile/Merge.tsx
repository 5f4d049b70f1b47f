import { Alert, Badge, Button, Card, Group, Modal, SimpleGrid, Stack, TagsInput, Text } from '@mantine/core';
import { useMutation, useQueries, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client';
import type { Profile } from '../api/types';
import { ErrorAlert, Loading } from '../components/states';
import { fmtMoney, personName } from '../lib/format';

function ProfileCard({ p, part }: { p: Profile; part: string }) {
  return (
    <Card withBorder p="sm">
      <Group justify="space-between" mb={4}>
        <Text fw={700} size="sm">
          {personName(p)}
        </Text>
        <Badge size="xs" variant="light">
          {part}
        </Badge>
      </Group>
      <Text size="xs" c="gray.7">
        {p.id}
      </Text>
      <Text size="sm">Spend {fmtMoney(p.total_spend)}</Text>
      <Text size="sm">
        {p.identities.map((i) => `${i.type}: ${i.value}`).join(' · ') || 'no identifiers'}
      </Text>
    </Card>
  );
}

/**
 * Merging: choose the profiles to merge into this one, see what the result will hold (the union of
 * identifiers, the summed spend), then confirm. The merge is one transaction on the server.
 */
export function MergeDialog({
  primary,
  opened,
  onClose,
}: {
  primary: Profile;
  opened: boolean;
  onClose: () => void;
}) {
  const qc = useQueryClient();
  const [ids, setIds] = useState<string[]>([]);
  const [previewing, setPreviewing] = useState(false);
  const others = useQueries({
    queries: ids.map((id) => ({
      queryKey: ['profile', id],
      queryFn: ({ signal }: { signal: AbortSignal }) =>
        api
          .get<{ data: Profile }>(`/tenant/profiles/${encodeURIComponent(id)}`, undefined, signal)
          .then((r) => r.data),
      enabled: previewing,
      retry: false,
    })),
  });
  const merge = useMutation({
    mutationFn: () =>
      api.post<{ data: { merged_profile_ids: string[]; profile: Profile } }>('/identity/merge', {
        primary_profile_id: primary.id,
        secondary_profile_ids: ids,
      }),
    onSuccess: () => {
      void qc.invalidateQueries();
      close();
    },
  });
  const close = () => {
    setIds([]);
    setPreviewing(false);
    merge.reset();
    onClose();
  };
  const loaded = others.every((o) => o.data);
  const failed = others.find((o) => o.error);
  const sameAsPrimary = others.some((o) => o.data?.id === primary.id);
  const profiles = others.map((o) => o.data).filter((p): p is Profile => Boolean(p));
  const identities = new Map<string, { type: string; value: string }>();
  for (const p of [primary, ...profiles])
    for (const i of p.identities) identities.set(`${i.type}:${i.value}`, i);

  return (
    <Modal opened={opened} onClose={close} title="Merge profiles into this one" size="xl">
      <Stack>
        <TagsInput
          label="Profiles to merge into this one"
          description="Paste profile ids (press Enter after each). They keep resolving to this profile afterwards."
          value={ids}
          onChange={(v) => {
            setIds(v.map((x) => x.trim()).filter(Boolean));
            setPreviewing(false);
          }}
          maxTags={100}
          data-testid="merge-ids"
        />
        {!previewing && (
          <Button
            w="fit-content"
            disabled={ids.length === 0}
            onClick={() => setPreviewing(true)}
            data-testid="merge-preview"
          >
            Preview the merge
          </Button>
        )}
        {previewing && !loaded && !failed && <Loading label="Loading the profiles…" />}
        {failed?.error && <ErrorAlert error={failed.error} title="A profile cannot be merged" />}
        {previewing && loaded && (
          <Stack data-testid="merge-preview-result">
            {sameAsPrimary && (
              <Alert color="yellow">
                One of these ids already resolves to this profile (it was merged before).
              </Alert>
            )}
            <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }}>
              <ProfileCard p={primary} part="keeps" />
              {profiles.map((p) => (
                <ProfileCard key={p.id} p={p} part="merged in" />
              ))}
            </SimpleGrid>
            <Card withBorder bg="indigo.0">
              <Text fw={700} size="sm">
                The result
              </Text>
              <Text size="sm">
                Profile {primary.id} with {identities.size} identifiers:{' '}
                {[...identities.values()].map((i) => i.value).join(', ')}
              </Text>
              <Text size="sm">
                Events, orders and lineage of the merged profiles move to it; traits combine by the trait
                rules (the newest value of each wins); a profile.merged webhook is sent.
              </Text>
            </Card>
          </Stack>
        )}
        {merge.error && <ErrorAlert error={merge.error} title="Not merged" />}
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button
            color="orange.9"
            disabled={!previewing || !loaded || Boolean(failed)}
            loading={merge.isPending}
            onClick={() => merge.mutate()}
            data-testid="merge-confirm"
          >
            Merge {ids.length} profile{ids.length === 1 ? '' : 's'}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
