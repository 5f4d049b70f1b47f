import {
  Anchor,
  Autocomplete,
  Badge,
  Button,
  Code,
  Group,
  Stack,
  Table,
  Text,
  TextInput,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { Fragment, useState } from 'react';
import { Link } from 'react-router';
import { useSession } from '../api/session';
import { AUDIT_ACTIONS, type AuditEntry, type AuditPrincipal } from '../api/types';
import { Pager, usePaged } from '../components/paging';
import { Empty, JsonBlock, NeedsScope, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtTime } from '../lib/format';

/** The API's own rule for an action filter (docs/api.md, "Audit log"). */
const ACTION_SHAPE = /^[a-z][a-z_]*(\.[a-z][a-z_]*)+$/;

/** Ids are long and unbroken: they wrap anywhere rather than widen the table. */
const WRAP = { wordBreak: 'break-all' } as const;

/** Where a target can be opened in the console. */
function targetHref(target: AuditEntry['target']): string | null {
  if (!target.id) return null;
  if (target.type === 'profile') return `/profiles/${encodeURIComponent(target.id)}`;
  if (target.type === 'segment') return `/segments/${encodeURIComponent(target.id)}`;
  return null;
}

function statusColor(status: number): string {
  if (status < 300) return 'teal';
  if (status < 500) return 'orange';
  return 'red';
}

function Who({ principal, onFilter }: { principal: AuditPrincipal; onFilter: (id: string) => void }) {
  if (principal.type === 'operator') {
    return (
      <Badge variant="light" color="grape" size="sm">
        operator
      </Badge>
    );
  }
  const name = principal.key_name ?? principal.key_id ?? '—';
  return (
    <Stack gap={2} align="flex-start">
      <Text size="sm">{name}</Text>
      {principal.type === 'session' && (
        <Badge variant="light" size="xs">
          console
        </Badge>
      )}
      {principal.key_id && (
        <Anchor
          component="button"
          type="button"
          size="xs"
          ta="left"
          onClick={() => onFilter(principal.key_id!)}
          aria-label={`${principal.key_id}: show only the entries of key ${name}`}
        >
          <Code style={WRAP}>{principal.key_id}</Code>
        </Anchor>
      )}
    </Stack>
  );
}

export default function AuditLog() {
  const session = useSession();
  const [actionText, setActionText] = useState('');
  const [principalText, setPrincipalText] = useState('');
  const [actionTyped] = useDebouncedValue(actionText.trim(), 300);
  const [principalTyped] = useDebouncedValue(principalText.trim(), 400);
  const actionValid = actionTyped === '' || ACTION_SHAPE.test(actionTyped);
  const principalValid = principalTyped.length <= 200;
  const paged = usePaged<AuditEntry>(
    '/tenant/audit-log',
    {
      action: actionValid ? actionTyped : undefined,
      principal: principalValid ? principalTyped : undefined,
    },
    { enabled: session.can.admin, refetchInterval: 10_000 },
  );
  const [open, setOpen] = useState<string | null>(null);

  if (!session.can.admin)
    return (
      <NeedsScope title="Audit log">The audit log is read with a key that has the admin scope.</NeedsScope>
    );

  return (
    <Stack>
      <PageTitle>Audit log</PageTitle>
      <Text size="sm" c="gray.8">
        Every change made through the API or this console, newest first: who made it (a key, a console session
        with its key, or the operator), what it did, to what, and from where. Secrets are never recorded; a
        profile’s data leaves its entries when the profile is erased. Entries are kept 400 days unless the
        workspace’s retention says otherwise.
      </Text>
      <Group align="flex-start" gap="md">
        <Autocomplete
          label="Action"
          placeholder="any action"
          data={[...AUDIT_ACTIONS]}
          value={actionText}
          onChange={setActionText}
          error={actionValid ? undefined : 'A dotted name such as apikey.create'}
          w={240}
          data-testid="audit-filter-action"
        />
        <TextInput
          label="Principal"
          description="A key id (key_…) or a console session id (ses_…)"
          placeholder="anyone"
          value={principalText}
          onChange={(e) => setPrincipalText(e.currentTarget.value)}
          error={principalValid ? undefined : 'At most 200 characters'}
          w={300}
          data-testid="audit-filter-principal"
        />
        {(actionText || principalText) && (
          <Button
            variant="subtle"
            mt={24}
            onClick={() => {
              setActionText('');
              setPrincipalText('');
            }}
          >
            Clear filters
          </Button>
        )}
      </Group>
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No entries">Nothing matches; changes appear here as they are made.</Empty>}
      >
        {() => (
          <Table.ScrollContainer minWidth={980}>
            <Table data-testid="audit-table">
              <TableHead
                columns={[
                  'Time',
                  'Who',
                  'Action',
                  'Target',
                  'Status',
                  'Request id',
                  'Client address',
                  { label: 'Details', hidden: true },
                ]}
              />
              <Table.Tbody>
                {paged.rows.map((e) => {
                  const href = targetHref(e.target);
                  const sessionId = e.principal.type === 'session' ? e.principal.session_id : null;
                  return (
                    <Fragment key={e.id}>
                      <Table.Tr data-testid={`audit-row-${e.id}`}>
                        <Table.Td style={{ whiteSpace: 'nowrap' }}>{fmtTime(e.time)}</Table.Td>
                        <Table.Td maw={200}>
                          <Who principal={e.principal} onFilter={setPrincipalText} />
                        </Table.Td>
                        <Table.Td>
                          <Code data-testid="audit-action">{e.action}</Code>
                        </Table.Td>
                        <Table.Td maw={200}>
                          <Text size="xs" c="gray.8">
                            {e.target.type}
                          </Text>
                          {e.target.id === null ? (
                            '—'
                          ) : href ? (
                            <Anchor component={Link} to={href} size="sm">
                              <Code style={WRAP}>{e.target.id}</Code>
                            </Anchor>
                          ) : (
                            <Code style={WRAP}>{e.target.id}</Code>
                          )}
                        </Table.Td>
                        <Table.Td>
                          <Badge variant="light" color={statusColor(e.status)}>
                            {e.status}
                          </Badge>
                        </Table.Td>
                        <Table.Td maw={160}>
                          <Code style={WRAP} data-testid="audit-request-id">
                            {e.request_id}
                          </Code>
                        </Table.Td>
                        <Table.Td>{e.client_ip ?? '—'}</Table.Td>
                        <Table.Td>
                          <Button
                            size="xs"
                            variant="subtle"
                            onClick={() => setOpen(open === e.id ? null : e.id)}
                            aria-expanded={open === e.id}
                            aria-label={`Details of ${e.action} at ${fmtTime(e.time)}`}
                          >
                            Details
                          </Button>
                        </Table.Td>
                      </Table.Tr>
                      {open === e.id && (
                        <Table.Tr>
                          <Table.Td colSpan={8}>
                            <Stack gap="xs">
                              {sessionId && (
                                <Group gap="xs">
                                  <Text size="xs" c="gray.8">
                                    Console session
                                  </Text>
                                  <Anchor
                                    component="button"
                                    type="button"
                                    size="xs"
                                    onClick={() => setPrincipalText(sessionId)}
                                    aria-label={`${sessionId}: show only the entries of this console session`}
                                  >
                                    <Code>{sessionId}</Code>
                                  </Anchor>
                                </Group>
                              )}
                              <Text size="xs" c="gray.8" style={WRAP}>
                                User agent: {e.user_agent ?? '—'}
                              </Text>
                              {e.diff === null ? (
                                <Text size="sm">No change recorded (the request was refused).</Text>
                              ) : (
                                <JsonBlock value={e.diff} />
                              )}
                            </Stack>
                          </Table.Td>
                        </Table.Tr>
                      )}
                    </Fragment>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="entries" />
    </Stack>
  );
}
