import { Checkbox, Stack, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { api } from '../api/client';
import type { Erasure, Profile } from '../api/types';
import { ConfirmModal } from '../components/confirm';
import { personName } from '../lib/format';

export function EraseDialog({
  profile,
  opened,
  onClose,
}: {
  profile: Profile;
  opened: boolean;
  onClose: () => void;
}) {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [suppress, setSuppress] = useState(true);
  const erase = useMutation({
    mutationFn: () =>
      api.delete<{ data: Erasure }>(`/tenant/profiles/${profile.id}`, {
        suppress: suppress ? 'true' : 'false',
      }),
    onSuccess: () => {
      qc.removeQueries({ queryKey: ['profile', profile.id] });
      void qc.invalidateQueries({ queryKey: ['/tenant/profiles'] });
      void navigate('/profiles', { state: { erased: profile.id } });
    },
  });
  return (
    <ConfirmModal
      opened={opened}
      onClose={onClose}
      title="Erase this profile?"
      confirmLabel="Erase for good"
      onConfirm={() => erase.mutate()}
      busy={erase.isPending}
      error={erase.error}
      typed="erase"
      testid="erase-confirm"
    >
      <Stack gap="xs">
        <Text size="sm">
          The profile {personName(profile)} and every profile merged into it are deleted with their events,
          identifiers and lineage; their orders lose the link. This cannot be undone.
        </Text>
        <Checkbox
          label="Suppress its identifiers: they never create a profile again"
          checked={suppress}
          onChange={(e) => setSuppress(e.currentTarget.checked)}
          data-testid="erase-suppress"
        />
      </Stack>
    </ConfirmModal>
  );
}
