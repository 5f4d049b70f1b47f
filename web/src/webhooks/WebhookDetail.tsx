import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  CopyButton,
  Group,
  NumberInput,
  Stack,
  Tabs,
  Text,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client';
import type { Webhook } from '../api/types';
import { ConfirmModal } from '../components/confirm';
import { ErrorAlert, QueryState } from '../components/states';
import { fmtTime } from '../lib/format';
import { Deliveries } from './Deliveries';
import { WebhookForm } from './WebhookForm';

// One webhook: its deliveries, its settings, its secret (reveal, rotate) and a test send.

function Secret({ webhook }: { webhook: Webhook }) {
  const qc = useQueryClient();
  const [shown, setShown] = useState(false);
  const [grace, setGrace] = useState<number | string>(86400);
  const rotate = useMutation({
    mutationFn: () =>
      api.post<{ data: Webhook }>(`/tenant/webhooks/${webhook.id}/rotate-secret`, {
        grace_seconds: Number(grace),
      }),
    onSuccess: () => {
      setShown(true);
      void qc.invalidateQueries({ queryKey: ['webhook', webhook.id] });
      void qc.invalidateQueries({ queryKey: ['/tenant/webhooks'] });
    },
  });
  return (
    <Stack>
      <Text size="sm">
        Receivers verify the signature with this secret (<Code>X-Service-Signature</Code> and the Standard
        Webhooks headers).
      </Text>
      <Group gap="xs" align="center">
        <Code data-testid="webhook-secret" style={{ wordBreak: 'break-all' }}>
          {shown ? webhook.secret : '••••••••••••••••••••'}
        </Code>
        <Button
          size="xs"
          variant="default"
          onClick={() => setShown((s) => !s)}
          data-testid="webhook-secret-reveal"
        >
          {shown ? 'Hide' : 'Reveal'}
        </Button>
        <CopyButton value={webhook.secret}>
          {({ copied, copy }) => (
            <Button size="xs" variant="light" onClick={copy}>
              {copied ? 'Copied' : 'Copy'}
            </Button>
          )}
        </CopyButton>
      </Group>
      {webhook.previous_secret_expires_at && (
        <Alert color="blue">
          The previous secret also signs until {fmtTime(webhook.previous_secret_expires_at)}.
        </Alert>
      )}
      <Title order={3} size="h5">
        Rotate
      </Title>
      <Group align="flex-end">
        <NumberInput
          label="Grace period (seconds)"
          description="The old secret keeps signing this long (0 – 604800)."
          min={0}
          max={604800}
          value={grace}
          onChange={setGrace}
          w={260}
        />
        <Button onClick={() => rotate.mutate()} loading={rotate.isPending} data-testid="webhook-rotate">
          Rotate secret
        </Button>
      </Group>
      {rotate.error && <ErrorAlert error={rotate.error} />}
    </Stack>
  );
}

function TestSend({ webhook }: { webhook: Webhook }) {
  const test = useMutation({
    mutationFn: () =>
      api.post<{
        data: { delivered: boolean; status_code: number | null; error: string | null; duration_ms: number };
      }>(`/tenant/webhooks/${webhook.id}/test`),
  });
  return (
    <Stack align="flex-start">
      <Text size="sm">Send one signed webhook.test event now. It is not stored and not retried.</Text>
      <Button onClick={() => test.mutate()} loading={test.isPending} data-testid="webhook-test">
        Send a test
      </Button>
      {test.error && <ErrorAlert error={test.error} />}
      {test.data && (
        <Alert
          color={test.data.data.delivered ? 'teal' : 'red'}
          title={test.data.data.delivered ? 'Delivered' : 'Not delivered'}
          data-testid="webhook-test-result"
        >
          Response {test.data.data.status_code ?? '—'} in {test.data.data.duration_ms} ms
          {test.data.data.error ? ` · ${test.data.data.error}` : ''}
        </Alert>
      )}
    </Stack>
  );
}

/** The consent categories a subscription needs, as badges; "none" when it needs none. */
export function ConsentCategories({ categories }: { categories: string[] }) {
  if (categories.length === 0)
    return (
      <Text size="sm" c="gray.7">
        none
      </Text>
    );
  return (
    <Group gap={4}>
      {categories.map((c) => (
        <Badge key={c} size="sm" variant="light" color="grape" tt="none">
          {c}
        </Badge>
      ))}
    </Group>
  );
}

export function WebhookDetail({ id, onDeleted }: { id: string; onDeleted: () => void }) {
  const qc = useQueryClient();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const q = useQuery({
    queryKey: ['webhook', id],
    queryFn: ({ signal }) =>
      api.get<{ data: Webhook }>(`/tenant/webhooks/${id}`, undefined, signal).then((r) => r.data),
  });
  const del = useMutation({
    mutationFn: () => api.delete(`/tenant/webhooks/${id}`),
    onSuccess: () => {
      setConfirmDelete(false);
      void qc.invalidateQueries({ queryKey: ['/tenant/webhooks'] });
      onDeleted();
    },
  });
  return (
    <Card withBorder data-testid="webhook-detail">
      <QueryState query={q}>
        {(w) => (
          <Stack>
            <Group justify="space-between">
              <div>
                <Title order={2} size="h4">
                  {w.url}
                </Title>
                <Text size="xs" c="gray.7">
                  {w.id}
                </Text>
                <Group gap="xs" mt={4}>
                  <Text size="xs" fw={700} c="gray.8" tt="uppercase">
                    Consent needed
                  </Text>
                  <ConsentCategories categories={w.consent_categories} />
                </Group>
              </div>
              <Button
                color="red"
                variant="subtle"
                onClick={() => setConfirmDelete(true)}
                data-testid="webhook-delete"
              >
                Delete
              </Button>
            </Group>
            <Tabs defaultValue="deliveries" keepMounted={false}>
              <Tabs.List>
                <Tabs.Tab value="deliveries" data-testid="tab-deliveries">
                  Deliveries
                </Tabs.Tab>
                <Tabs.Tab value="edit" data-testid="tab-edit">
                  Edit
                </Tabs.Tab>
                <Tabs.Tab value="secret" data-testid="tab-secret">
                  Secret
                </Tabs.Tab>
                <Tabs.Tab value="test" data-testid="tab-test">
                  Test
                </Tabs.Tab>
              </Tabs.List>
              <Tabs.Panel value="deliveries" pt="md">
                <Deliveries webhook={w} />
              </Tabs.Panel>
              <Tabs.Panel value="edit" pt="md">
                <WebhookForm key={w.updated_at} initial={w} onSaved={() => undefined} />
              </Tabs.Panel>
              <Tabs.Panel value="secret" pt="md">
                <Secret webhook={w} />
              </Tabs.Panel>
              <Tabs.Panel value="test" pt="md">
                <TestSend webhook={w} />
              </Tabs.Panel>
            </Tabs>
            <ConfirmModal
              opened={confirmDelete}
              onClose={() => setConfirmDelete(false)}
              title="Delete this webhook?"
              confirmLabel="Delete webhook"
              onConfirm={() => del.mutate()}
              busy={del.isPending}
              error={del.error}
              testid="webhook-delete-confirm"
            >
              {`The subscription to ${w.url} and its delivery log are deleted; nothing more is sent.`}
            </ConfirmModal>
          </Stack>
        )}
      </QueryState>
    </Card>
  );
}
