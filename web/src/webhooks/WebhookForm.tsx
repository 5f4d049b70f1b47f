import {
  Button,
  Checkbox,
  Group,
  MultiSelect,
  PasswordInput,
  Stack,
  Switch,
  TagsInput,
  TextInput,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import { WEBHOOK_EVENTS, type Webhook } from '../api/types';
import { ErrorAlert } from '../components/states';
import { useSegmentOptions } from '../segments/options';

// Creating and editing a webhook: its destination, events, segment filter, consent categories,
// secret and state.

/** The API's limits on `consent_categories` (docs/webhooks.md, "Consent"). */
const MAX_CONSENT_CATEGORIES = 20;
const MAX_CATEGORY_LENGTH = 100;

interface FormValues {
  url: string;
  events: string[];
  segments: string[];
  consent_categories: string[];
  secret: string;
  enabled: boolean;
}

export function WebhookForm({
  initial,
  onSaved,
  onCancel,
}: {
  initial?: Webhook;
  onSaved: (w: Webhook) => void;
  onCancel?: () => void;
}) {
  const qc = useQueryClient();
  const segmentOptions = useSegmentOptions();
  const form = useForm<FormValues>({
    initialValues: {
      url: initial?.url ?? '',
      events: initial?.events ?? ['profile.created'],
      segments: initial?.segments ?? [],
      consent_categories: initial?.consent_categories ?? [],
      secret: '',
      enabled: initial?.enabled ?? true,
    },
    validate: {
      url: (v) => {
        if (!v.trim()) return 'A destination URL is required';
        if (v.length > 2048) return 'At most 2048 characters';
        try {
          const u = new URL(v);
          return u.protocol === 'https:' || u.protocol === 'http:' ? null : 'Use an https:// URL';
        } catch {
          return 'Not a URL';
        }
      },
      events: (v) => (v.length === 0 ? 'Choose at least one kind of event' : null),
      secret: (v) => (v && (v.length < 16 || v.length > 200) ? 'A secret has 16–200 characters' : null),
      segments: (v) => (v.length > 100 ? 'At most 100 segments' : null),
      consent_categories: (v) =>
        v.length > MAX_CONSENT_CATEGORIES
          ? `At most ${MAX_CONSENT_CATEGORIES} categories`
          : v.some((c) => c.length > MAX_CATEGORY_LENGTH)
            ? `Each category has 1–${MAX_CATEGORY_LENGTH} characters`
            : null,
    },
  });
  const save = useMutation({
    mutationFn: async (v: FormValues) => {
      const body: Record<string, unknown> = {
        url: v.url.trim(),
        events: v.events,
        segments: v.segments,
        // Always sent: an emptied list clears the requirement (`[]` on PATCH).
        consent_categories: v.consent_categories,
      };
      if (v.secret) body.secret = v.secret;
      if (initial) {
        body.enabled = v.enabled;
        return (await api.patch<{ data: Webhook }>(`/tenant/webhooks/${initial.id}`, body)).data;
      }
      return (await api.post<{ data: Webhook }>('/tenant/webhooks', body)).data;
    },
    onSuccess: (w) => {
      void qc.invalidateQueries({ queryKey: ['/tenant/webhooks'] });
      void qc.invalidateQueries({ queryKey: ['webhook', w.id] });
      onSaved(w);
    },
  });
  const segmentEvents = form.values.events.some((e) => e.startsWith('segment.'));
  return (
    <form onSubmit={form.onSubmit((v) => save.mutate(v))}>
      <Stack>
        <TextInput
          label="Destination URL"
          placeholder="https://example.com/hooks/cdp"
          required
          {...form.getInputProps('url')}
          data-testid="webhook-url"
        />
        <Checkbox.Group label="Events to send" withAsterisk {...form.getInputProps('events')}>
          <Group gap="md" mt={6}>
            {WEBHOOK_EVENTS.map((e) => (
              <Checkbox key={e} value={e} label={e} data-testid={`webhook-event-${e}`} />
            ))}
          </Group>
        </Checkbox.Group>
        <MultiSelect
          label="Segment filter"
          description={
            segmentEvents
              ? 'Only send segment.entered / segment.exited for these segments (empty: every segment).'
              : 'Applies to segment.entered / segment.exited only.'
          }
          data={segmentOptions}
          searchable
          clearable
          {...form.getInputProps('segments')}
          data-testid="webhook-segments"
        />
        <TagsInput
          label="Consent categories"
          description="Facts about a profile are sent only while it has granted every one of these (empty: no consent needed). Press Enter or type a comma after each; at most 20."
          placeholder="analytics, marketing"
          splitChars={[',']}
          maxTags={MAX_CONSENT_CATEGORIES}
          clearable
          {...form.getInputProps('consent_categories')}
          onChange={(v) =>
            form.setFieldValue('consent_categories', [...new Set(v.map((c) => c.trim()).filter(Boolean))])
          }
          data-testid="webhook-consent"
        />
        <PasswordInput
          label={initial ? 'Replace the secret' : 'Signing secret'}
          description={
            initial
              ? 'Optional. Replaces the secret at once (no grace period); use rotation on the Secret tab to keep the old one valid for a while.'
              : 'Optional: 16–200 characters. Left empty, a secret (whsec_…) is generated.'
          }
          autoComplete="new-password"
          {...form.getInputProps('secret')}
        />
        {initial && (
          <Switch
            label="Enabled"
            description={initial.disabled_reason ? `Disabled: ${initial.disabled_reason}` : undefined}
            {...form.getInputProps('enabled', { type: 'checkbox' })}
          />
        )}
        {save.error && <ErrorAlert error={save.error} />}
        <Group justify="flex-end">
          {onCancel && (
            <Button variant="default" onClick={onCancel}>
              Cancel
            </Button>
          )}
          <Button type="submit" loading={save.isPending} data-testid="webhook-save">
            {initial ? 'Save changes' : 'Create webhook'}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
