import {
  Alert,
  Badge,
  Button,
  Checkbox,
  Code,
  CopyButton,
  Group,
  Modal,
  Stack,
  Table,
  TagsInput,
  Text,
  TextInput,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client';
import { useSession } from '../api/session';
import type { ApiKey, Scope } from '../api/types';
import { ConfirmModal } from '../components/confirm';
import { Pager, usePaged } from '../components/paging';
import { Empty, ErrorAlert, NeedsScope, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtTime } from '../lib/format';

const SCOPES: { value: Scope; label: string; hint: string }[] = [
  { value: 'admin', label: 'admin', hint: 'everything: keys, webhooks, settings, model fits' },
  { value: 'editor', label: 'editor', hint: 'reads, profile / segment / product writes, merges, erasure' },
  { value: 'viewer', label: 'viewer', hint: 'reads only (a read-only console)' },
  { value: 'ingest', label: 'ingest', hint: 'sending events only; may be embedded in web pages' },
];

function CreateKey({ onCreated, onClose }: { onCreated: (key: ApiKey) => void; onClose: () => void }) {
  const qc = useQueryClient();
  const form = useForm({
    initialValues: { name: '', scopes: ['viewer'] as string[], allowed_domains: [] as string[] },
    validate: {
      name: (v) =>
        v.trim().length === 0 ? 'Give the key a name' : v.length > 200 ? 'At most 200 characters' : null,
      scopes: (v) => (v.length === 0 ? 'Choose at least one scope' : null),
      allowed_domains: (v) => (v.length > 50 ? 'At most 50 domains' : null),
    },
  });
  const create = useMutation({
    mutationFn: (v: typeof form.values) =>
      api.post<{ data: ApiKey }>('/tenant/apikeys', {
        name: v.name.trim(),
        scopes: v.scopes,
        ...(v.allowed_domains.length ? { allowed_domains: v.allowed_domains } : {}),
      }),
    onSuccess: (res) => {
      void qc.invalidateQueries({ queryKey: ['/tenant/apikeys'] });
      onCreated(res.data);
    },
  });
  return (
    <form onSubmit={form.onSubmit((v) => create.mutate(v))}>
      <Stack>
        <TextInput label="Name" required {...form.getInputProps('name')} data-testid="key-name" />
        <Checkbox.Group label="Scopes" withAsterisk {...form.getInputProps('scopes')}>
          <Stack gap={6} mt={6}>
            {SCOPES.map((s) => (
              <Checkbox
                key={s.value}
                value={s.value}
                label={
                  <>
                    <b>{s.label}</b> — {s.hint}
                  </>
                }
                data-testid={`key-scope-${s.value}`}
              />
            ))}
          </Stack>
        </Checkbox.Group>
        <TagsInput
          label="Allowed domains"
          description="Optional. Host names or *.example.com wildcards; the key is then accepted only from pages on them. Press Enter after each."
          {...form.getInputProps('allowed_domains')}
          data-testid="key-domains"
        />
        {create.error && <ErrorAlert error={create.error} />}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" loading={create.isPending} data-testid="key-create-submit">
            Create key
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** The secret of a new key, shown exactly once: closing the dialog forgets it. */
function SecretOnce({ apiKey, onDone }: { apiKey: ApiKey; onDone: () => void }) {
  return (
    <Stack>
      <Alert color="yellow" title="Copy the secret now">
        This is the only time the key's secret is shown. Store it somewhere safe: it cannot be shown again.
      </Alert>
      <Code block data-testid="key-secret" style={{ wordBreak: 'break-all', whiteSpace: 'pre-wrap' }}>
        {apiKey.api_key}
      </Code>
      <Group justify="space-between">
        <CopyButton value={apiKey.api_key ?? ''}>
          {({ copied, copy }) => (
            <Button variant="light" color={copied ? 'teal' : 'indigo'} onClick={copy} data-testid="key-copy">
              {copied ? 'Copied' : 'Copy to clipboard'}
            </Button>
          )}
        </CopyButton>
        <Button onClick={onDone} data-testid="key-secret-done">
          I have stored it
        </Button>
      </Group>
    </Stack>
  );
}

export default function ApiKeys() {
  const session = useSession();
  const qc = useQueryClient();
  const paged = usePaged<ApiKey>('/tenant/apikeys');
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<ApiKey | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const revoke = useMutation({
    mutationFn: (id: string) => api.delete(`/tenant/apikeys/${encodeURIComponent(id)}`),
    onSuccess: () => {
      setRevoking(null);
      void qc.invalidateQueries({ queryKey: ['/tenant/apikeys'] });
    },
  });

  if (!session.can.admin)
    return <NeedsScope title="API keys">Managing API keys needs a key with the admin scope.</NeedsScope>;

  return (
    <Stack>
      <PageTitle
        actions={
          <Button onClick={() => setCreating(true)} data-testid="key-create">
            Create key
          </Button>
        }
      >
        API keys
      </PageTitle>
      <Text size="sm" c="gray.8">
        Keys authenticate servers (<Code>cdp_sk_…</Code>) and web pages (<Code>cdp_pk_…</Code>, ingest only).
        A workspace holds at most 100 active keys. Revoking a key ends its console sessions too.
      </Text>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No API keys">Create one to send events or to use the API.</Empty>}
      >
        {() => (
          <Table.ScrollContainer minWidth={700}>
            <Table striped highlightOnHover data-testid="keys-table">
              <TableHead
                columns={[
                  'Name',
                  'Id',
                  'Scopes',
                  'Allowed domains',
                  'Created',
                  { label: 'Actions', hidden: true },
                ]}
              />
              <Table.Tbody>
                {paged.rows.map((k) => (
                  <Table.Tr key={k.id} data-testid={`key-row-${k.id}`}>
                    <Table.Td>
                      {k.name}
                      {k.id === session.key_id && (
                        <Badge ml="xs" size="xs" variant="light">
                          this session
                        </Badge>
                      )}
                    </Table.Td>
                    <Table.Td>
                      <Code>{k.id}</Code>
                    </Table.Td>
                    <Table.Td>
                      <Group gap={4}>
                        {k.scopes.map((s) => (
                          <Badge key={s} variant="outline" size="sm">
                            {s}
                          </Badge>
                        ))}
                      </Group>
                    </Table.Td>
                    <Table.Td>{k.allowed_domains.length ? k.allowed_domains.join(', ') : 'any'}</Table.Td>
                    <Table.Td>{fmtTime(k.created_at)}</Table.Td>
                    <Table.Td>
                      <Button
                        size="xs"
                        color="red"
                        variant="light"
                        onClick={() => setRevoking(k)}
                        data-testid={`key-revoke-${k.id}`}
                        aria-label={`Revoke key ${k.name}`}
                      >
                        Revoke
                      </Button>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="keys" />

      <Modal opened={creating} onClose={() => setCreating(false)} title="Create an API key" size="lg">
        <CreateKey
          onClose={() => setCreating(false)}
          onCreated={(k) => {
            setCreating(false);
            setCreated(k);
          }}
        />
      </Modal>
      <Modal
        opened={created !== null}
        onClose={() => setCreated(null)}
        title={`Key ${created?.name ?? ''} created`}
        size="lg"
        closeOnClickOutside={false}
      >
        {created && <SecretOnce apiKey={created} onDone={() => setCreated(null)} />}
      </Modal>
      <ConfirmModal
        opened={revoking !== null}
        onClose={() => {
          setRevoking(null);
          revoke.reset();
        }}
        title="Revoke this key?"
        confirmLabel="Revoke key"
        onConfirm={() => revoking && revoke.mutate(revoking.id)}
        busy={revoke.isPending}
        error={revoke.error}
        testid="key-revoke-confirm"
      >
        {`Key ${revoking?.name ?? ''} (${revoking?.id ?? ''}) stops working at once, on every instance, and its console sessions end.${revoking?.id === session.key_id ? ' It is the key of this session: you will be signed out.' : ''}`}
      </ConfirmModal>
    </Stack>
  );
}
