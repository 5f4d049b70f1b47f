import {
  Badge,
  Button,
  Card,
  Code,
  Group,
  SegmentedControl,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client';
import { useSession } from '../api/session';
import type { ConsentAnswer, ConsentChoice, Profile, Settings } from '../api/types';
import { ErrorAlert } from '../components/states';
import { TableHead } from '../components/table';
import { fmtTime } from '../lib/format';

// The profile's consent (docs/profiles.md, "Consent"): each category's choice, when and by whom;
// an editor grants, denies or adds a category through PUT /tenant/profiles/{id}/consent.

/** The API's limit on a category's name (docs/profiles.md, "Consent"). */
const MAX_CATEGORY_LENGTH = 100;

function Source({ choice }: { choice: ConsentChoice }) {
  const label = choice.source_type === 'event' ? 'event' : 'API key';
  return (
    <>
      {label} {choice.source_id ? <Code>{choice.source_id}</Code> : '—'}
    </>
  );
}

/**
 * The workspace's `consent_default`, for the sentence about categories with no choice. Only an
 * admin may read the settings; every other key is told "the workspace default" instead.
 */
function useConsentDefault(): string | null {
  const session = useSession();
  const q = useQuery({
    // The settings page's key: one cached copy of the settings for both.
    queryKey: ['settings'],
    queryFn: ({ signal }) =>
      api.get<{ data: Settings }>('/tenant/settings', undefined, signal).then((r) => r.data),
    enabled: session.can.admin,
  });
  return q.data?.consent_default ?? null;
}

export function ConsentCard({ profile }: { profile: Profile }) {
  const session = useSession();
  const qc = useQueryClient();
  const fallback = useConsentDefault();
  const [name, setName] = useState('');
  const [granted, setGranted] = useState<'granted' | 'denied'>('granted');
  const [nameError, setNameError] = useState<string | null>(null);
  const categories = Object.entries(profile.consent?.categories ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const theDefault = fallback ? `the workspace default (${fallback})` : 'the workspace default';

  const put = useMutation({
    mutationFn: (choices: Record<string, boolean>) =>
      api
        .put<{ data: ConsentAnswer }>(`/tenant/profiles/${encodeURIComponent(profile.id)}/consent`, {
          categories: choices,
        })
        .then((r) => r.data),
    onSuccess: (answer) => {
      // The answer holds every category now recorded: the page shows it at once, then rereads
      // the profile (under any id that resolves to it) and its lineage, where each change is a row.
      qc.setQueriesData<Profile>({ queryKey: ['profile'] }, (p) =>
        p && p.id === answer.profile_id ? { ...p, consent: { categories: answer.categories } } : p,
      );
      void qc.invalidateQueries({ queryKey: ['profile'] });
      void qc.invalidateQueries({ queryKey: [`/tenant/profiles/${profile.id}/lineage`] });
    },
  });
  const busy = put.isPending ? put.variables : undefined;

  const add = () => {
    const category = name.trim();
    if (!category) return setNameError('Name the category');
    if (category.length > MAX_CATEGORY_LENGTH) return setNameError('At most 100 characters');
    setNameError(null);
    put.mutate(
      { [category]: granted === 'granted' },
      {
        onSuccess: () => {
          setName('');
          setGranted('granted');
        },
      },
    );
  };

  return (
    <Card withBorder data-testid="profile-consent">
      <Title order={2} size="h5" mb="xs">
        Consent
      </Title>
      {categories.length === 0 ? (
        <Text size="sm" data-testid="consent-empty">
          No consent recorded: the workspace default applies{fallback ? ` (${fallback})` : ''}.
        </Text>
      ) : (
        <>
          <Table.ScrollContainer minWidth={560}>
            <Table data-testid="consent-table">
              <TableHead
                columns={[
                  'Category',
                  'Choice',
                  'When',
                  'Source',
                  ...(session.can.write ? [{ label: 'Change', hidden: true }] : []),
                ]}
              />
              <Table.Tbody>
                {categories.map(([category, choice]) => (
                  <Table.Tr key={category} data-testid={`consent-row-${category}`}>
                    <Table.Td style={{ wordBreak: 'break-word' }}>{category}</Table.Td>
                    <Table.Td>
                      <Badge
                        color={choice.granted ? 'teal' : 'red'}
                        variant="light"
                        data-testid="consent-state"
                      >
                        {choice.granted ? 'Granted' : 'Denied'}
                      </Badge>
                    </Table.Td>
                    <Table.Td>{fmtTime(choice.updated_at)}</Table.Td>
                    <Table.Td>
                      <Source choice={choice} />
                    </Table.Td>
                    {session.can.write && (
                      <Table.Td>
                        <Button
                          size="xs"
                          variant="light"
                          color={choice.granted ? 'red' : 'teal'}
                          loading={busy !== undefined && category in busy}
                          disabled={put.isPending}
                          onClick={() => put.mutate({ [category]: !choice.granted })}
                          aria-label={`${choice.granted ? 'Deny' : 'Grant'} ${category}`}
                          data-testid="consent-toggle"
                        >
                          {choice.granted ? 'Deny' : 'Grant'}
                        </Button>
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <Text size="xs" c="gray.7" mt={4}>
            A category not listed counts as {theDefault}.
          </Text>
        </>
      )}
      {session.can.write && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            add();
          }}
        >
          <Group align="flex-end" mt="sm" gap="xs" wrap="wrap">
            <TextInput
              label="Record a category"
              placeholder="analytics"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              error={nameError}
              maxLength={MAX_CATEGORY_LENGTH}
              data-testid="consent-new-category"
            />
            <Stack gap={4}>
              <Text size="sm" fw={500} id="consent-new-choice">
                Choice
              </Text>
              <SegmentedControl
                aria-labelledby="consent-new-choice"
                value={granted}
                onChange={(v) => setGranted(v as 'granted' | 'denied')}
                data={[
                  { value: 'granted', label: 'Granted' },
                  { value: 'denied', label: 'Denied' },
                ]}
                data-testid="consent-new-choice"
              />
            </Stack>
            <Button
              type="submit"
              variant="light"
              loading={busy !== undefined && name.trim() in busy}
              disabled={put.isPending}
              data-testid="consent-add"
            >
              Record
            </Button>
          </Group>
        </form>
      )}
      {put.error && <ErrorAlert error={put.error} title="Consent not recorded" />}
    </Card>
  );
}
