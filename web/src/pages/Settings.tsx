import {
  Alert,
  Button,
  Card,
  Group,
  NumberInput,
  SimpleGrid,
  Stack,
  TagsInput,
  Text,
  Title,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';

import { ApiError, api } from '../api/client';
import { useSession } from '../api/session';
import type { Settings as WorkspaceSettings } from '../api/types';
import { ErrorAlert, PageTitle, QueryState } from '../components/states';
import { patchOf, toValues, type Values } from '../lib/settings';

const int = (min: number, max: number) => (v: number | string) =>
  v === '' || !Number.isInteger(Number(v)) || Number(v) < min || Number(v) > max
    ? `A whole number from ${min.toLocaleString('en')} to ${max.toLocaleString('en')}`
    : null;

// The API's JSON pointers (details[].path) to the form's fields.
const FIELD_OF: Record<string, keyof Values> = {
  '/rate_limits/requests_per_minute': 'requests_per_minute',
  '/rate_limits/batch_events_per_minute': 'batch_events_per_minute',
  '/junk_identifiers': 'junk_identifiers',
  '/merge_cap': 'merge_cap',
  '/churn_threshold': 'churn_threshold',
  '/discount_rate': 'discount_rate',
  '/clv_horizon_days': 'clv_horizon_days',
  '/analytics_concurrency': 'analytics_concurrency',
};

function SettingsForm({ settings }: { settings: WorkspaceSettings }) {
  const qc = useQueryClient();
  const [saved, setSaved] = useState(settings);
  const form = useForm<Values>({
    initialValues: toValues(settings),
    validate: {
      requests_per_minute: int(1, 1_000_000_000),
      batch_events_per_minute: int(1, 1_000_000_000),
      merge_cap: int(1, 1000),
      clv_horizon_days: int(30, 1825),
      analytics_concurrency: int(1, 16),
      churn_threshold: (v) =>
        v === '' || Number(v) <= 0 || Number(v) >= 1 ? 'A number between 0 and 1, both excluded' : null,
      discount_rate: (v) => (v === '' || Number(v) < 0 || Number(v) > 1 ? 'A number from 0 to 1' : null),
      junk_identifiers: (v) =>
        v.length > 1000
          ? 'At most 1000 values'
          : v.some((x) => x.length < 1 || x.length > 500)
            ? 'Each value has 1–500 characters'
            : null,
    },
  });
  const save = useMutation({
    mutationFn: (v: Values) =>
      // A JSON merge patch of what changed: keys left alone keep following the defaults.
      api.patch<{ data: WorkspaceSettings }>('/tenant/settings', patchOf(saved, v)).then((r) => r.data),
    onSuccess: (s) => {
      setSaved(s);
      qc.setQueryData(['settings'], s);
      form.setInitialValues(toValues(s));
      form.setValues(toValues(s));
    },
    onError: (err) => {
      if (err instanceof ApiError)
        for (const d of err.details) {
          const f = FIELD_OF[d.path.replace(/\/\d+$/, '')];
          if (f) form.setFieldError(f, d.message);
        }
    },
  });
  return (
    <form onSubmit={form.onSubmit((v) => save.mutate(v))}>
      <Stack>
        <Card withBorder>
          <Title order={2} size="h5" mb="sm">
            Rate limits
          </Title>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <NumberInput
              clampBehavior="none"
              label="Requests per minute, per API key"
              min={1}
              allowDecimal={false}
              thousandSeparator=","
              {...form.getInputProps('requests_per_minute')}
              data-testid="settings-rpm"
            />
            <NumberInput
              clampBehavior="none"
              label="Batch events per minute, per API key"
              min={1}
              allowDecimal={false}
              thousandSeparator=","
              {...form.getInputProps('batch_events_per_minute')}
            />
          </SimpleGrid>
        </Card>
        <Card withBorder>
          <Title order={2} size="h5" mb="sm">
            Identity
          </Title>
          <Stack>
            <NumberInput
              clampBehavior="none"
              label="Merge cap"
              description="Most profiles merged into one (1–1000)."
              min={1}
              max={1000}
              allowDecimal={false}
              {...form.getInputProps('merge_cap')}
            />
            <TagsInput
              label="Junk identifiers"
              description="Values that never link anything, on top of the built-in list (null, anonymous, n/a, …). Press Enter after each."
              {...form.getInputProps('junk_identifiers')}
            />
          </Stack>
        </Card>
        <Card withBorder>
          <Title order={2} size="h5" mb="sm">
            Predictions and analytics
          </Title>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <NumberInput
              clampBehavior="none"
              label="Churn threshold"
              description="Risk above which a profile is at risk (0–1, exclusive)."
              step={0.05}
              min={0}
              max={1}
              decimalScale={4}
              {...form.getInputProps('churn_threshold')}
            />
            <NumberInput
              clampBehavior="none"
              label="Discount rate"
              description="Annual rate for predicted CLV (0–1)."
              step={0.01}
              min={0}
              max={1}
              decimalScale={4}
              {...form.getInputProps('discount_rate')}
            />
            <NumberInput
              clampBehavior="none"
              label="CLV horizon (days)"
              description="30–1825."
              min={30}
              max={1825}
              allowDecimal={false}
              {...form.getInputProps('clv_horizon_days')}
            />
            <NumberInput
              clampBehavior="none"
              label="Analytics concurrency"
              description="Segment calculations and model fits at once per process (1–16)."
              min={1}
              max={16}
              allowDecimal={false}
              {...form.getInputProps('analytics_concurrency')}
            />
          </SimpleGrid>
        </Card>
        {save.error && <ErrorAlert error={save.error} title="Not saved" />}
        {save.isSuccess && !form.isDirty() && (
          <Alert color="teal" role="status">
            Saved. The change applies on the next request to every instance.
          </Alert>
        )}
        <Group>
          <Button
            type="submit"
            loading={save.isPending}
            disabled={!form.isDirty()}
            data-testid="settings-save"
          >
            Save settings
          </Button>
          <Button variant="default" onClick={() => form.reset()} disabled={!form.isDirty()}>
            Undo changes
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

export default function Settings() {
  const session = useSession();
  const q = useQuery({
    queryKey: ['settings'],
    queryFn: ({ signal }) =>
      api.get<{ data: WorkspaceSettings }>('/tenant/settings', undefined, signal).then((r) => r.data),
    enabled: session.can.admin,
  });
  return (
    <Stack>
      <PageTitle>Workspace settings</PageTitle>
      {!session.can.admin ? (
        <Alert color="gray">
          Workspace settings are read and changed with a key that has the admin scope.
        </Alert>
      ) : (
        <QueryState query={q}>
          {(s) => (
            <>
              <Text size="sm" c="gray.7">
                Workspace {session.workspace_name}. Every setting has a default; a changed one is stored for
                this workspace only.
              </Text>
              <SettingsForm settings={s} />
            </>
          )}
        </QueryState>
      )}
    </Stack>
  );
}
